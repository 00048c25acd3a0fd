package sweeper

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/drift"
	"github.com/cairn-dev/cairn/internal/objects"
)

// The sweep's own document: read with its ETag, written only over it, so one invocation
// at a time drives a sweep.

var errNoSweep = errors.New("no such sweep")

func (d *Driver) load(ctx context.Context, id string) (*drift.Sweep, string, error) {
	key := bucket.SweepKey(id)
	o, err := objects.Get(ctx, d.c.S3, d.cfg.Bucket, key, "", 0)
	if errors.Is(err, objects.ErrNotFound) {
		return nil, "", errNoSweep
	}
	if err != nil {
		return nil, "", fmt.Errorf("drift: sweep: %w", err)
	}
	var sw drift.Sweep
	if err := json.Unmarshal(o.Body, &sw); err != nil || sw.ID != id {
		return nil, "", fmt.Errorf("drift: %s is not a sweep document (%v): delete it to let drift detection go on", bucket.URI(d.cfg.Bucket, key), err)
	}
	return &sw, o.ETag, nil
}

// put writes sw conditionally: created (If-None-Match) or replacing the ETag it read.
func (d *Driver) put(ctx context.Context, sw *drift.Sweep, etag string, create bool) (string, error) {
	return objects.WriteJSON(ctx, d.c.S3, d.cfg.Bucket, bucket.SweepKey(sw.ID), sw, objects.Write{Create: create, IfMatch: etag})
}

func (d *Driver) delete(ctx context.Context, inv *invocation) error {
	if err := objects.Delete(ctx, d.c.S3, d.cfg.Bucket, bucket.SweepKey(inv.sw.ID), inv.etag); err != nil {
		return d.lost(inv, err)
	}
	return nil
}

// OpenSweeps lists the ids of sweeps not yet finished, oldest first.
func (d *Driver) OpenSweeps(ctx context.Context) ([]string, error) {
	keys, err := objects.List(ctx, d.c.S3, d.cfg.Bucket, bucket.SweepsPrefix)
	if err != nil {
		return nil, fmt.Errorf("drift: open sweeps: %w", err)
	}
	var ids []string
	for _, k := range keys {
		if id, ok := bucket.SweepOf(k); ok {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func newToken() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
