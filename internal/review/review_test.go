package review_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal/s3local"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/review"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func planDoc(id string, status plan.Status, created time.Time, generation int64, version string) *plan.Document {
	return &plan.Document{ID: id, Deployment: "shop", Namespace: "shop", GraphKey: "shop", Status: status, CreatedAt: created,
		Generation: generation, Bundle: plan.BundleVersion{Bucket: "cairn", Key: "plans/shop.zip", VersionID: version}, Run: &run.Run{ID: id}}
}

// TestClassify: a plan's status as a reviewer reads it, from its document and the
// persistent graph: plans of other changes coexist, and a plan is stale only once a stack
// it changes, or one whose outputs such a stack consumes, changed after it was made.
func TestClassify(t *testing.T) {
	now := t0.Add(time.Hour)
	week := 7 * 24 * time.Hour
	applied := planDoc("p", plan.Applied, t0, 3, "v1")
	applied.AppliedBy, applied.AppliedAt = "20261130-081000-abcd", t0.Add(10*time.Minute)
	open := func() *plan.Document {
		p := planDoc("p", plan.Planned, t0, 3, "v1")
		p.Bundle.Source = provenance.Source{PullRequest: 22}
		p.Stacks = []plan.Stack{
			{Name: "jobs", Action: plan.Update, Consumed: map[string]string{"network::VpcId": "vpc-1"}},
			{Name: "api", Action: plan.None},
		}
		return p
	}
	graph := func(changed ...string) *state.Graph {
		g := &state.Graph{Stacks: map[string]*state.Stack{}}
		for _, name := range []string{"jobs", "api", "network"} {
			g.Stacks[name] = &state.Stack{Name: name, ChangedBy: "push (run R0)", ChangedAt: t0.Add(-time.Hour)}
		}
		for _, name := range changed {
			g.Stacks[name].ChangedBy, g.Stacks[name].ChangedAt = "pull request #21, plan P21 (run R9)", t0.Add(3*time.Minute)
		}
		return g
	}
	tests := []struct {
		name     string
		plan     *plan.Document
		observed review.Observed
		want     review.Status
		why      string
	}{
		{"open and fresh", open(), review.Observed{Now: now, TTL: week, Graph: graph()}, review.Planned, ""},
		{"another pull request changed a stack it leaves alone", open(), review.Observed{Now: now, TTL: week, Graph: graph("api")}, review.Planned, ""},
		{"another pull request changed the stack it changes", open(), review.Observed{Now: now, TTL: week, Graph: graph("jobs")}, review.Stale,
			"the plan of pull request #22 (p) for stack jobs went stale when pull request #21, plan P21 (run R9) changed it at 08:03"},
		{"another pull request changed what it consumes", open(), review.Observed{Now: now, TTL: week, Graph: graph("network")}, review.Stale,
			"the plan of pull request #22 (p) for stack jobs went stale when pull request #21, plan P21 (run R9) changed stack network, whose outputs it consumes, at 08:03"},
		{"another pull request changed what it consumes, not the output it reads", open(), review.Observed{Now: now, TTL: week, Graph: func() *state.Graph {
			g := graph("network")
			g.Stacks["network"].Outputs = map[string]string{"VpcId": "vpc-1", "Other": "changed"}
			return g
		}()}, review.Planned, ""},
		{"another pull request changed the output it reads", open(), review.Observed{Now: now, TTL: week, Graph: func() *state.Graph {
			g := graph("network")
			g.Stacks["network"].Outputs = map[string]string{"VpcId": "vpc-2"}
			return g
		}()}, review.Stale, "the plan of pull request #22 (p) for stack jobs went stale when pull request #21, plan P21 (run R9) changed stack network, whose outputs it consumes, at 08:03"},
		{"applied", applied, review.Observed{Now: now, TTL: week}, review.Applied, "applied at 2026-11-30T08:10:00Z by run 20261130-081000-abcd"},
		{"expired by age", planDoc("p", plan.Planned, t0.Add(-8*24*time.Hour), 3, "v1"), review.Observed{Now: now, TTL: week},
			review.Expired, "made 8d ago; plans stay approvable for 7d"},
		{"an approval was refused", planDoc("p", plan.Planned, t0, 3, "v1"), review.Observed{Now: now, TTL: week,
			Refusals: []string{"stack shop-db (shop-db): its change set cairn-1 no longer exists"}},
			review.Stale, "an approval was refused: stack shop-db (shop-db): its change set cairn-1 no longer exists"},
		{"no graph known", open(), review.Observed{Now: now, TTL: week}, review.Planned, ""},
		{"superseded by the deployer", func() *plan.Document {
			p := planDoc("p", plan.Superseded, t0, 3, "v1")
			p.Reason = "pull request #7 was planned again as plan q"
			return p
		}(), review.Observed{Now: now, TTL: week}, review.Superseded, "pull request #7 was planned again as plan q"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := review.Classify(tt.plan, tt.observed)
			if got != tt.want || why != tt.why {
				t.Fatalf("Classify = %s (%q), want %s (%q)", got, why, tt.want, tt.why)
			}
		})
	}
	// Approving the plan whose untouched stack another pull request changed would undo
	// that change: refused, pointing at `cairn apply` of the merged content.
	e := review.Entry{Plan: open(), Status: review.Planned, Graph: graph("api")}
	err := e.Approvable(nil)
	if err == nil || !strings.Contains(err.Error(), "for stack api leaves it as it was, and its content would undo the change: it went stale when pull request #21, plan P21 (run R9) changed it at 08:03") ||
		!strings.Contains(err.Error(), "apply the merged content instead (`cairn apply PATH --deployment shop`)") {
		t.Errorf("Approvable = %v", err)
	}
	if err := (review.Entry{Plan: open(), Status: review.Planned, Graph: graph()}).Approvable(nil); err != nil {
		t.Errorf("Approvable of a fresh plan = %v", err)
	}
}

// TestAlreadyApplied: content whose bundle the graph records as applied has nothing to
// apply.
func TestAlreadyApplied(t *testing.T) {
	g := &state.Graph{Bundle: state.BundleRef{SHA256: "feed"}}
	if !review.AlreadyApplied(g, "feed") || review.AlreadyApplied(g, "beef") || review.AlreadyApplied(nil, "feed") || review.AlreadyApplied(&state.Graph{}, "") {
		t.Error("AlreadyApplied")
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{42 * time.Second: "42s", 5*time.Minute + 3*time.Second: "5m", 3 * time.Hour: "3h", 47 * time.Hour: "47h", 50 * time.Hour: "2d"} {
		if got := review.Age(d); got != want {
			t.Errorf("Age(%s) = %q, want %q", d, got, want)
		}
	}
}

// world is a versioned bucket "cairn" with deployment shop's plans and runs.
type world struct {
	s3     *s3.Client
	reader *review.Reader
}

func newWorld(t *testing.T) *world {
	t.Helper()
	svc, err := s3local.New(s3local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	cfg, err := config.LoadDefaultConfig(context.Background(), awsclient.WithSafeBodies(), config.WithRegion("us-east-1"), config.WithBaseEndpoint(srv.URL),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired), config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	if err != nil {
		t.Fatal(err)
	}
	c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("cairn")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("cairn"),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	return &world{s3: c, reader: &review.Reader{
		History: &history.Store{S3: c, Bucket: "cairn"}, State: &statestore.Store{S3: c, Bucket: "cairn"},
		Clock: clock.NewFake(t0.Add(time.Hour)),
	}}
}

func (w *world) put(t *testing.T, key string, v any) string {
	t.Helper()
	body, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := w.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("cairn"), Key: aws.String(key), Body: bytes.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.VersionId)
}

// graphAt writes shop/shop's graph until it is at generation n.
func (w *world) graphAt(t *testing.T, n int) {
	t.Helper()
	ctx := context.Background()
	store := &statestore.Store{S3: w.s3, Bucket: "cairn"}
	for i := 0; i < n; i++ {
		l, err := store.Acquire(ctx, "shop", "shop", "run", statestore.Owner{Function: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Read(ctx, l); err != nil && !errors.Is(err, statestore.ErrNotFound) {
			t.Fatal(err)
		}
		if err := store.Write(ctx, l, &state.Graph{Stacks: map[string]*state.Stack{}}); err != nil {
			t.Fatal(err)
		}
		if err := store.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReader(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.graphAt(t, 2)
	v1 := w.put(t, "plans/shop.zip", "bundle 1")
	v2 := w.put(t, "plans/shop.zip", "bundle 2")
	applied := planDoc("20261130-080000-aaaa", plan.Applied, t0, 1, v1)
	applied.AppliedBy, applied.AppliedAt = "20261130-081000-bbbb", t0.Add(10*time.Minute)
	refused := planDoc("20261130-082000-cccc", plan.Planned, t0.Add(20*time.Minute), 2, v2)
	open := planDoc("20261130-083000-dddd", plan.Planned, t0.Add(30*time.Minute), 2, v2)
	for _, p := range []*plan.Document{applied, refused, open} {
		w.put(t, layout.PlanKey("shop", p.ID), p)
	}
	// A refused approval of the second plan (it executed nothing).
	w.put(t, layout.RunKey("shop", "20261130-084000-eeee"), &rundoc.Document{
		Run:  &run.Run{ID: "20261130-084000-eeee", Deployment: "shop", Mode: run.ModeDeploy, Status: run.RunFailed, Stacks: map[string]*run.Stack{}},
		Plan: refused.ID, Refusals: []string{"stack shop-db: change set cairn-1 no longer exists (deleted after plan 08:20): re-plan"},
	})

	entries, err := w.reader.List(ctx, "shop", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Plan.ID+" "+string(e.Status)+" "+review.Age(e.Age))
	}
	want := []string{"20261130-083000-dddd planned 30m", "20261130-082000-cccc stale 40m", "20261130-080000-aaaa applied 1h"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("List:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	tests := []struct {
		id      string
		wantErr string
	}{
		{open.ID, ""},
		{applied.ID, "plan 20261130-080000-aaaa was already applied at 2026-11-30T08:10:00Z by run 20261130-081000-bbbb: a plan applies at most once; approve the newest plan instead: `cairn approve shop 20261130-083000-dddd`"},
		{refused.ID, "plan 20261130-082000-cccc is stale (an approval was refused: stack shop-db: change set cairn-1 no longer exists (deleted after plan 08:20): re-plan): approve the newest plan instead: `cairn approve shop 20261130-083000-dddd`"},
	}
	for _, tt := range tests {
		e, err := w.reader.Get(ctx, "shop", tt.id)
		if err != nil {
			t.Fatal(err)
		}
		err = e.Approvable(entries)
		if (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
			t.Errorf("Approvable(%s) = %v, want %q", tt.id, err, tt.wantErr)
		}
	}

	_, err = w.reader.Get(ctx, "shop", "nope")
	var unknown *review.UnknownPlanError
	wantMsg := "deployment shop has no plan nope; its recent plans: 20261130-083000-dddd (planned, 30m ago), 20261130-082000-cccc (stale, 40m ago), 20261130-080000-aaaa (applied, 1h ago) (see `cairn plans shop`)"
	if !errors.As(err, &unknown) || err.Error() != wantMsg {
		t.Fatalf("Get(nope) = %v, want %q", err, wantMsg)
	}
	_, err = w.reader.Get(ctx, "web", "nope")
	if err == nil || err.Error() != "deployment web has no plan nope, and no plans at all: make one with `cairn plan PATH --deployment web`" {
		t.Fatalf("Get of a deployment without plans = %v", err)
	}
}

// TestForCommit: plans are found by the commit they were made from, or a pull request's
// head.
func TestForCommit(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.graphAt(t, 2)
	v1 := w.put(t, "plans/shop.zip", "bundle 1")
	v2 := w.put(t, "plans/shop.zip", "bundle 2")
	pr := provenance.Source{Commit: "0123456789abcdef0123456789abcdef01234567", Ref: "refs/pull/7/merge", PullRequest: 7, HeadCommit: "89abcdef0123456789abcdef0123456789abcdef"}
	older := planDoc("20261130-080000-aaaa", plan.Planned, t0, 2, v1)
	applied := planDoc("20261130-081000-bbbb", plan.Applied, t0.Add(10*time.Minute), 1, v1)
	applied.AppliedBy, applied.AppliedAt = "20261130-082000-cccc", t0.Add(20*time.Minute)
	applied.Bundle.GitRef = "fedcba9876543210fedcba9876543210fedcba98"
	newest := planDoc("20261130-083000-dddd", plan.Planned, t0.Add(30*time.Minute), 2, v2)
	newest.Bundle.Source, newest.Bundle.GitRef = pr, pr.Commit
	for _, p := range []*plan.Document{older, applied, newest} {
		w.put(t, layout.PlanKey("shop", p.ID), p)
	}
	for _, tt := range []struct {
		sha  string
		want []string
	}{
		{"0123456", []string{newest.ID}},
		{"89ABCDEF0123", []string{newest.ID}},
		{"fedcba98765", []string{applied.ID}},
		{"7777777", nil},
	} {
		entries, err := w.reader.ForCommit(ctx, "shop", tt.sha, 0)
		var got []string
		for _, e := range entries {
			got = append(got, e.Plan.ID)
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ForCommit(%s) = %v, %v; want %v", tt.sha, got, err, tt.want)
		}
	}
	if _, err := w.reader.ForCommit(ctx, "shop", "0123", 0); err == nil {
		t.Error("ForCommit accepted a 4-digit commit")
	}
}
