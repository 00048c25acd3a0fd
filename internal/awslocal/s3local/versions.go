package s3local

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unsafe"

	"github.com/rclone/gofakes3"
	"github.com/rclone/gofakes3/s3mem"
	"github.com/ryszard/goskiplist/skiplist"
)

// s3mem, gofakes3's in-memory backend (rclone/gofakes3 v0.0.12, and its master branch as of
// December 2025), keeps an object's current version in one field and the older ones in a
// skip list. Two deletions leave a key with older versions and no current one:
//
//   - DeleteObjectVersion of the current version (deleting the delete marker on top of a
//     key is how S3 users undelete an object) clears the current version and promotes
//     none of the older ones;
//   - DeleteObject on a bucket whose versioning is suspended clears the current version
//     instead of making a null delete marker current.
//
// Afterwards ListObjectVersions marks no version IsLatest, and GetObject, HeadObject,
// ListObjects and PutObjectTagging dereference the missing current version and panic.
// S3 makes the newest remaining version current in the first case and a delete marker
// with version id "null" current in the second
// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/DeletingObjectVersions.html,
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/VersionSuspendedBehavior.html).
//
// The backend offers no way to set the current version, so restoreCurrent does what its
// deletion should have done, in its own structures, right after each deletion. The
// service's lock is held exclusively for every mutating request, so nothing reads the
// backend in between. checkLayout, run by New, fails at start if a gofakes3 upgrade
// changes the structures it relies on.

// restoreCurrent makes a key left without a current version whole again: the newest
// remaining version becomes current, or, when suspended, a null delete marker made at.
func restoreCurrent(b *s3mem.Backend, bucket, key string, suspended bool, at time.Time) error {
	obj, ok, err := objectOf(b, bucket, key)
	if err != nil || !ok {
		return err
	}
	data := field(obj, "data")
	if !data.IsNil() {
		return nil
	}
	versions, _ := field(obj, "versions").Interface().(*skiplist.SkipList)
	if versions == nil || versions.Len() == 0 {
		return nil
	}
	if suspended {
		marker := reflect.New(data.Type().Elem())
		field(marker.Elem(), "name").SetString(key)
		field(marker.Elem(), "lastModified").Set(reflect.ValueOf(at))
		field(marker.Elem(), "deleteMarker").SetBool(true)
		field(marker.Elem(), "versionID").SetString("null")
		data.Set(marker)
		return nil
	}
	newest := versions.SeekToLast() // version ids sort in the order they were made
	id, current := newest.Key(), newest.Value()
	newest.Close()
	versions.Delete(id)
	data.Set(reflect.ValueOf(current))
	return nil
}

// currentMarker returns the version id of the delete marker that is bucket/key's current
// version, if it is one.
func currentMarker(b *s3mem.Backend, bucket, key string) (string, bool) {
	obj, ok, err := objectOf(b, bucket, key)
	if err != nil || !ok {
		return "", false
	}
	data := field(obj, "data")
	if data.IsNil() || !field(data.Elem(), "deleteMarker").Bool() {
		return "", false
	}
	return field(data.Elem(), "versionID").String(), true
}

// objectOf finds the backend's record of bucket/key.
func objectOf(b *s3mem.Backend, bucket, key string) (reflect.Value, bool, error) {
	buckets := field(reflect.ValueOf(b).Elem(), "buckets")
	bk := buckets.MapIndex(reflect.ValueOf(bucket))
	if !bk.IsValid() || bk.IsNil() {
		return reflect.Value{}, false, nil
	}
	objects, ok := field(bk.Elem(), "objects").Interface().(*skiplist.SkipList)
	if !ok || objects == nil {
		return reflect.Value{}, false, fmt.Errorf("s3 emulator: gofakes3's s3mem bucket has no object skip list")
	}
	o, found := objects.Get(key)
	if !found || o == nil {
		return reflect.Value{}, false, nil
	}
	return reflect.ValueOf(o).Elem(), true, nil
}

// field returns the named field of struct v, settable even though s3mem does not export it.
func field(v reflect.Value, name string) reflect.Value {
	f := v.FieldByName(name)
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

// checkLayout verifies, on a scratch backend, that s3mem has the structures
// restoreCurrent changes, so that a gofakes3 upgrade that changes them fails at start
// rather than corrupting a bucket.
func checkLayout() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("s3 emulator: gofakes3's s3mem changed its layout (%v): update versions.go or drop it if upstream fixed the current-version bug", r)
		}
	}()
	b := s3mem.New()
	ctx := context.Background()
	if err := b.CreateBucket(ctx, "layout"); err != nil {
		return err
	}
	if err := b.SetVersioningConfiguration("layout", gofakes3.VersioningConfiguration{Status: gofakes3.VersioningEnabled}); err != nil {
		return err
	}
	for _, body := range []string{"1", "2"} {
		if _, err := b.PutObject(ctx, "layout", "k", nil, strings.NewReader(body), 1); err != nil {
			return err
		}
	}
	obj, ok, err := objectOf(b, "layout", "k")
	if err != nil || !ok {
		return fmt.Errorf("s3 emulator: cannot find an object in gofakes3's s3mem (%v)", err)
	}
	for name, kind := range map[string]reflect.Kind{"data": reflect.Pointer, "versions": reflect.Pointer} {
		if f := obj.FieldByName(name); !f.IsValid() || f.Kind() != kind {
			return fmt.Errorf("s3 emulator: gofakes3's s3mem object has no %s field", name)
		}
	}
	data := field(obj, "data").Elem()
	for name, kind := range map[string]reflect.Kind{"name": reflect.String, "versionID": reflect.String, "deleteMarker": reflect.Bool, "lastModified": reflect.Struct} {
		if f := data.FieldByName(name); !f.IsValid() || f.Kind() != kind {
			return fmt.Errorf("s3 emulator: gofakes3's s3mem version has no %s field of kind %s", name, kind)
		}
	}
	return nil
}
