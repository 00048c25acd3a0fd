// Package judge is the policy function's logic: it judges a plan or a push the deployer
// sends (verdict.Request) with the platform team's policies, read from policies/ in
// cairn's bucket and nowhere else, and the bundle's own (cairn.yaml's policies), each
// compiled apart by package policy (OPA), and answers the results and where it read the
// policies. Any failure is answered as an error, which the deployer counts as a denial.
//
// It is a function of its own so that the deployer never links the policy engine (it
// would double the deployer's binary and its start: docs/policy.md).
package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/policy"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/verdict"
)

// S3 is what the function calls of S3: reads and listings of cairn's bucket.
type S3 interface {
	objects.Getter
	objects.Lister
}

// Config is the function's: cairn's bucket.
type Config struct {
	Bucket string
}

// Judge answers the deployer's requests.
type Judge struct {
	s3  S3
	cfg Config
	log *slog.Logger
	now func() time.Time
}

// New returns a judge reading cairn's bucket through api, which the caller gates
// (objects.Gate): every read is judged against the bucket's rules for the request's
// deployment (bucket.Rules), so the function reads policies/ and that deployment's
// bundle only.
func New(api S3, cfg Config, log *slog.Logger) *Judge {
	if log == nil {
		log = slog.Default()
	}
	return &Judge{s3: api, cfg: cfg, log: log, now: time.Now}
}

// Handle is the policy function's handler: it never fails the invocation, it answers
// the error (fail closed: the deployer counts it as a denial).
func (j *Judge) Handle(ctx context.Context, req verdict.Request) (verdict.Answer, error) {
	start := j.now()
	log := j.log.With("deployment", req.Deployment, "run", req.RunID, "plan", req.PlanID, "kind", req.Kind)
	a, err := j.judge(ctx, req)
	if err != nil {
		a.Error = err.Error()
		log.Warn("policy: evaluation failed (a denial)", "err", err)
	}
	a.Took = j.now().Sub(start)
	deny, warn := 0, 0
	for _, r := range a.Results {
		if r.Level == verdict.Deny {
			deny++
		} else {
			warn++
		}
	}
	log.Info("policy: judged", "deny", deny, "warn", warn, "team_files", len(a.Source.Objects), "bundle_files", a.Source.BundleFiles, "took", a.Took.String())
	return a, nil
}

func (j *Judge) judge(ctx context.Context, req verdict.Request) (verdict.Answer, error) {
	a := verdict.Answer{Source: verdict.Source{Bucket: j.cfg.Bucket, Prefix: bucket.PoliciesPrefix}}
	if err := bucket.CheckDeployment(req.Deployment); err != nil {
		return a, fmt.Errorf("policy request: %w", err)
	}
	ctx = bucket.WithScope(ctx, bucket.ForDeployment(req.Deployment))
	at := req.Time
	if at.IsZero() {
		at = j.now()
	}
	var (
		in     policy.Input
		bv     plan.BundleVersion
		doc    *plan.Document
		r      *run.Run
		decode error
	)
	switch req.Kind {
	case verdict.Plan:
		doc, decode = plan.Decode(req.Plan)
		if decode == nil {
			bv = doc.Bundle
			if doc.Deployment != req.Deployment || doc.ID != req.PlanID {
				return a, fmt.Errorf("policy request: the plan document is plan %s of %s, not plan %s of %s", doc.ID, doc.Deployment, req.PlanID, req.Deployment)
			}
		}
	case verdict.Push:
		r = &run.Run{}
		if decode = json.Unmarshal(req.Run, r); decode == nil {
			decode = json.Unmarshal(req.Bundle, &bv)
		}
		if decode == nil && (r.Deployment != req.Deployment || r.ID != req.RunID) {
			return a, fmt.Errorf("policy request: the run is run %s of %s, not run %s of %s", r.ID, r.Deployment, req.RunID, req.Deployment)
		}
	default:
		return a, fmt.Errorf("policy request: kind %q: judge a plan or a push", req.Kind)
	}
	if decode != nil {
		return a, fmt.Errorf("policy request of %s: %w", req.Deployment, decode)
	}
	b, cfg, err := j.bundle(ctx, req.Deployment, bv, at)
	if err != nil {
		return a, err
	}
	src := policy.Source{}
	for _, s := range cfg.Stacks {
		src[s.Name] = s
	}
	if doc != nil {
		in = policy.FromPlan(doc, src, at)
	} else {
		in = policy.FromRun(r, bv, src, at)
	}
	team, objs, err := j.team(ctx)
	a.Source.Objects = objs
	if err != nil {
		return a, err
	}
	sets := []policy.Set{team}
	if cfg.Policies != "" {
		sub, err := fs.Sub(b.FS, cfg.Policies)
		if err != nil {
			return a, fmt.Errorf("bundle policies %s: %w", cfg.Policies, err)
		}
		bs, err := policy.Load(sub, cfg.Policies, policy.Bundle)
		if err != nil {
			return a, err
		}
		a.Source.BundleDir, a.Source.BundleFiles = cfg.Policies, len(bs.Modules)+len(bs.Tests)
		sets = append(sets, bs)
	}
	e, err := policy.Compile(ctx, sets...)
	if err != nil {
		return a, err
	}
	rs, err := e.Evaluate(ctx, in)
	if err != nil {
		return a, err
	}
	a.Results = append(a.Results, rs...)
	return a, nil
}

// bundle reads exactly the version of the upload judged, checks it is the one the
// deployer recorded (its sha256), and loads its config: the templates policies judge.
func (j *Judge) bundle(ctx context.Context, deployment string, bv plan.BundleVersion, at time.Time) (*bundle.Bundle, *config.Config, error) {
	if bv.Bucket != j.cfg.Bucket {
		return nil, nil, fmt.Errorf("policy request: bundle s3://%s/%s is not in cairn's bucket %s", bv.Bucket, bv.Key, j.cfg.Bucket)
	}
	version := bv.VersionID
	if version == "null" {
		version = ""
	}
	o, err := objects.Get(ctx, j.s3, bv.Bucket, bv.Key, version, bundle.MaxZipSize)
	if err != nil {
		return nil, nil, fmt.Errorf("policy: the bundle judged: %w", err)
	}
	if bv.SHA256 != "" && rundoc.Sum(o.Body) != bv.SHA256 {
		return nil, nil, fmt.Errorf("policy: bundle %s version %s has sha256 %s, not %s as the run recorded: push it again", bucket.URI(bv.Bucket, bv.Key), bv.VersionID, rundoc.Sum(o.Body), bv.SHA256)
	}
	b, err := bundle.FromZip(o.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("policy: bundle %s: %w", bucket.URI(bv.Bucket, bv.Key), err)
	}
	cfg, err := config.LoadOptions{Deployment: deployment, Bucket: j.cfg.Bucket, Today: at.UTC().Format(time.DateOnly)}.Load(b)
	if err != nil {
		return nil, nil, fmt.Errorf("policy: bundle %s: %w", bucket.URI(bv.Bucket, bv.Key), err)
	}
	return b, cfg, nil
}

// team reads the team's policies: every .rego and .json object under policies/ of
// cairn's bucket, each with the version and ETag it was read at.
func (j *Judge) team(ctx context.Context) (policy.Set, []verdict.Object, error) {
	keys, err := objects.List(ctx, j.s3, j.cfg.Bucket, bucket.PoliciesPrefix)
	if err != nil {
		return policy.Set{}, nil, fmt.Errorf("team policies: %w", err)
	}
	// Named by their keys (policies/s3.rego) in messages; the answer's Source names the bucket.
	b := policy.NewBuilder(strings.TrimSuffix(bucket.PoliciesPrefix, "/"), policy.Team)
	var objs []verdict.Object
	for _, k := range keys {
		if !bucket.PolicyFile(k) {
			continue
		}
		o, err := objects.Get(ctx, j.s3, j.cfg.Bucket, k, "", policy.MaxBytes)
		if errors.Is(err, objects.ErrNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return policy.Set{}, objs, fmt.Errorf("team policies: %w", err)
		}
		objs = append(objs, verdict.Object{Key: k, VersionID: o.VersionID, ETag: o.ETag})
		if err := b.Add(strings.TrimPrefix(k, bucket.PoliciesPrefix), o.Body); err != nil {
			return policy.Set{}, objs, err
		}
	}
	return b.Set(), objs, nil
}
