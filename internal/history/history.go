// Package history reads what a deployment's runs and plans recorded in cairn's bucket:
// their documents, newest first, and what kind of run each one was. The command-line tool
// answers "what happened, and what is deployed" from here; it never writes.
package history

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
)

// ErrNotFound says a run or plan document does not exist (it is the bucket layout's).
var ErrNotFound = objects.ErrNotFound

// S3API is the part of the S3 client history reads with.
type S3API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// Store reads the documents of cairn's bucket.
type Store struct {
	S3     S3API
	Bucket string
}

// RunIDs lists the ids of deployment's runs, newest first (run ids start with their time).
func (s *Store) RunIDs(ctx context.Context, deployment string) ([]string, error) {
	keys, err := objects.List(ctx, s.S3, s.Bucket, layout.RunsOf(deployment))
	if err != nil {
		return nil, fmt.Errorf("runs of %s: %w", deployment, err)
	}
	return newestFirst(keys, func(k string) (string, bool) { return layout.RunIDOf(deployment, k) }), nil
}

// PlanIDs lists the ids of deployment's plans, newest first (a plan's id is its plan run's).
func (s *Store) PlanIDs(ctx context.Context, deployment string) ([]string, error) {
	keys, err := objects.List(ctx, s.S3, s.Bucket, layout.PlansOf(deployment))
	if err != nil {
		return nil, fmt.Errorf("plans of %s: %w", deployment, err)
	}
	return newestFirst(keys, func(k string) (string, bool) { return layout.PlanIDOf(deployment, k) }), nil
}

func newestFirst(keys []string, id func(string) (string, bool)) []string {
	var ids []string
	for _, k := range keys {
		if v, ok := id(k); ok {
			ids = append(ids, v)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	return ids
}

// Run reads one run document; ErrNotFound when it does not exist.
func (s *Store) Run(ctx context.Context, deployment, id string) (*rundoc.Document, error) {
	body, err := s.get(ctx, layout.RunKey(deployment, id))
	if err != nil {
		return nil, fmt.Errorf("run %s of deployment %s: %w", id, deployment, err)
	}
	doc, err := rundoc.DecodeDocument(body)
	if err != nil {
		return nil, fmt.Errorf("run %s of deployment %s: %s: %w", id, deployment, layout.URI(s.Bucket, layout.RunKey(deployment, id)), err)
	}
	return doc, nil
}

// Plan reads one plan document; ErrNotFound when it does not exist.
func (s *Store) Plan(ctx context.Context, deployment, id string) (*plan.Document, error) {
	body, err := s.get(ctx, layout.PlanKey(deployment, id))
	if err != nil {
		return nil, fmt.Errorf("plan %s of deployment %s: %w", id, deployment, err)
	}
	p, err := plan.Decode(body)
	if err != nil {
		return nil, fmt.Errorf("plan %s of deployment %s: %s: %w", id, deployment, layout.URI(s.Bucket, layout.PlanKey(deployment, id)), err)
	}
	return p, nil
}

// Runs reads the newest at most n runs of deployment (every run when n <= 0), newest
// first. A document that cannot be read is skipped: a run being written is read next time.
func (s *Store) Runs(ctx context.Context, deployment string, n int) ([]*rundoc.Document, error) {
	ids, err := s.RunIDs(ctx, deployment)
	if err != nil {
		return nil, err
	}
	if n > 0 && len(ids) > n {
		ids = ids[:n]
	}
	var docs []*rundoc.Document
	for _, id := range ids {
		doc, err := s.Run(ctx, deployment, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
	return docs, nil
}

// documentLimit bounds the size of a run or plan document read.
const documentLimit = 16 << 20

func (s *Store) get(ctx context.Context, key string) ([]byte, error) {
	o, err := objects.Get(ctx, s.S3, s.Bucket, key, "", documentLimit)
	if err != nil {
		return nil, err
	}
	return o.Body, nil
}

// Kind is what a run was for.
type Kind string

const (
	// Push: a deploy run of an upload to deployments/NAME.zip.
	Push Kind = "push"
	// PlanRun: a plan run of an upload to plans/NAME.zip; it executes nothing.
	PlanRun Kind = "plan"
	// Apply: the apply run of an approved plan, or of a bundle's content (cairn apply).
	Apply Kind = "apply"
)

// KindOf tells plan runs from apply runs and pushes.
func KindOf(doc *rundoc.Document) Kind {
	switch {
	case doc.Run.Mode == run.ModePlan:
		return PlanRun
	case doc.Plan != "" || doc.Content:
		return Apply
	}
	return Push
}

// Acted reports whether a run got as far as its stacks: it was not superseded, refused
// or stopped by config errors before it changed or checked anything.
func Acted(doc *rundoc.Document) bool {
	if doc.Run.Status == run.Superseded {
		return false
	}
	for _, s := range doc.Run.Stacks {
		if s.Phase != run.Blocked && s.Phase != run.Pending {
			return true
		}
	}
	return false
}

// Deployed returns the newest run, among docs (newest first), that stands for what is
// deployed: a push or an apply that acted on its stacks. Plan runs, superseded uploads
// and refused approvals change nothing and are passed over. nil when there is none.
func Deployed(docs []*rundoc.Document) *rundoc.Document {
	for _, d := range docs {
		if KindOf(d) != PlanRun && Acted(d) {
			return d
		}
	}
	return nil
}

// Behind returns, among docs (newest first), the newest push or apply of a bundle's
// content (what was last pushed or merged) when the graph g does not record its content as
// applied (Graph.Bundle): the deployment's applied content is behind it, because that run
// was refused, failed or is still running. nil when g is up to date with it (or there is
// no such run), or when a newer approval of a plan applied what g records: content pushed
// before a plan of newer content was approved is not what the deployment is behind.
func Behind(docs []*rundoc.Document, g *state.Graph) *rundoc.Document {
	for _, d := range docs {
		if d.Plan != "" && d.Run.Status == run.Succeeded && g != nil && d.Bundle.SHA256 != "" && g.Bundle.SHA256 == d.Bundle.SHA256 {
			return nil // an approved plan applied the graph's content after what came before
		}
		if KindOf(d) == PlanRun || d.Plan != "" || d.Run.Status == run.Superseded {
			continue // plans and approvals of one plan are not what was pushed or merged
		}
		if d.Bundle.SHA256 == "" || g != nil && g.Bundle.SHA256 == d.Bundle.SHA256 {
			return nil
		}
		return d
	}
	return nil
}

// ErrNothingDeployed says a deployment has no run that got as far as loading its config,
// so it has no graph yet.
var ErrNothingDeployed = errors.New("nothing was deployed yet")

// Graph returns the namespace and graph key of deployment's persistent graph, as its
// newest run that loaded a config recorded them.
func (s *Store) Graph(ctx context.Context, deployment string) (namespace, key string, err error) {
	ids, err := s.RunIDs(ctx, deployment)
	if err != nil {
		return "", "", err
	}
	for _, id := range ids {
		doc, err := s.Run(ctx, deployment, id)
		if err == nil && doc.Namespace != "" {
			return doc.Namespace, doc.GraphKey, nil
		}
	}
	if len(ids) == 0 {
		return "", "", fmt.Errorf("deployment %s has no runs in s3://%s: %w (push a bundle with `cairn push PATH --deployment %s`)", deployment, s.Bucket, ErrNothingDeployed, deployment)
	}
	return "", "", fmt.Errorf("deployment %s has no run that loaded its config in s3://%s: %w", deployment, s.Bucket, ErrNothingDeployed)
}

// GraphKey names a persistent graph.
type GraphKey struct{ Namespace, Key string }

// Graphs lists the persistent graphs in the bucket, in key order.
func (s *Store) Graphs(ctx context.Context) ([]GraphKey, error) {
	keys, err := objects.List(ctx, s.S3, s.Bucket, layout.StatePrefix)
	if err != nil {
		return nil, fmt.Errorf("persistent graphs: %w", err)
	}
	var out []GraphKey
	for _, k := range keys {
		if ns, key, ok := layout.ParseStateKey(k); ok {
			out = append(out, GraphKey{Namespace: ns, Key: key})
		}
	}
	return out, nil
}
