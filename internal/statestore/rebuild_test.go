package statestore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/state"
)

// fakeCFN serves DescribeStacks (all stacks, pageSize per page, NextToken an offset) the
// way CloudFormation does, so these tests can inject errors and odd tag sets cheaply;
// rebuild_emulator_test.go runs Rebuild against the emulator's CloudFormation.
type fakeCFN struct {
	mu       sync.Mutex
	stacks   []cfntypes.Stack
	pageSize int
	pages    int
	err      error
}

func (f *fakeCFN) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	if in.StackName != nil {
		return nil, fmt.Errorf("fake: DescribeStacks by name is not expected")
	}
	f.pages++
	start := 0
	if in.NextToken != nil {
		var err error
		if start, err = strconv.Atoi(*in.NextToken); err != nil {
			return nil, fmt.Errorf("fake: bad NextToken %q", *in.NextToken)
		}
	}
	end := min(start+f.pageSize, len(f.stacks))
	out := &cloudformation.DescribeStacksOutput{Stacks: f.stacks[start:end]}
	if end < len(f.stacks) {
		out.NextToken = aws.String(strconv.Itoa(end))
	}
	return out, nil
}

// cfnStack is the CloudFormation view of st as the deployer would have left it.
func cfnStack(st *state.Stack, tags map[string]string) cfntypes.Stack {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cs := cfntypes.Stack{
		StackName: aws.String(st.StackName), StackId: aws.String(st.StackID), StackStatus: cfntypes.StackStatus(st.Status),
		CreationTime: aws.Time(st.UpdatedAt.Add(-time.Hour)), LastUpdatedTime: aws.Time(st.UpdatedAt),
	}
	for _, k := range keys {
		cs.Tags = append(cs.Tags, cfntypes.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	outs := make([]string, 0, len(st.Outputs))
	for k := range st.Outputs {
		outs = append(outs, k)
	}
	sort.Strings(outs)
	for _, k := range outs {
		cs.Outputs = append(cs.Outputs, cfntypes.Output{OutputKey: aws.String(k), OutputValue: aws.String(st.Outputs[k])})
	}
	return cs
}

func stackARN(name string) string {
	return "arn:aws:cloudformation:eu-west-1:123456789012:stack/" + name + "/0f1e2d3c-8f0b-11ef-9a2b-" + fmt.Sprintf("%012x", len(name))
}

// bigGraph is a diamond plus a stack requiring 25 long-named stacks, so its dependencies
// span several tags.
func bigGraph() *state.Graph {
	updated := t0.Add(-2 * time.Hour)
	g := &state.Graph{
		Bundle: state.BundleRef{VersionID: "3HL4kqtJlcpXroDTDmJ", SHA256: "9f86d081884c7d659a2feaa0c55ad015", GitRef: "refs/tags/v1.4.0", GitRemote: "git@github.com:example/shop.git"},
		Stacks: map[string]*state.Stack{},
	}
	add := func(name, status string, outputs map[string]string, requires ...string) {
		g.Stacks[name] = &state.Stack{
			Name: name, StackName: "shop-" + name, StackID: stackARN("shop-" + name), Region: "eu-west-1",
			Requires: requires, TemplateHash: "t-" + name, ParametersHash: "p-" + name, Status: status,
			Outputs: outputs, UpdatedAt: updated,
		}
	}
	add("vpc", "CREATE_COMPLETE", map[string]string{"VpcId": "vpc-0abc", "SubnetIds": "subnet-1,subnet-2"})
	add("db", "UPDATE_COMPLETE", map[string]string{"Endpoint": "db.internal:5432"}, "vpc")
	add("cache", "CREATE_COMPLETE", nil, "vpc")
	add("app", "UPDATE_ROLLBACK_COMPLETE", map[string]string{"Url": "https://shop.example.com"}, "cache", "db")
	var many []string
	for i := range 25 {
		name := fmt.Sprintf("service-with-a-rather-long-name-%02d", i)
		add(name, "CREATE_COMPLETE", nil, "vpc")
		many = append(many, name)
	}
	add("edge", "CREATE_COMPLETE", nil, many...)
	for _, st := range g.Stacks {
		st.Tags = state.StackTags("shop", "main", g.Bundle, st)
		st.Tags["team"] = "payments"
	}
	return g
}

func stacksJSON(t *testing.T, g *state.Graph) string {
	t.Helper()
	b, err := json.MarshalIndent(g.Stacks, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDeleteStateThenRebuildFromTags(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.store(nil)

	l, _ := session(t, s, "shop", "main", "run-1")
	orig := bigGraph()
	if err := s.Write(ctx, l, orig); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if n := len(orig.Stacks["edge"].Tags); n < 3 || orig.Stacks["edge"].Tags[state.TagRequires+"-3"] == "" {
		t.Fatalf("edge's 25 dependencies should span 3 tags: %v", orig.Stacks["edge"].Tags)
	}
	for k, v := range orig.Stacks["edge"].Tags {
		if len(v) > 256 {
			t.Errorf("tag %s is %d characters, over CloudFormation's 256", k, len(v))
		}
	}

	cfn := &fakeCFN{pageSize: 4}
	for _, n := range orig.Names() {
		cfn.stacks = append(cfn.stacks, cfnStack(orig.Stacks[n], orig.Stacks[n].Tags))
	}
	// Stacks that are not this graph's, and a deleted one that was.
	noise := func(name, status string, tags map[string]string) {
		st := &state.Stack{StackName: name, StackID: stackARN(name), Status: status, UpdatedAt: t0}
		cfn.stacks = append(cfn.stacks, cfnStack(st, tags))
	}
	noise("bank-vpc", "CREATE_COMPLETE", map[string]string{state.TagNamespace: "bank", state.TagGraphKey: "main", state.TagName: "vpc"})
	noise("shop-canary-vpc", "CREATE_COMPLETE", map[string]string{state.TagNamespace: "shop", state.TagGraphKey: "canary", state.TagName: "vpc"})
	noise("hand-made", "CREATE_COMPLETE", map[string]string{"team": "payments"})
	noise("shop-old", "DELETE_COMPLETE", map[string]string{state.TagNamespace: "shop", state.TagGraphKey: "main", state.TagName: "old"})

	if _, err := e.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("state/shop/main.json")}); err != nil {
		t.Fatal(err)
	}

	l, err := s.Acquire(ctx, "shop", "main", "run-2", ownerB)
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := s.ReadOrRebuild(ctx, l, cfn, awsclient.Budget{})
	if err != nil {
		t.Fatalf("ReadOrRebuild: %v", err)
	}
	if !rebuilt.Rebuilt {
		t.Error("Rebuilt not set")
	}
	if cfn.pages != (len(cfn.stacks)+3)/4 {
		t.Errorf("DescribeStacks pages = %d, want all %d", cfn.pages, (len(cfn.stacks)+3)/4)
	}
	if got, want := stacksJSON(t, rebuilt), stacksJSON(t, orig); got != want {
		t.Errorf("rebuilt stacks differ from the graph that was lost:\ngot  %s\nwant %s", got, want)
	}
	if rebuilt.Bundle != orig.Bundle {
		t.Errorf("rebuilt bundle = %+v, want %+v", rebuilt.Bundle, orig.Bundle)
	}
	if !strings.Contains(e.logs.String(), "rebuilt the persistent graph from stack tags") {
		t.Errorf("the rebuild was not reported in the logs: %s", e.logs)
	}

	// Writing it back continues: the object is recreated and shows the same graph.
	if err := s.Write(ctx, l, rebuilt); err != nil {
		t.Fatalf("write the rebuilt graph: %v", err)
	}
	shown, err := s.Show(ctx, "shop", "main", "")
	if err != nil {
		t.Fatal(err)
	}
	if shown.Generation != orig.Generation+1 {
		t.Errorf("generation after the rebuild = %d, want %d: generations keep growing across the loss", shown.Generation, orig.Generation+1)
	}
	if got, want := stacksJSON(t, shown), stacksJSON(t, orig); got != want || !shown.Rebuilt {
		t.Errorf("stored rebuilt graph differs (rebuilt=%v):\ngot  %s\nwant %s", shown.Rebuilt, got, want)
	}
	versions, err := s.History(ctx, "shop", "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != 3 || versions[0].DeleteMarker || !versions[1].DeleteMarker || versions[2].DeleteMarker {
		t.Errorf("history = %+v, want rebuilt version, delete marker, original version", versions)
	}
}

func nested(s cfntypes.Stack) cfntypes.Stack {
	s.StackName = aws.String(aws.ToString(s.StackName) + "-Child-1ABCDEF2GHIJ")
	s.StackId = aws.String(stackARN(aws.ToString(s.StackName)))
	s.ParentId = aws.String(stackARN("legacy-network"))
	return s
}

// countingBudget allows every call and counts the waits.
type countingBudget struct{ waits int }

func (b *countingBudget) Wait(context.Context) error { b.waits++; return nil }

// TestRebuildStopsWhenItsBudgetDoes: every page of the rebuild's DescribeStacks waits for
// the run's budget, so a budget that allows no more ends the rebuild with its error.
func TestRebuildStopsWhenItsBudgetDoes(t *testing.T) {
	e := newEnv(t)
	var stacks []cfntypes.Stack
	for _, n := range []string{"a", "b", "c"} {
		stacks = append(stacks, cfnStack(&state.Stack{StackName: "shop-" + n, StackID: stackARN("shop-" + n)}, map[string]string{state.TagNamespace: "shop", state.TagGraphKey: "main", state.TagName: n}))
	}
	cfn := &fakeCFN{stacks: stacks, pageSize: 1}
	budget := awsclient.Budget{Limiter: rate.NewLimiter(rate.Every(time.Hour), 2)} // two calls, then one an hour
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := e.store(nil).Rebuild(ctx, cfn, budget, "shop", "main")
	if err == nil || !strings.Contains(err.Error(), "API budget") || cfn.pages != 2 {
		t.Fatalf("rebuild of 3 pages on a budget of 2 calls: %d pages, err %v; want 2 pages and the budget's error", cfn.pages, err)
	}
}

func TestRebuild(t *testing.T) {
	tagged := func(name string, extra ...string) cfntypes.Stack {
		tags := map[string]string{state.TagNamespace: "shop", state.TagGraphKey: "main", state.TagName: name}
		for i := 0; i+1 < len(extra); i += 2 {
			tags[extra[i]] = extra[i+1]
		}
		st := &state.Stack{StackName: "legacy-" + name, StackID: stackARN("legacy-" + name), Status: "UPDATE_COMPLETE", UpdatedAt: t0}
		return cfnStack(st, tags)
	}
	tests := []struct {
		name    string
		stacks  []cfntypes.Stack
		err     error
		want    map[string][]string // stack -> requires
		rebuilt bool
		wantErr string
	}{
		{name: "nothing tagged gives an empty graph", stacks: nil, want: map[string][]string{}},
		{name: "adopts existing stacks with matching tags",
			stacks:  []cfntypes.Stack{tagged("network"), tagged("service", state.TagRequires, "network")},
			want:    map[string][]string{"network": nil, "service": {"network"}},
			rebuilt: true},
		{name: "drops a dependency on a stack that is gone",
			stacks:  []cfntypes.Stack{tagged("service", state.TagRequires, "network,queue"), tagged("queue")},
			want:    map[string][]string{"queue": nil, "service": {"queue"}},
			rebuilt: true},
		{name: "a nested stack carries its parent's tags but is not the parent's",
			stacks:  []cfntypes.Stack{tagged("network"), nested(tagged("network"))},
			want:    map[string][]string{"network": nil},
			rebuilt: true},
		{name: "a stack a plan made only to hold its change set (REVIEW_IN_PROGRESS) was never deployed",
			stacks: []cfntypes.Stack{tagged("network"), func() cfntypes.Stack {
				s := tagged("service", state.TagRequires, "network")
				s.StackStatus = cfntypes.StackStatusReviewInProgress
				return s
			}()},
			want:    map[string][]string{"network": nil},
			rebuilt: true},
		{name: "only stacks in REVIEW_IN_PROGRESS give an empty graph, not a rebuilt one",
			stacks: []cfntypes.Stack{func() cfntypes.Stack {
				s := tagged("network")
				s.StackStatus = cfntypes.StackStatusReviewInProgress
				return s
			}()},
			want: map[string][]string{}},
		{name: "two stacks claiming one name",
			stacks:  []cfntypes.Stack{tagged("network"), tagged("network")},
			wantErr: "both tagged cairn:name=network"},
		{name: "a cycle in hand-edited tags",
			stacks:  []cfntypes.Stack{tagged("a", state.TagRequires, "b"), tagged("b", state.TagRequires, "a")},
			wantErr: "dependency cycle"},
		{name: "CloudFormation failing", err: errors.New("throttled"), wantErr: "describe stacks: throttled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.store(nil)
			cfn, budget := &fakeCFN{stacks: tc.stacks, pageSize: 1, err: tc.err}, &countingBudget{}
			g, err := s.Rebuild(context.Background(), cfn, budget, "shop", "main")
			if tc.err == nil && budget.waits != cfn.pages {
				t.Errorf("%d DescribeStacks pages, %d waits for the budget: want one wait before each page", cfn.pages, budget.waits)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for n, st := range g.Stacks {
				got[n] = st.Requires
				if st.StackName != "legacy-"+n || st.Region != "eu-west-1" {
					t.Errorf("stack %s: real name %q region %q", n, st.StackName, st.Region)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || g.Rebuilt != tc.rebuilt {
				t.Errorf("rebuilt %v (Rebuilt=%v), want %v (Rebuilt=%v)", got, g.Rebuilt, tc.want, tc.rebuilt)
			}
		})
	}
}
