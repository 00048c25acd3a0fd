// Package replan plans again a bundle a deployment already applied: an earlier one, to
// roll back by rolling forward (the plan shows exactly what returns), or the current one
// marked for destruction (the plan deletes every stack of the graph). Either way the
// bundle is uploaded to plans/NAME.zip and nothing changes until the plan is approved.
package replan

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
	"github.com/cairn-dev/cairn/internal/upload"
)

// S3API is the part of the S3 client replanning needs.
type S3API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// Planner replans bundles of cairn's bucket.
type Planner struct {
	S3      S3API
	Bucket  string
	History *history.Store
	State   *statestore.Store
}

// Upload is a bundle uploaded to plans/NAME.zip to be planned.
type Upload struct {
	// Namespace and Key name the deployment's graph; Stacks is how many it holds.
	Namespace, Key string
	Stacks         int
	// Bundle is the applied bundle replanned.
	Bundle state.BundleRef
	// PlanKey and Version are the upload: its key and S3 version id.
	PlanKey, Version string
}

// Rollback uploads, to be planned, the bundle applied before the current one, or the one
// to names (a bundle version id, a unique end of one, or a git ref of at least 7
// characters).
func (p *Planner) Rollback(ctx context.Context, deployment, to string) (*Upload, error) {
	ns, key, err := p.History.Graph(ctx, deployment)
	if err != nil {
		return nil, err
	}
	bundles, err := Applied(ctx, p.State, ns, key)
	if err != nil {
		return nil, err
	}
	target, err := Pick(bundles, to)
	if err != nil {
		return nil, fmt.Errorf("rollback %s: %w", deployment, err)
	}
	g, err := p.State.Show(ctx, ns, key, "")
	if err != nil && !errors.Is(err, statestore.ErrNotFound) {
		return nil, err
	}
	up := &Upload{Namespace: ns, Key: key, Bundle: target}
	if g != nil {
		up.Stacks = len(g.Stacks)
	}
	return up, p.replan(ctx, deployment, up, nil)
}

// Destroy uploads the deployment's current bundle, marked to delete every stack of its
// graph, to be planned.
func (p *Planner) Destroy(ctx context.Context, deployment string) (*Upload, error) {
	ns, key, err := p.History.Graph(ctx, deployment)
	if err != nil {
		return nil, err
	}
	g, err := p.State.Show(ctx, ns, key, "")
	if errors.Is(err, statestore.ErrNotFound) {
		return nil, fmt.Errorf("destroy %s: the graph %s/%s does not exist: nothing to destroy", deployment, ns, key)
	}
	if err != nil {
		return nil, fmt.Errorf("destroy %s: %w", deployment, err)
	}
	if g.Bundle.VersionID == "" {
		return nil, fmt.Errorf("destroy %s: the graph %s/%s names no applied bundle version to read the config from", deployment, ns, key)
	}
	up := &Upload{Namespace: ns, Key: key, Stacks: len(g.Stacks), Bundle: g.Bundle}
	return up, p.replan(ctx, deployment, up, map[string]string{rundoc.DestroyMetadata: "true"})
}

func (p *Planner) replan(ctx context.Context, deployment string, up *Upload, extra map[string]string) error {
	data, meta, err := p.fetch(ctx, deployment, up.Bundle.VersionID)
	if err != nil {
		return err
	}
	if meta == nil {
		meta = map[string]string{}
	}
	for k, v := range extra {
		meta[k] = v
	}
	up.PlanKey = layout.PlanUploadKey(deployment)
	up.Version, err = upload.Put(ctx, p.S3, p.Bucket, up.PlanKey, data, meta)
	return err
}

// appliedURIs names the uploads an applied bundle of deployment can be in.
func (p *Planner) appliedURIs(deployment string) string {
	var uris []string
	for _, k := range layout.AppliedKeys(deployment) {
		uris = append(uris, layout.URI(p.Bucket, k))
	}
	return strings.Join(uris, ", ")
}

// fetch downloads a version of the deployment's bundle, whichever of its uploads holds it
// (rundoc.FindApplied), with its metadata.
func (p *Planner) fetch(ctx context.Context, deployment, version string) ([]byte, map[string]string, error) {
	o, _, err := rundoc.FindApplied(ctx, p.S3, p.Bucket, deployment, version, "")
	if err != nil {
		return nil, nil, err
	}
	if o == nil {
		return nil, nil, fmt.Errorf("bundle version %s of deployment %s is in none of %s (expired by a lifecycle rule?)", version, deployment, p.appliedURIs(deployment))
	}
	return o.Body, o.Metadata, nil
}

// Applied lists the bundles the graph's history records as applied, newest first, each
// once.
func Applied(ctx context.Context, store *statestore.Store, namespace, key string) ([]state.BundleRef, error) {
	versions, err := store.History(ctx, namespace, key)
	if err != nil {
		return nil, err
	}
	var out []state.BundleRef
	seen := map[string]bool{}
	for _, v := range versions {
		if v.DeleteMarker {
			continue
		}
		g, err := store.Show(ctx, namespace, key, v.VersionID)
		if err != nil || g.Bundle.VersionID == "" || seen[g.Bundle.VersionID] {
			continue
		}
		seen[g.Bundle.VersionID] = true
		out = append(out, g.Bundle)
	}
	return out, nil
}

// Pick chooses the rollback target among the applied bundles, newest first: the one
// before the current, or the one to names by version id (whole, or a unique end of it, as
// human output shortens them) or by git ref (7 characters or more).
func Pick(bundles []state.BundleRef, to string) (state.BundleRef, error) {
	if len(bundles) == 0 {
		return state.BundleRef{}, errors.New("the graph's history records no applied bundle")
	}
	if to == "" {
		if len(bundles) < 2 {
			return state.BundleRef{}, fmt.Errorf("only one bundle (version %s) was ever applied: nothing earlier to return to", bundles[0].VersionID)
		}
		return bundles[1], nil
	}
	var matches []state.BundleRef
	for _, b := range bundles {
		if b.VersionID == to {
			return b, nil
		}
		if (len(to) >= 7 && strings.HasPrefix(b.GitRef, to)) || (len(to) >= 6 && strings.HasSuffix(b.VersionID, strings.TrimPrefix(to, "…"))) {
			matches = append(matches, b)
		}
	}
	if len(matches) == 1 {
		return matches[0], nil
	}
	var known []string
	for _, b := range bundles {
		ref := b.GitRef
		if ref == "" {
			ref = "-"
		}
		known = append(known, b.VersionID+" (git "+ref+")")
	}
	if len(matches) > 1 {
		return state.BundleRef{}, fmt.Errorf("%q names %d applied bundles: give more of it; applied: %s", to, len(matches), strings.Join(known, ", "))
	}
	return state.BundleRef{}, fmt.Errorf("no applied bundle has version or git ref %q; applied: %s", to, strings.Join(known, ", "))
}
