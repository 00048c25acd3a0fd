package deployer

// A newer upload of the same deployment supersedes an older one: the older run deploys
// nothing more (rundoc.Superseded decides; these read the versions and record it).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
)

// latestVersion returns the newest version id of key in bucket name, or "" when the
// bucket keeps no versions.
func (s starter) latestVersion(ctx context.Context, name, key string) (string, error) {
	out, err := s.s3.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(name), Prefix: aws.String(key), MaxKeys: aws.Int32(20)})
	if err != nil {
		return "", fmt.Errorf("list versions of s3://%s/%s: %w", name, key, err)
	}
	for _, v := range out.Versions {
		if aws.ToString(v.Key) == key && aws.ToBool(v.IsLatest) {
			return aws.ToString(v.VersionId), nil
		}
	}
	return "", nil
}

// superseded reports whether a newer upload than u exists (rundoc.Superseded).
func (s starter) superseded(ctx context.Context, u Upload) (bool, error) {
	b := rundoc.Bundle{Bucket: u.Bucket, Key: u.Key, VersionID: u.VersionID}
	if !rundoc.Versioned(b) {
		return false, nil
	}
	latest, err := s.latestVersion(ctx, u.Bucket, u.Key)
	if err != nil {
		return false, err
	}
	return rundoc.Superseded(b, latest), nil
}

// supersede records a run that deploys nothing because a newer upload exists.
func (s starter) supersede(ctx context.Context, doc *rundoc.Document, log *slog.Logger) error {
	doc.Run = run.Supersede(doc.Run, fmt.Sprintf("version %s of s3://%s/%s is no longer the newest: the newer upload is deployed instead", doc.Bundle.VersionID, doc.Bundle.Bucket, doc.Bundle.Key), s.clk.Now().UTC())
	log.Info("deploy: upload superseded by a newer version; nothing deployed")
	s.runs.report(ctx, doc, log)
	if _, err := s.runs.save(ctx, doc, ""); err != nil && !errors.Is(err, errRaceLost) {
		return err
	}
	return nil
}
