package drift

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

// plan fills sw with every persistent graph (matching the filter) and its stacks, each
// pending or already settled as NOT_CHECKED with the reason.
func (d *Driver) plan(ctx context.Context, sw *Sweep, inv *invocation) error {
	keys, err := d.graphKeys(ctx)
	if err != nil {
		return err
	}
	var graphs []*state.Graph
	for _, k := range keys {
		pg, err := d.store.Show(ctx, k[0], k[1], "")
		if err != nil {
			if errors.Is(err, state.ErrNotFound) {
				continue // deleted since the listing
			}
			inv.log.Error("drift: persistent graph unreadable; left out of the sweep", "namespace", k[0], "key", k[1], "err", err)
			sw.Graphs = append(sw.Graphs, &Graph{Name: k[1], Namespace: k[0], Key: k[1], Skipped: "persistent graph unreadable: " + err.Error()})
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
		name = ReportName(pg, name, names)
		names[name] = true
		if sw.Filter != "" && sw.Filter != name && sw.Filter != pg.Key && sw.Filter != pg.Namespace+"/"+pg.Key {
			continue
		}
		g := NewGraph(pg, name, cfg, note, Places{Live: live, Home: home, Unreachable: unreachable})
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

// ReportName is the name of pg's report folder (drift/NAME/): the deployment that applied
// it, else its key; NAMESPACE.KEY when another graph has that name already (say, a
// deployment that changed its namespace left its old graph behind: taken holds the names
// given so far) or when the name is one the bucket reserves.
func ReportName(pg *state.Graph, deployment string, taken map[string]bool) string {
	name := cmp.Or(deployment, pg.Key)
	if taken[name] || bucket.Reserved(name) {
		return pg.Namespace + "." + pg.Key
	}
	return name
}

// Places is what a sweep saw of the accounts and regions of its graphs: every live stack,
// keyed by target.Key relative to Home, and the places it could not reach, with why.
type Places struct {
	Live        map[string]plan.Live
	Home        target.Target
	Unreachable map[target.Target]string
}

// NewGraph is the part of a sweep of persistent graph pg, reported as name: each stack
// pending, or settled as NOT_CHECKED with why (drift detection disabled by the applied
// config cfg, the stack missing from AWS or its account and region unreachable, ignored by
// drift.ignore, or busy), and the stacks tagged for the graph that it does not know. note
// says why cfg is nil, if it is.
func NewGraph(pg *state.Graph, name string, cfg *config.Config, note string, seen Places) *Graph {
	g := &Graph{Namespace: pg.Namespace, Key: pg.Key, Name: name, Bundle: bundleString(pg.Bundle)}
	if note != "" {
		g.Notes = append(g.Notes, note)
	}
	if cfg != nil {
		g.Ignore = cfg.Drift.Ignore
		if !cfg.Drift.Enabled {
			g.Skipped = "drift detection disabled by drift.enabled: false in the applied config"
		}
	}
	known := map[string]bool{}
	for _, n := range pg.Names() {
		ps := pg.Stacks[n]
		at := ps.Target.Location(seen.Home)
		key := target.Key(at, ps.StackName)
		s := &Stack{Name: ps.Name, StackName: ps.StackName, Status: Pending, Target: ps.Target, At: at}
		known[key] = true
		l, ok := seen.Live[key]
		why, unreachable := seen.Unreachable[at]
		switch {
		case g.Skipped != "":
			s.Status, s.Reason = NotChecked, g.Skipped
		case unreachable:
			s.Status, s.Reason = NotChecked, why
		case !ok:
			s.Status, s.Reason = NotChecked, "stack does not exist in AWS"
			g.Missing = append(g.Missing, target.Describe(at, ps.StackName))
		default:
			s.StackID = l.StackID
			if p := matchIgnore(g.Ignore, ps.Name, ps.StackName); p != "" {
				s.Status, s.Reason = NotChecked, fmt.Sprintf("ignored by drift.ignore pattern %q", p)
			} else if strings.HasSuffix(l.Status, "_IN_PROGRESS") {
				s.Status, s.Reason = NotChecked, "stack operation in progress ("+l.Status+")"
			}
		}
		g.Stacks = append(g.Stacks, s)
	}
	for key, l := range seen.Live {
		if l.Tags[state.TagNamespace] == g.Namespace && l.Tags[state.TagGraphKey] == g.Key && !known[key] {
			at, name := target.ParseKey(key)
			g.Untracked = append(g.Untracked, target.Describe(at, name))
		}
	}
	sort.Strings(g.Untracked)
	return g
}

// graphKeys lists [namespace, key] of every state/NAMESPACE/KEY.json.
func (d *Driver) graphKeys(ctx context.Context) ([][2]string, error) {
	keys, err := bucket.List(ctx, d.c.S3, d.cfg.Bucket, bucket.StatePrefix)
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
// wherever that bundle was uploaded: deployments/NAME.zip by a push, plans/NAME.zip by a
// plan and its approval. It returns the config (nil when unreadable), the deployment name
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
			return nil, name, unreadable(fmt.Sprintf("no %s or %s has version %s (deleted?)", bucket.DeploymentKey("*"), bucket.PlanUploadKey("*"), ref.VersionID))
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
		return nil, name, unreadable(fmt.Sprintf("neither %s nor %s holds sha256 %s, and the bucket keeps no versions", bucket.DeploymentKey(name), bucket.PlanUploadKey(name), ref.SHA256))
	case lb == nil:
		return nil, name, unreadable(fmt.Sprintf("neither %s nor %s has version %s (deleted?)", bucket.DeploymentKey(name), bucket.PlanUploadKey(name), ref.VersionID))
	case lb.Config == nil:
		return nil, name, unreadable(fmt.Sprintf("%s: %s", key, strings.Join(lb.Errors, "; ")))
	}
	return lb.Config, name, ""
}

// appliedBundle downloads deployment name's bundle at version (see rundoc.DownloadApplied).
func (d *Driver) appliedBundle(ctx context.Context, name, version, sha string) (*rundoc.Loaded, string, error) {
	return rundoc.DownloadApplied(ctx, d.c.S3, d.cfg.Bucket, name, version, sha)
}

// deploymentOf finds the deployment whose deploy or plan upload has version versionID.
func (d *Driver) deploymentOf(ctx context.Context, versionID string) (string, bool, error) {
	for _, prefix := range []string{bucket.DeploymentsPrefix, bucket.PlansPrefix} {
		in := &s3.ListObjectVersionsInput{Bucket: aws.String(d.cfg.Bucket), Prefix: aws.String(prefix)}
		for {
			page, err := d.c.S3.ListObjectVersions(ctx, in)
			if err != nil {
				return "", false, fmt.Errorf("look for bundle version %s: %w", versionID, err)
			}
			for _, v := range page.Versions {
				u, ok := bucket.ParseUpload(aws.ToString(v.Key))
				if ok && (u.Kind == bucket.DeployUpload || u.Kind == bucket.PlanUpload) && aws.ToString(v.VersionId) == versionID {
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

func bundleString(b state.BundleRef) string {
	var parts []string
	if b.VersionID != "" {
		parts = append(parts, "version "+b.VersionID)
	}
	if b.SHA256 != "" {
		parts = append(parts, "sha256 "+b.SHA256)
	}
	if b.GitRef != "" {
		parts = append(parts, "git "+b.GitRef)
	}
	if b.GitRemote != "" {
		parts = append(parts, "of "+b.GitRemote)
	}
	return strings.Join(parts, ", ")
}
