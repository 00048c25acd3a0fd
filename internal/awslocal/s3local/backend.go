package s3local

import (
	"context"
	"time"

	"github.com/rclone/gofakes3"
	"github.com/rclone/gofakes3/s3mem"
)

// listedBackend is s3mem as S3 behaves where they differ: listings hide keys whose current
// version is a delete marker and give no continuation after the last page, and a deletion
// never leaves a key without a current version (see restoreCurrent).
type listedBackend struct {
	*s3mem.Backend
	now  func() time.Time
	etag func(bucket, key, plain string) string // the ETag S3 gives an object (see Service.complete)
}

func (b listedBackend) ListBucket(ctx context.Context, name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	list, err := b.Backend.ListBucket(ctx, name, prefix, page)
	if err != nil {
		return nil, err
	}
	kept := list.Contents[:0]
	for _, c := range list.Contents {
		if _, err := b.Backend.HeadObject(ctx, name, c.Key); gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchKey) {
			continue
		}
		kept = append(kept, c)
	}
	for _, c := range kept {
		c.ETag = b.etag(name, c.Key, c.ETag)
	}
	list.Contents = kept
	if !list.IsTruncated {
		// s3mem sets NextMarker whenever a page is full, also when it is the last; S3 gives
		// a NextContinuationToken (and a V1 NextMarker) only when IsTruncated is true.
		list.NextMarker = ""
	}
	return list, nil
}

// DeleteObjectVersion deletes a version; when it was the current one, the newest
// remaining version becomes current, as in S3.
func (b listedBackend) DeleteObjectVersion(bucket, key string, id gofakes3.VersionID) (gofakes3.ObjectDeleteResult, error) {
	res, err := b.Backend.DeleteObjectVersion(bucket, key, id)
	if err == nil {
		err = restoreCurrent(b.Backend, bucket, key, false, b.now())
	}
	return res, err
}

// DeleteObject deletes a key; on a bucket whose versioning is suspended, with older
// versions kept, a null delete marker becomes current, as in S3.
func (b listedBackend) DeleteObject(ctx context.Context, bucket, key string) (gofakes3.ObjectDeleteResult, error) {
	res, err := b.Backend.DeleteObject(ctx, bucket, key)
	if err == nil {
		err = b.afterDelete(bucket, key, &res)
	}
	return res, err
}

// DeleteMulti is DeleteObject for each key.
func (b listedBackend) DeleteMulti(ctx context.Context, bucket string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	res, err := b.Backend.DeleteMulti(ctx, bucket, keys...)
	if err == nil {
		for _, k := range keys {
			if err := b.afterDelete(bucket, k, nil); err != nil {
				return res, err
			}
		}
	}
	return res, err
}

func (b listedBackend) afterDelete(bucket, key string, res *gofakes3.ObjectDeleteResult) error {
	v, err := b.Backend.VersioningConfiguration(bucket)
	if err != nil || v.Status != gofakes3.VersioningSuspended {
		return err
	}
	if err := restoreCurrent(b.Backend, bucket, key, true, b.now()); err != nil {
		return err
	}
	if id, ok := currentMarker(b.Backend, bucket, key); ok && res != nil {
		res.IsDeleteMarker, res.VersionID = true, gofakes3.VersionID(id)
	}
	return nil
}

// ListBucketVersions lists each key's versions newest first, as S3 does (s3mem lists them
// oldest first), paging by key-marker and version-id-marker over that order.
func (b listedBackend) ListBucketVersions(name string, prefix *gofakes3.Prefix, page *gofakes3.ListBucketVersionsPage) (*gofakes3.ListBucketVersionsResult, error) {
	all, err := b.Backend.ListBucketVersions(name, prefix, nil)
	if err != nil {
		return all, err
	}
	items := newestFirst(all.Versions)
	res := gofakes3.NewListBucketVersionsResult(name, prefix, page)
	start := 0
	if page != nil && page.HasKeyMarker {
		start = len(items)
		for i, it := range items {
			if k := versionKey(it); k > page.KeyMarker {
				start = min(start, i)
				break
			} else if k == page.KeyMarker && page.HasVersionIDMarker && it.GetVersionID() == page.VersionIDMarker {
				start = i + 1
				break
			}
		}
	}
	if start == 0 {
		res.CommonPrefixes = all.CommonPrefixes
	}
	items = items[start:]
	if page != nil && page.MaxKeys > 0 && int64(len(items)) > page.MaxKeys {
		items = items[:page.MaxKeys]
		last := items[len(items)-1]
		res.IsTruncated, res.NextKeyMarker, res.NextVersionIDMarker = true, versionKey(last), last.GetVersionID()
	}
	for _, it := range items {
		if v, ok := it.(*gofakes3.Version); ok {
			v.ETag = b.etag(name, v.Key, v.ETag)
		}
	}
	res.Versions = items
	return res, nil
}

// newestFirst reverses the order of each key's versions, keeping keys in order.
func newestFirst(items []gofakes3.VersionItem) []gofakes3.VersionItem {
	out := make([]gofakes3.VersionItem, 0, len(items))
	for i := 0; i < len(items); {
		j := i
		for j < len(items) && versionKey(items[j]) == versionKey(items[i]) {
			j++
		}
		for k := j - 1; k >= i; k-- {
			out = append(out, items[k])
		}
		i = j
	}
	return out
}

func versionKey(v gofakes3.VersionItem) string {
	switch x := v.(type) {
	case *gofakes3.Version:
		return x.Key
	case *gofakes3.DeleteMarker:
		return x.Key
	}
	return ""
}
