// Package upload turns a bundle on disk into the object a deploy or plan run starts from:
// it validates the config, zips the bundle, records where it came from (provenance), and
// uploads it (to bucket.DeploymentKey for a deploy, bucket.PlanUploadKey for a plan); and it
// writes the approval of a plan (bucket.ApprovalKey), which starts the plan's apply run.
package upload

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/provenance"
)

// Bundle is a bundle ready to upload.
type Bundle struct {
	Path string
	Zip  []byte
	// SHA256 is the hex sha256 of Zip: what the deployer records of the upload, and how
	// `cairn apply` finds the plan made for the same content.
	SHA256 string
	// Source is where the bundle came from, and Metadata carries it on the upload.
	Source   provenance.Source
	Metadata map[string]string
}

// Options are what Prepare reads besides the bundle.
type Options struct {
	// VarFile is --var-file ("" for none): its values override the config's variables,
	// and it travels in the zip as bundle.VarsName, so the run is reproducible from the
	// bundle alone.
	VarFile string
	// Source says where the bundle comes from: the --pr flag and the environment.
	Source provenance.Options
	// Bucket is cairn's bucket when known without asking AWS (--bucket, $CAIRN_BUCKET):
	// the S3 locations of the templates are then checked against it before the upload,
	// as the deployer checks them (config.LoadOptions.Bucket).
	Bucket string
}

// Prepare loads and validates the bundle at path (a directory, a .zip or a single YAML
// file) as deployment would, zips it, and says where it came from. A config that does not
// validate returns the config package's error (config.Errors lists each problem with its
// location).
func Prepare(path, deployment string, o Options) (*Bundle, error) {
	path = bundle.Location(path)
	varFile := o.VarFile
	b, err := bundle.Open(path)
	if err != nil {
		return nil, err
	}
	opts := config.LoadOptions{Deployment: deployment, Bucket: o.Bucket}
	if varFile != "" {
		if opts.Vars, err = os.ReadFile(varFile); err != nil {
			return nil, fmt.Errorf("--var-file: %w", err)
		}
		opts.VarsFile = varFile
	}
	if _, err := opts.Load(b); err != nil {
		return nil, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var data []byte
	switch {
	case info.IsDir():
		data, err = bundle.Zip(path)
	case strings.EqualFold(filepath.Ext(path), ".zip"):
		data, err = os.ReadFile(path)
	default:
		data, err = singleFile(b.Config)
	}
	if err == nil && opts.Vars != nil {
		data, err = bundle.WithFile(data, bundle.VarsName, opts.Vars)
	}
	if err != nil {
		return nil, fmt.Errorf("zip %s: %w", path, err)
	}
	source := provenance.Detect(path, o.Source)
	sum := sha256.Sum256(data)
	return &Bundle{Path: path, Zip: data, SHA256: hex.EncodeToString(sum[:]), Source: source, Metadata: source.Metadata()}, nil
}

// singleFile zips a single YAML file as the cairn.yaml of a zip.
func singleFile(cfg []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: bundle.ConfigName, Method: zip.Deflate, Modified: time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err == nil {
		_, err = w.Write(cfg)
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// PutAPI is the part of the S3 client an upload needs.
type PutAPI interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// Put uploads a zip to key with its metadata and returns the new object version ("" when
// the bucket keeps no versions).
func Put(ctx context.Context, c PutAPI, bucket, key string, data []byte, meta map[string]string) (string, error) {
	out, err := c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data),
		ContentType: aws.String("application/zip"), Metadata: meta,
	})
	if err != nil {
		return "", fmt.Errorf("upload s3://%s/%s: %w", bucket, key, err)
	}
	return aws.ToString(out.VersionId), nil
}
