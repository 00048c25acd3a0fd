package history_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal/s3local"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
)

// bucket serves the emulator's S3 with one bucket and returns a client of it.
func bucket(t *testing.T) *s3.Client {
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
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("cairn")}); err != nil {
		t.Fatal(err)
	}
	return c
}

func put(t *testing.T, c *s3.Client, key string, v any) {
	t.Helper()
	body, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("cairn"), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

// doc is a run document with one stack in phase.
func doc(id string, mode run.Mode, planID string, status run.Status, phase run.Phase) *rundoc.Document {
	t0 := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	return &rundoc.Document{
		Run: &run.Run{ID: id, Deployment: "shop", Mode: mode, Status: status, StartedAt: t0,
			Stacks: map[string]*run.Stack{"db": {Name: "db", StackName: "shop-db", Phase: phase}}},
		Plan: planID,
	}
}

func TestStore(t *testing.T) {
	c := bucket(t)
	ctx := context.Background()
	for _, d := range []*rundoc.Document{
		doc("20261130-080000-aaaa", run.ModeDeploy, "", run.Succeeded, run.Done),
		doc("20261130-090000-bbbb", run.ModePlan, "", run.Succeeded, run.Ready),
		doc("20261130-083000-cccc", run.ModeDeploy, "20261130-090000-bbbb", run.RunFailed, run.Blocked),
	} {
		put(t, c, layout.RunKey("shop", d.Run.ID), d)
	}
	put(t, c, layout.RunReportKey("shop", "20261130-080000-aaaa"), "a report, not a run")
	put(t, c, layout.RunKey("shopping", "20261130-100000-dddd"), doc("20261130-100000-dddd", run.ModeDeploy, "", run.Succeeded, run.Done))
	put(t, c, layout.PlanKey("shop", "20261130-090000-bbbb"), &plan.Document{ID: "20261130-090000-bbbb", Deployment: "shop", Status: plan.Planned, Run: &run.Run{}})
	s := &history.Store{S3: c, Bucket: "cairn"}

	ids, err := s.RunIDs(ctx, "shop")
	if want := []string{"20261130-090000-bbbb", "20261130-083000-cccc", "20261130-080000-aaaa"}; err != nil || !slices.Equal(ids, want) {
		t.Fatalf("RunIDs = %v, %v; want %v (newest first, only shop's, only documents)", ids, err, want)
	}
	docs, err := s.Runs(ctx, "shop", 2)
	if err != nil || len(docs) != 2 || docs[0].Run.ID != "20261130-090000-bbbb" {
		t.Fatalf("Runs(2) = %v, %v", docs, err)
	}
	if plans, err := s.PlanIDs(ctx, "shop"); err != nil || !slices.Equal(plans, []string{"20261130-090000-bbbb"}) {
		t.Fatalf("PlanIDs = %v, %v", plans, err)
	}
	if p, err := s.Plan(ctx, "shop", "20261130-090000-bbbb"); err != nil || p.Status != plan.Planned {
		t.Fatalf("Plan = %v, %v", p, err)
	}
	_, err = s.Plan(ctx, "shop", "nope")
	if !errors.Is(err, history.ErrNotFound) || err.Error() != "plan nope of deployment shop: s3://cairn/plans/shop/nope.json: no such object" {
		t.Fatalf("Plan(nope) error %v", err)
	}
	if _, err := s.Run(ctx, "shop", "nope"); !errors.Is(err, history.ErrNotFound) {
		t.Fatalf("Run(nope) error %v", err)
	}
}

func TestKindAndDeployed(t *testing.T) {
	push := doc("5-push", run.ModeDeploy, "", run.Succeeded, run.Done)
	planRun := doc("4-plan", run.ModePlan, "", run.Succeeded, run.Ready)
	refusedApproval := doc("6-apply", run.ModeDeploy, "4-plan", run.RunFailed, run.Blocked)
	apply := doc("3-apply", run.ModeDeploy, "2-plan", run.Succeeded, run.Done)
	superseded := doc("7-push", run.ModeDeploy, "", run.Superseded, run.Pending)
	failedApply := doc("8-apply", run.ModeDeploy, "4-plan", run.RunFailed, run.Failed)
	tests := []struct {
		name string
		docs []*rundoc.Document // newest first
		want *rundoc.Document
	}{
		{"a refused duplicate approval is not the deployment's state", []*rundoc.Document{refusedApproval, planRun, apply}, apply},
		{"a plan run is not", []*rundoc.Document{planRun, push}, push},
		{"a superseded upload is not", []*rundoc.Document{superseded, refusedApproval, push}, push},
		{"a failed apply that acted is", []*rundoc.Document{failedApply, push}, failedApply},
		{"nothing deployed", []*rundoc.Document{planRun, refusedApproval}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := history.Deployed(tt.docs); got != tt.want {
				t.Fatalf("Deployed() = %v, want %v", got, tt.want)
			}
		})
	}
	for d, want := range map[*rundoc.Document]history.Kind{push: history.Push, planRun: history.PlanRun, apply: history.Apply, refusedApproval: history.Apply} {
		if got := history.KindOf(d); got != want {
			t.Errorf("KindOf(%s) = %s, want %s", d.Run.ID, got, want)
		}
	}
}

func TestGraph(t *testing.T) {
	c := bucket(t)
	ctx := context.Background()
	s := &history.Store{S3: c, Bucket: "cairn"}
	if _, _, err := s.Graph(ctx, "shop"); !errors.Is(err, history.ErrNothingDeployed) ||
		err.Error() != "deployment shop has no runs in s3://cairn: nothing was deployed yet (push a bundle with `cairn push PATH --deployment shop`)" {
		t.Fatalf("Graph of a deployment without runs: %v", err)
	}
	loaded := doc("20261130-080000-aaaa", run.ModeDeploy, "", run.Succeeded, run.Done)
	loaded.Namespace, loaded.GraphKey = "shop", "main"
	put(t, c, layout.RunKey("shop", loaded.Run.ID), loaded)
	// A newer run that failed before it loaded its config names no graph.
	put(t, c, layout.RunKey("shop", "20261130-090000-bbbb"), doc("20261130-090000-bbbb", run.ModeDeploy, "", run.RunFailed, run.Blocked))
	if ns, key, err := s.Graph(ctx, "shop"); err != nil || ns != "shop" || key != "main" {
		t.Fatalf("Graph = %s/%s, %v; want shop/main", ns, key, err)
	}
}

func TestGraphs(t *testing.T) {
	c := bucket(t)
	for _, k := range []string{layout.StateKey("shop", "shop"), layout.StateKey("web", "main"), layout.LockKey("shop", "shop"), layout.RunKey("shop", "r")} {
		put(t, c, k, map[string]string{})
	}
	got, err := (&history.Store{S3: c, Bucket: "cairn"}).Graphs(context.Background())
	if want := []history.GraphKey{{"shop", "shop"}, {"web", "main"}}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("Graphs = %v, %v; want %v", got, err, want)
	}
}
