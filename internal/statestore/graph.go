package statestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/cairn-dev/cairn/internal/state"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/objects"
)

// Read returns the persistent graph guarded by l, only after confirming that l is still
// held, and remembers its ETag for Write. A missing object gives (nil, ErrNotFound); Write
// then creates it.
func (s *Store) Read(ctx context.Context, l *Lock) (*state.Graph, error) {
	if err := usable(l); err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	if err := s.Check(ctx, l); err != nil {
		return nil, fmt.Errorf("read state %s/%s: %w", l.Namespace, l.Key, err)
	}
	g, etag, err := s.get(ctx, l.Namespace, l.Key, "")
	if errors.Is(err, ErrNotFound) {
		l.stateRead, l.stateETag, l.stateGen = true, "", s.lastGeneration(ctx, l.Namespace, l.Key)
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	l.stateRead, l.stateETag, l.stateGen = true, etag, g.Generation
	// Rebuilt marks the generation that was written from a rebuild (history shows it); the
	// graph read now was found, not rebuilt, and writing it back must not mark the next
	// generation too, or every later run would report a rebuild that never happened.
	g.Rebuilt = false
	return g, nil
}

// lastGeneration returns the generation of the newest earlier version of a state object
// that is now missing (deleted, with versioning on), so generations keep growing across a
// loss and a rebuild; 0 when there is none or it cannot be read.
func (s *Store) lastGeneration(ctx context.Context, namespace, key string) int64 {
	versions, err := s.History(ctx, namespace, key)
	if err != nil {
		s.logger().Warn("state: cannot list earlier versions of a missing state object; generations restart at 1",
			"namespace", namespace, "key", key, "err", err)
		return 0
	}
	for _, v := range versions {
		if v.DeleteMarker {
			continue
		}
		g, err := s.Show(ctx, namespace, key, v.VersionID)
		if err != nil {
			s.logger().Warn("state: cannot read the last version of a missing state object; generations restart at 1",
				"namespace", namespace, "key", key, "version", v.VersionID, "err", err)
			return 0
		}
		return g.Generation
	}
	return 0
}

// Write stores g as the next generation of the graph guarded by l. It validates g, checks
// that l is still ours and within its lease (fencing: a writer whose lease was taken over
// gets ErrLockLost and writes nothing), then writes with If-Match on the ETag Read saw (or
// If-None-Match: * when the object was missing). A lost race gives *ConflictError and
// overwrites nothing. On success it sets g's SchemaVersion, Namespace, Key, Generation
// (the read generation + 1), LockToken, RunID and UpdatedAt.
func (s *Store) Write(ctx context.Context, l *Lock, g *state.Graph) error {
	if l == nil {
		return fmt.Errorf("write state: no lock given: %w", ErrLockLost)
	}
	if !l.stateRead {
		return fmt.Errorf("write state %s/%s: the graph was not read under this lock: call Read first, so the write is conditional on what was read", l.Namespace, l.Key)
	}
	if g == nil {
		return fmt.Errorf("write state %s/%s: no graph given", l.Namespace, l.Key)
	}
	if (g.Namespace != "" && g.Namespace != l.Namespace) || (g.Key != "" && g.Key != l.Key) {
		return fmt.Errorf("write state %s/%s: graph is for %s/%s: refusing to write it under another key", l.Namespace, l.Key, g.Namespace, g.Key)
	}
	doc := *g
	doc.Stacks = make(map[string]*state.Stack, len(g.Stacks))
	for n, st := range g.Stacks {
		if st != nil {
			c := *st
			c.Requires = append([]string(nil), st.Requires...)
			st = &c
		}
		doc.Stacks[n] = st
	}
	doc.SchemaVersion, doc.Namespace, doc.Key = state.SchemaVersion, l.Namespace, l.Key
	doc.Generation = l.stateGen + 1
	doc.LockToken, doc.RunID = l.Token, l.RunID
	doc.UpdatedAt = s.clock().Now().UTC()
	doc.Normalize()
	if err := doc.Validate(); err != nil {
		return fmt.Errorf("write state %s/%s: refusing an invalid graph, nothing written: %w", l.Namespace, l.Key, err)
	}
	body, err := json.MarshalIndent(&doc, "", "  ")
	if err != nil {
		return fmt.Errorf("write state %s/%s: encode: %w", l.Namespace, l.Key, err)
	}
	if err := s.Check(ctx, l); err != nil {
		return fmt.Errorf("write state %s/%s generation %d: %w", l.Namespace, l.Key, doc.Generation, err)
	}
	etag, err := objects.Put(ctx, s.S3, s.Bucket, bucket.StateKey(l.Namespace, l.Key), body, objects.Write{
		Create: l.stateETag == "", IfMatch: l.stateETag, ContentType: "application/json",
		Metadata: map[string]string{"cairn-generation": fmt.Sprint(doc.Generation), "cairn-run": l.RunID},
	})
	if errors.Is(err, objects.ErrConflict) {
		return &ConflictError{Namespace: l.Namespace, Key: l.Key, ReadGeneration: l.stateGen, Err: err}
	}
	if err != nil {
		return fmt.Errorf("state %s/%s generation %d: %w", l.Namespace, l.Key, doc.Generation, err)
	}
	l.stateETag, l.stateGen = etag, doc.Generation
	*g = doc
	return nil
}

// Show returns the graph of namespace/key without locking, as it is now or, with
// versionID, as it was at that version. It is for people and reports, never for acting.
func (s *Store) Show(ctx context.Context, namespace, key, versionID string) (*state.Graph, error) {
	if err := checkNames(namespace, key); err != nil {
		return nil, err
	}
	g, _, err := s.get(ctx, namespace, key, versionID)
	return g, err
}

func (s *Store) get(ctx context.Context, namespace, key, versionID string) (*state.Graph, string, error) {
	what := bucket.URI(s.Bucket, bucket.StateKey(namespace, key))
	if versionID != "" {
		what += " version " + versionID
	}
	o, err := objects.Get(ctx, s.S3, s.Bucket, bucket.StateKey(namespace, key), versionID, 0)
	if errors.Is(err, objects.ErrNotFound) {
		return nil, "", fmt.Errorf("state %s/%s: no object %s: %w", namespace, key, what, ErrNotFound)
	}
	if err != nil {
		return nil, "", fmt.Errorf("state %s/%s: %w", namespace, key, err)
	}
	g, err := state.Decode(o.Body)
	if err != nil {
		return nil, "", fmt.Errorf("state %s/%s: %s: %w", namespace, key, what, err)
	}
	if g.Namespace != namespace || g.Key != key {
		return nil, "", fmt.Errorf("state %s/%s: %s holds the graph of %s/%s: restore the right version (cairn state history %s %s)", namespace, key, what, g.Namespace, g.Key, namespace, key)
	}
	return g, o.ETag, nil
}

// History lists the versions of the state object of namespace/key, newest first. Without
// bucket versioning there is at most one (with version id "null").
func (s *Store) History(ctx context.Context, namespace, key string) ([]state.Version, error) {
	if err := checkNames(namespace, key); err != nil {
		return nil, err
	}
	stateKey := bucket.StateKey(namespace, key)
	in := &s3.ListObjectVersionsInput{Bucket: &s.Bucket, Prefix: &stateKey}
	var versions []state.Version
	for {
		out, err := s.S3.ListObjectVersions(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("state %s/%s: list versions of s3://%s/%s: %w", namespace, key, s.Bucket, stateKey, err)
		}
		for _, v := range out.Versions {
			if aws.ToString(v.Key) != stateKey {
				continue
			}
			versions = append(versions, state.Version{
				VersionID: aws.ToString(v.VersionId), LastModified: aws.ToTime(v.LastModified),
				Size: aws.ToInt64(v.Size), ETag: aws.ToString(v.ETag), IsLatest: aws.ToBool(v.IsLatest),
			})
		}
		for _, m := range out.DeleteMarkers {
			if aws.ToString(m.Key) != stateKey {
				continue
			}
			versions = append(versions, state.Version{
				VersionID: aws.ToString(m.VersionId), LastModified: aws.ToTime(m.LastModified),
				IsLatest: aws.ToBool(m.IsLatest), DeleteMarker: true,
			})
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.KeyMarker, in.VersionIdMarker = out.NextKeyMarker, out.NextVersionIdMarker
	}
	// S3 lists a key's versions newest first, but versions and delete markers apart.
	sort.SliceStable(versions, func(i, j int) bool {
		if versions[i].IsLatest != versions[j].IsLatest {
			return versions[i].IsLatest
		}
		return versions[i].LastModified.After(versions[j].LastModified)
	})
	return versions, nil
}

// VersioningWarning returns a warning, also logged, when the bucket's versioning is not
// enabled: without it the graph has no history and cannot be rolled back. Callers put a
// non-empty warning in their run reports. It returns "" when versioning is on.
func (s *Store) VersioningWarning(ctx context.Context) (string, error) {
	out, err := s.S3.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: &s.Bucket})
	if err != nil {
		return "", fmt.Errorf("bucket %s: read versioning configuration: %w", s.Bucket, err)
	}
	if out.Status == types.BucketVersioningStatusEnabled {
		return "", nil
	}
	status := string(out.Status)
	if status == "" {
		status = "never enabled"
	}
	msg := fmt.Sprintf("WARNING: bucket %s has versioning %s: the persistent graph has no history and cannot be rolled back; enable it with `aws s3api put-bucket-versioning --bucket %s --versioning-configuration Status=Enabled`",
		s.Bucket, status, s.Bucket)
	s.logger().Warn("state: bucket versioning is off", "bucket", s.Bucket, "status", status, "warning", msg)
	return msg, nil
}
