package rundoc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/provenance"
)

// DestroyMetadata is the S3 object metadata key that makes a plans/NAME.zip upload plan
// the deletion of every stack of the graph (set by cairn destroy).
const DestroyMetadata = "cairn-destroy"

// Bundle identifies the upload a run deploys: the same fact a plan records of its upload.
type Bundle = plan.BundleVersion

// Loaded is a downloaded upload and the config it holds.
type Loaded struct {
	// Bundle is the upload, with its sha256 and git metadata as downloaded.
	Bundle Bundle
	// Config is nil when the bundle cannot be read or loaded; Errors say why, all of them.
	Config *config.Config
	Errors []string
	// Missing: the object, or the version asked for, does not exist.
	Missing bool
	// Destroy: the upload asks for a plan deleting every stack (DestroyMetadata).
	Destroy bool
}

// Download fetches exactly the version of the upload b names (the newest when b has no
// version) and loads its config with opts (the deployment's name, the namespaces allowed).
// A bundle that cannot be read or loaded gives Errors, not an error: a run of it fails and
// changes nothing. An error means S3 itself failed, and the caller tries again.
func Download(ctx context.Context, api objects.Getter, b Bundle, opts config.LoadOptions) (*Loaded, error) {
	version := b.VersionID
	if version == "null" {
		version = ""
	}
	o, err := objects.Get(ctx, api, b.Bucket, b.Key, version, bundle.MaxZipSize)
	if errors.Is(err, objects.ErrNotFound) {
		return &Loaded{Bundle: b, Missing: true, Errors: []string{fmt.Sprintf("bundle s3://%s/%s version %s does not exist (deleted?): push it again", b.Bucket, b.Key, b.VersionID)}}, nil
	}
	return load(b, o, err, opts)
}

// load loads the downloaded object o of upload b (err: why it could not be read).
func load(b Bundle, o *objects.Object, err error, opts config.LoadOptions) (*Loaded, error) {
	var big *objects.TooLargeError
	switch {
	case errors.As(err, &big):
		return &Loaded{Bundle: b, Errors: []string{fmt.Sprintf("bundle s3://%s/%s is larger than %d bytes", b.Bucket, b.Key, bundle.MaxZipSize)}}, nil
	case err != nil:
		return nil, fmt.Errorf("download bundle: %w", err)
	}
	b.Source = provenance.FromMetadata(o.Metadata)
	b.GitRef, b.GitRemote = b.Source.Commit, b.Source.Remote
	b.SHA256 = Sum(o.Body)
	lb := &Loaded{Bundle: b, Destroy: o.Metadata[DestroyMetadata] == "true"}
	bb, err := bundle.FromZip(o.Body)
	if err != nil {
		lb.Errors = []string{fmt.Sprintf("bundle s3://%s/%s version %s: %v", b.Bucket, b.Key, b.VersionID, err)}
		return lb, nil
	}
	cfg, err := opts.Load(bb)
	var ce config.Errors
	switch {
	case errors.As(err, &ce):
		for _, e := range ce {
			lb.Errors = append(lb.Errors, e.Error())
		}
	case err != nil:
		lb.Errors = []string{err.Error()}
	default:
		lb.Config = cfg
	}
	return lb, nil
}

// Sum is the hex sha256 of an upload's bytes, as a run records its bundle.
func Sum(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// FindApplied reads deployment name's bundle at version from whichever of its uploads
// holds it (bucket.AppliedKeys: its push's, its plan upload, applied by an approval, or
// cairn apply's). Without a version (an unversioned bucket) an upload counts only when it
// is the one applied (its sha256). It returns the object and its key, or nil and "" when
// none holds it.
func FindApplied(ctx context.Context, api objects.Getter, bucketName, name, version, sha string) (*objects.Object, string, error) {
	for _, key := range bucket.AppliedKeys(name) {
		o, err := objects.Get(ctx, api, bucketName, key, version, bundle.MaxZipSize)
		switch {
		case errors.Is(err, objects.ErrNotFound):
		case err != nil && version != "" && awserr.HTTPStatus(err) == 400:
			// S3 refuses a version id of another key.
		case err != nil:
			return nil, key, err
		case version == "" && sha != "" && Sum(o.Body) != sha:
		default:
			return o, key, nil
		}
	}
	return nil, "", nil
}

// DownloadApplied is FindApplied's bundle, loaded (Download). It returns nil, and the
// key, when no upload holds it.
func DownloadApplied(ctx context.Context, api objects.Getter, bucketName, name, version, sha string) (*Loaded, string, error) {
	o, key, err := FindApplied(ctx, api, bucketName, name, version, sha)
	if o == nil && err == nil {
		return nil, "", nil
	}
	var big *objects.TooLargeError
	if err != nil && !errors.As(err, &big) {
		return nil, key, err
	}
	lb, err := load(Bundle{Bucket: bucketName, Key: key, VersionID: version}, o, err, config.LoadOptions{Deployment: name})
	return lb, key, err
}

// Superseded reports whether upload b is no longer the newest version of its key, latest
// being the newest version id ("" when the bucket keeps none, or lists none): a newer
// upload is deployed instead. An upload without a version is never superseded.
func Superseded(b Bundle, latest string) bool {
	return Versioned(b) && latest != "" && latest != b.VersionID
}

// Versioned reports whether upload b names an object version (S3 gives none, or "null",
// in a bucket that keeps no versions).
func Versioned(b Bundle) bool { return b.VersionID != "" && b.VersionID != "null" }
