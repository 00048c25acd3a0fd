package sweeper

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/drift"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// plan fills sw with every persistent graph (matching the filter) and its stacks, each
// pending or already settled as NOT_CHECKED with the reason.
func (d *Driver) plan(ctx context.Context, sw *drift.Sweep, inv *invocation) error {
	keys, err := d.graphKeys(ctx)
	if err != nil {
		return err
	}
	var graphs []*state.Graph
	for _, k := range keys {
		pg, err := d.store.Show(ctx, k[0], k[1], "")
		if err != nil {
			if errors.Is(err, statestore.ErrNotFound) {
				continue // deleted since the listing
			}
			inv.log.Error("drift: persistent graph unreadable; left out of the sweep", "namespace", k[0], "key", k[1], "err", err)
			sw.Graphs = append(sw.Graphs, &drift.Graph{Name: k[1], Namespace: k[0], Key: k[1], Skipped: "persistent graph unreadable: " + err.Error()})
			continue
		}
		graphs = append(graphs, pg)
	}
	live, unreachable, home, err := d.survey(ctx, inv, graphs)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, pg := range graphs {
		cfg, name, note := d.appliedConfig(ctx, pg)
		name = drift.ReportName(pg, name, names)
		names[name] = true
		if sw.Filter != "" && sw.Filter != name && sw.Filter != pg.Key && sw.Filter != pg.Namespace+"/"+pg.Key {
			continue
		}
		g := drift.NewGraph(pg, name, cfg, note, drift.Places{Live: live, Home: home, Unreachable: unreachable})
		if g.Skipped == "" {
			if why, err := d.lockReason(ctx, g); err != nil {
				return err
			} else if why != "" {
				g.Skipped = why
				g.SkipPending(why)
			}
		}
		sw.Graphs = append(sw.Graphs, g)
	}
	return nil
}

// graphKeys lists [namespace, key] of every state/NAMESPACE/KEY.json.
func (d *Driver) graphKeys(ctx context.Context) ([][2]string, error) {
	keys, err := objects.List(ctx, d.c.S3, d.cfg.Bucket, bucket.StatePrefix)
	if err != nil {
		return nil, fmt.Errorf("drift: persistent graphs: %w", err)
	}
	var out [][2]string
	for _, k := range keys {
		if ns, key, ok := bucket.ParseStateKey(k); ok {
			out = append(out, [2]string{ns, key})
		}
	}
	return out, nil
}

// appliedConfig loads the config of the bundle pg applied, at the graph's bundle version,
// wherever that bundle was uploaded (bucket.AppliedKeys). It returns the config (nil when unreadable), the deployment name
// when found, and a note for the report when the config could not be used.
func (d *Driver) appliedConfig(ctx context.Context, pg *state.Graph) (*config.Config, string, string) {
	ref := pg.Bundle
	versioned := ref.VersionID != "" && ref.VersionID != "null"
	unreadable := func(why string) string {
		return fmt.Sprintf("applied config not readable (%s): every stack is checked, no drift.ignore applies", why)
	}
	version := ""
	if versioned {
		version = ref.VersionID
	}
	// The graph key defaults to the deployment name; else whichever upload has the applied
	// version names the deployment.
	name := pg.Key
	lb, key, err := d.appliedBundle(ctx, name, version, ref.SHA256)
	if err == nil && lb == nil && versioned {
		found, ok, ferr := d.deploymentOf(ctx, ref.VersionID)
		if ferr == nil && !ok {
			return nil, name, unreadable(fmt.Sprintf("none of %s has version %s (deleted?)", strings.Join(bucket.AppliedKeys("*"), ", "), ref.VersionID))
		}
		if err = ferr; err == nil {
			name = found
			lb, key, err = d.appliedBundle(ctx, name, version, ref.SHA256)
		}
	}
	switch {
	case err != nil:
		return nil, name, unreadable(err.Error())
	case lb == nil && !versioned:
		return nil, name, unreadable(fmt.Sprintf("none of %s holds sha256 %s, and the bucket keeps no versions", strings.Join(bucket.AppliedKeys(name), ", "), ref.SHA256))
	case lb == nil:
		return nil, name, unreadable(fmt.Sprintf("none of %s has version %s (deleted?)", strings.Join(bucket.AppliedKeys(name), ", "), ref.VersionID))
	case lb.Config == nil:
		return nil, name, unreadable(fmt.Sprintf("%s: %s", key, strings.Join(lb.Errors, "; ")))
	}
	return lb.Config, name, ""
}

// appliedBundle downloads deployment name's bundle at version (see rundoc.DownloadApplied).
func (d *Driver) appliedBundle(ctx context.Context, name, version, sha string) (*rundoc.Loaded, string, error) {
	return rundoc.DownloadApplied(ctx, d.c.S3, d.cfg.Bucket, name, version, sha)
}

// deploymentOf finds the deployment whose upload of a bundle (bucket.AppliedKeys) has
// version versionID.
func (d *Driver) deploymentOf(ctx context.Context, versionID string) (string, bool, error) {
	for _, prefix := range bucket.AppliedPrefixes() {
		in := &s3.ListObjectVersionsInput{Bucket: aws.String(d.cfg.Bucket), Prefix: aws.String(prefix)}
		for {
			page, err := d.c.S3.ListObjectVersions(ctx, in)
			if err != nil {
				return "", false, fmt.Errorf("look for bundle version %s: %w", versionID, err)
			}
			for _, v := range page.Versions {
				u, ok := bucket.ParseUpload(aws.ToString(v.Key))
				if ok && u.Kind.Applies() && aws.ToString(v.VersionId) == versionID {
					return u.Deployment, true, nil
				}
			}
			if !aws.ToBool(page.IsTruncated) {
				break
			}
			in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
		}
	}
	return "", false, nil
}
