package drift

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/state"
)

// liveStack is a stack as DescribeStacks lists it.
type liveStack struct {
	id, status string
	tags       map[string]string
}

// plan fills sw with every persistent graph (matching the filter) and its stacks, each
// pending or already settled as NOT_CHECKED with the reason.
func (d *Driver) plan(ctx context.Context, sw *Sweep, inv *invocation) error {
	keys, err := d.graphKeys(ctx)
	if err != nil {
		return err
	}
	live, err := d.liveStacks(ctx, inv)
	if err != nil {
		return err
	}
	names := map[string]bool{}
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
		g := &Graph{Namespace: pg.Namespace, Key: pg.Key, Name: pg.Key}
		cfg, name, note := d.appliedConfig(ctx, pg)
		if name != "" {
			g.Name = name
		}
		if names[g.Name] {
			// Two graphs claim one report folder (say, a deployment that changed its
			// namespace left its old graph behind): the later one uses NAMESPACE.KEY.
			g.Name = g.Namespace + "." + g.Key
		}
		names[g.Name] = true
		if sw.Filter != "" && sw.Filter != g.Name && sw.Filter != g.Key && sw.Filter != g.Namespace+"/"+g.Key {
			continue
		}
		g.Bundle = bundleString(pg.Bundle)
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
			s := &Stack{Name: ps.Name, StackName: ps.StackName, Status: Pending}
			known[ps.StackName] = true
			l, ok := live[ps.StackName]
			switch {
			case g.Skipped != "":
				s.Status, s.Reason = NotChecked, g.Skipped
			case !ok:
				s.Status, s.Reason = NotChecked, "stack does not exist in AWS"
				g.Missing = append(g.Missing, ps.StackName)
			default:
				s.StackID = l.id
				if p := matchIgnore(g.Ignore, ps.Name, ps.StackName); p != "" {
					s.Status, s.Reason = NotChecked, fmt.Sprintf("ignored by drift.ignore pattern %q", p)
				} else if strings.HasSuffix(l.status, "_IN_PROGRESS") {
					s.Status, s.Reason = NotChecked, "stack operation in progress ("+l.status+")"
				}
			}
			g.Stacks = append(g.Stacks, s)
		}
		for name, l := range live {
			if l.tags[state.TagNamespace] == g.Namespace && l.tags[state.TagGraphKey] == g.Key && !known[name] {
				g.Untracked = append(g.Untracked, name)
			}
		}
		sort.Strings(g.Untracked)
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

// liveStacks lists every stack in the account and region, by name.
func (d *Driver) liveStacks(ctx context.Context, inv *invocation) (map[string]liveStack, error) {
	out := map[string]liveStack{}
	in := &cloudformation.DescribeStacksInput{}
	for {
		if err := inv.budget.Wait(ctx); err != nil {
			return nil, err
		}
		page, err := d.c.CFN.DescribeStacks(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("drift: list stacks: %w", err)
		}
		for _, s := range page.Stacks {
			if s.StackStatus == cfntypes.StackStatusDeleteComplete {
				continue
			}
			tags := map[string]string{}
			for _, t := range s.Tags {
				tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			out[aws.ToString(s.StackName)] = liveStack{id: aws.ToString(s.StackId), status: string(s.StackStatus), tags: tags}
		}
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

// appliedConfig loads the config of the bundle pg applied, from deployments/NAME.zip at
// the graph's bundle version. It returns the config (nil when unreadable), the deployment
// name when found, and a note for the report when the config could not be used.
func (d *Driver) appliedConfig(ctx context.Context, pg *state.Graph) (*config.Config, string, string) {
	ref := pg.Bundle
	versioned := ref.VersionID != "" && ref.VersionID != "null"
	name, data, err := d.findBundle(ctx, pg.Key, ref.VersionID, versioned)
	if err != nil {
		return nil, name, fmt.Sprintf("applied config not readable (%v): every stack is checked, no drift.ignore applies", err)
	}
	if !versioned && ref.SHA256 != "" {
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != ref.SHA256 {
			return nil, name, fmt.Sprintf("applied config not readable (%s changed since sha256 %s was applied and the bucket keeps no versions): every stack is checked, no drift.ignore applies", bucket.DeploymentKey(name), ref.SHA256)
		}
	}
	b, err := bundle.FromZip(data)
	if err == nil {
		var cfg *config.Config
		cfg, err = config.LoadOptions{Deployment: name}.Load(b)
		if err == nil {
			return cfg, name, ""
		}
	}
	return nil, name, fmt.Sprintf("applied config not readable (%s: %v): every stack is checked, no drift.ignore applies", bucket.DeploymentKey(name), err)
}

// findBundle fetches the applied bundle: deployments/KEY.zip (the graph key defaults to
// the deployment name) at versionID, else whichever deployments/*.zip has that version.
func (d *Driver) findBundle(ctx context.Context, key, versionID string, versioned bool) (string, []byte, error) {
	data, err := d.getBundle(ctx, key, versionID, versioned)
	if err == nil || !errors.Is(err, bucket.ErrNotFound) || !versioned {
		return key, data, err
	}
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(d.cfg.Bucket), Prefix: aws.String(bucket.DeploymentsPrefix)}
	for {
		page, lerr := d.c.S3.ListObjectVersions(ctx, in)
		if lerr != nil {
			return key, nil, fmt.Errorf("look for bundle version %s: %w", versionID, lerr)
		}
		for _, v := range page.Versions {
			if aws.ToString(v.VersionId) != versionID {
				continue
			}
			name, ok := bucket.DeploymentOf(aws.ToString(v.Key))
			if !ok {
				continue
			}
			data, err := d.getBundle(ctx, name, versionID, true)
			return name, data, err
		}
		if !aws.ToBool(page.IsTruncated) {
			return key, nil, fmt.Errorf("no %s has version %s (deleted?)", bucket.DeploymentKey("*"), versionID)
		}
		in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
}

func (d *Driver) getBundle(ctx context.Context, name, versionID string, versioned bool) ([]byte, error) {
	if !versioned {
		versionID = ""
	}
	o, err := bucket.Get(ctx, d.c.S3, d.cfg.Bucket, bucket.DeploymentKey(name), versionID, bundle.MaxZipSize)
	if err != nil {
		return nil, err
	}
	return o.Body, nil
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
