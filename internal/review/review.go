// Package review answers what a person reviewing plans asks before approving one: which
// plans a deployment has, what became of each (planned, applied, stale, superseded,
// expired, failed) and how old it is, and whether a given plan can still be approved.
//
// The deployer is the authority: an approval it finds stale executes nothing. Checking
// here first lets `cairn approve` refuse at once, before it writes anything, with the
// reason and what to do instead.
package review

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
)

// Status is what became of a plan, as a reviewer needs to know it.
type Status string

const (
	Planned    Status = "planned"    // waiting for approval, and still approvable
	Applied    Status = "applied"    // an approval applied it (or is applying it)
	Stale      Status = "stale"      // what it was made against changed: it can never apply
	Superseded Status = "superseded" // a newer bundle was planned or pushed
	Expired    Status = "expired"    // older than the plan TTL
	Failed     Status = "failed"     // the plan run failed: nothing to apply
)

// Observed is what, beside its document, decides a plan's status.
type Observed struct {
	Now time.Time
	// TTL is how long a plan stays approvable.
	TTL time.Duration
	// Generation is the persistent graph's generation now (0: no graph); negative when
	// unknown.
	Generation int64
	// LatestBundle is the newest version id of the plan's bundle key, "" when unknown.
	LatestBundle string
	// Refusals are those of an approval of the plan that the deployer refused.
	Refusals []string
}

// Classify says what became of plan p, and why in words. It is pure: the deployer's
// freshness rules (plan.Document.Lapsed and StaleReasons), as far as they can be told
// without CloudFormation, as one status a reviewer reads.
func Classify(p *plan.Document, o Observed) (Status, string) {
	switch p.Status {
	case plan.Applying:
		return Applied, fmt.Sprintf("being applied by run %s since %s", p.AppliedBy, stamp(p.AppliedAt))
	case plan.Applied:
		return Applied, fmt.Sprintf("applied at %s by run %s", stamp(p.AppliedAt), p.AppliedBy)
	case plan.PlanFailed:
		return Failed, p.Reason
	case plan.Superseded:
		return Superseded, p.Reason
	case plan.Expired:
		return Expired, p.Reason
	}
	if age := o.Now.Sub(p.CreatedAt); o.TTL > 0 && age > o.TTL {
		return Expired, fmt.Sprintf("made %s ago; plans stay approvable for %s", Age(age), Age(o.TTL))
	}
	if o.Generation >= 0 && o.Generation != p.Generation {
		return Stale, fmt.Sprintf("the persistent graph %s/%s is at generation %d, the plan was made at %d: another run applied since", p.Namespace, p.GraphKey, o.Generation, p.Generation)
	}
	if p.Versioned() && o.LatestBundle != "" && o.LatestBundle != p.Bundle.VersionID {
		return Superseded, fmt.Sprintf("a newer bundle was uploaded to s3://%s/%s since", p.Bundle.Bucket, p.Bundle.Key)
	}
	if len(o.Refusals) > 0 {
		return Stale, "an approval was refused: " + strings.Join(o.Refusals, "; ")
	}
	return Planned, ""
}

// Entry is one plan with its status.
type Entry struct {
	Plan   *plan.Document
	Status Status
	Why    string
	Age    time.Duration
}

// Reader reads plans and what decides their status from cairn's bucket.
type Reader struct {
	History *history.Store
	State   *state.Store
	// S3 finds the newest version of a plan's bundle.
	S3 interface {
		HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	}
	// TTL defaults to the deployer's, plan.DefaultTTL.
	TTL   time.Duration
	Clock clock.Clock

	// refused caches, per deployment, the refused approvals of its newest runs: a Reader
	// answers one command, which may ask about several plans.
	refused map[string]map[string][]string
}

// runWindow is how many of a deployment's newest runs are read for refused approvals.
const runWindow = 20

// refusedOf returns the refusals of deployment's recently refused approvals, by plan id.
func (r *Reader) refusedOf(ctx context.Context, deployment string) (map[string][]string, error) {
	if m, ok := r.refused[deployment]; ok {
		return m, nil
	}
	runs, err := r.History.Runs(ctx, deployment, runWindow)
	if err != nil {
		return nil, err
	}
	if r.refused == nil {
		r.refused = map[string]map[string][]string{}
	}
	r.refused[deployment] = refusedApprovals(runs)
	return r.refused[deployment], nil
}

// List returns the newest at most limit plans of deployment (all when limit <= 0), newest
// first, each with its status.
func (r *Reader) List(ctx context.Context, deployment string, limit int) ([]Entry, error) {
	return r.find(ctx, deployment, limit, func(*plan.Document) bool { return true })
}

// Get returns one plan with its status; an *UnknownPlanError when deployment has no plan
// of that id.
func (r *Reader) Get(ctx context.Context, deployment, id string) (Entry, error) {
	p, err := r.History.Plan(ctx, deployment, id)
	if errors.Is(err, history.ErrNotFound) {
		recent, lerr := r.List(ctx, deployment, 5)
		if lerr != nil {
			return Entry{}, lerr
		}
		return Entry{}, &UnknownPlanError{Deployment: deployment, ID: id, Recent: recent}
	}
	if err != nil {
		return Entry{}, err
	}
	refused, err := r.refusedOf(ctx, deployment)
	if err != nil {
		return Entry{}, err
	}
	return r.observer().entry(ctx, p, refused[id])
}

// observer caches what several plans of a deployment share: the graph's generation and
// the newest bundle versions.
type observer struct {
	r           *Reader
	now         time.Time
	generations map[string]int64
	latest      map[string]string
}

func (r *Reader) observer() *observer {
	clk := r.Clock
	if clk == nil {
		clk = clock.Real
	}
	return &observer{r: r, now: clk.Now(), generations: map[string]int64{}, latest: map[string]string{}}
}

func (o *observer) entry(ctx context.Context, p *plan.Document, refusals []string) (Entry, error) {
	obs := Observed{Now: o.now, TTL: o.r.TTL, Generation: -1, Refusals: refusals}
	if obs.TTL <= 0 {
		obs.TTL = plan.DefaultTTL
	}
	if p.Status == plan.Planned {
		// Only an open plan's status depends on what changed since.
		var err error
		if obs.Generation, err = o.generation(ctx, p.Namespace, p.GraphKey); err != nil {
			return Entry{}, err
		}
		if obs.LatestBundle, err = o.latestBundle(ctx, p.Bundle.Bucket, p.Bundle.Key); err != nil {
			return Entry{}, err
		}
	}
	status, why := Classify(p, obs)
	return Entry{Plan: p, Status: status, Why: why, Age: max(0, o.now.Sub(p.CreatedAt))}, nil
}

func (o *observer) generation(ctx context.Context, namespace, key string) (int64, error) {
	if namespace == "" {
		return -1, nil
	}
	k := namespace + "/" + key
	if g, ok := o.generations[k]; ok {
		return g, nil
	}
	g, err := o.r.State.Show(ctx, namespace, key, "")
	gen := int64(0)
	switch {
	case errors.Is(err, state.ErrNotFound):
	case err != nil:
		return 0, err
	default:
		gen = g.Generation
	}
	o.generations[k] = gen
	return gen, nil
}

func (o *observer) latestBundle(ctx context.Context, bucket, key string) (string, error) {
	if bucket == "" || key == "" {
		return "", nil
	}
	k := bucket + "/" + key
	if v, ok := o.latest[k]; ok {
		return v, nil
	}
	out, err := o.r.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	v := ""
	switch {
	case awsclient.NotFound(err):
	case err != nil:
		return "", fmt.Errorf("read s3://%s/%s: %w", bucket, key, err)
	default:
		v = aws.ToString(out.VersionId)
	}
	o.latest[k] = v
	return v, nil
}

// refusedApprovals maps plan ids to the refusals of their apply runs that the deployer
// refused before they changed anything.
func refusedApprovals(runs []*rundoc.Document) map[string][]string {
	out := map[string][]string{}
	for _, d := range runs {
		if history.KindOf(d) == history.Apply && !history.Acted(d) && len(d.Refusals) > 0 {
			out[d.Plan] = d.Refusals
		}
	}
	return out
}

// UnknownPlanError says a plan id names no plan of the deployment, with its recent plans.
type UnknownPlanError struct {
	Deployment, ID string
	Recent         []Entry
}

func (e *UnknownPlanError) Error() string {
	if len(e.Recent) == 0 {
		return fmt.Sprintf("deployment %s has no plan %s, and no plans at all: make one with `cairn plan PATH --deployment %s`", e.Deployment, e.ID, e.Deployment)
	}
	var recent []string
	for _, r := range e.Recent {
		recent = append(recent, fmt.Sprintf("%s (%s, %s ago)", r.Plan.ID, r.Status, Age(r.Age)))
	}
	return fmt.Sprintf("deployment %s has no plan %s; its recent plans: %s (see `cairn plans %s`)", e.Deployment, e.ID, strings.Join(recent, ", "), e.Deployment)
}

// Approvable returns nil when e can be approved, or why not and what to do instead.
// newest is the deployment's plans, newest first, to point at one that can be.
func (e Entry) Approvable(newest []Entry) error {
	p := e.Plan
	replan := fmt.Sprintf("make a new one with `cairn plan PATH --deployment %s`", p.Deployment)
	for _, n := range newest {
		if n.Status == Planned && n.Plan.ID != p.ID {
			replan = fmt.Sprintf("approve the newest plan instead: `cairn approve %s %s`", p.Deployment, n.Plan.ID)
			break
		}
	}
	switch e.Status {
	case Planned:
		return nil
	case Applied:
		return fmt.Errorf("plan %s was already %s: a plan applies at most once; %s", p.ID, e.Why, replan)
	case Failed:
		return fmt.Errorf("plan %s failed (%s): there is nothing to apply; fix the bundle and %s", p.ID, e.Why, replan)
	}
	return fmt.Errorf("plan %s is %s (%s): %s", p.ID, e.Status, e.Why, replan)
}

// Age is a duration as a person reads an age: 42s, 5m, 3h, 2d.
func Age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
