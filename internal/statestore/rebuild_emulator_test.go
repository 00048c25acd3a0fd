package statestore_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// rebuildPageSize is the emulated CloudFormation's page size in these tests: small, so the
// fixture's stacks of one graph are spread over several DescribeStacks pages.
const rebuildPageSize = 3

// cfnEnv is the whole emulator on a virtual clock, its CloudFormation answering
// DescribeStacks rebuildPageSize stacks at a time, with SDK clients for it.
type cfnEnv struct {
	clk   *clock.Fake
	cfn   *cloudformation.Client
	s3    *s3.Client
	logs  *logBuffer
	store *statestore.Store
}

func newCFNEnv(t *testing.T) *cfnEnv {
	t.Helper()
	ctx := context.Background()
	e := &cfnEnv{clk: clock.NewFake(t0), logs: &logBuffer{}}
	em, err := awslocal.New(awslocal.Options{Clock: e.clk, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	// awslocal.Options has no page size: serve the emulator's CloudFormation with one.
	svc, err := cfnlocal.New(cfnlocal.Options{Clock: e.clk, Logger: quietLogger(), PageSize: rebuildPageSize})
	if err != nil {
		t.Fatal(err)
	}
	em.RegisterService("cloudformation", svc)
	if err := em.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		em.Close()
		svc.Close()
	})
	cfg, err := em.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.cfn, e.s3 = cloudformation.NewFromConfig(cfg), awsclient.S3(cfg)
	makeBucket(t, e.s3, true)
	e.store = &statestore.Store{S3: e.s3, Bucket: bucket, Clock: e.clk, Logger: slog.New(slog.NewTextHandler(e.logs, nil))}
	return e
}

// fixtureStack is a stack the test creates, and how it is tagged.
type fixtureStack struct {
	stackName string
	// ns, key and st give the cairn:* tags (state.StackTags); ns "" leaves the stack
	// without any cairn tag.
	ns, key string
	bundle  state.BundleRef
	st      state.Stack
	// extra tags beside cairn's.
	extra map[string]string
	// deleted: deleted again after it was created.
	deleted bool
}

func (f fixtureStack) tags() map[string]string {
	tags := map[string]string{}
	if f.ns != "" {
		tags = state.StackTags(f.ns, f.key, f.bundle, &f.st)
	}
	for k, v := range f.extra {
		tags[k] = v
	}
	return tags
}

var (
	bundleNew = state.BundleRef{VersionID: "v7", SHA256: strings.Repeat("b7", 32), GitRef: "0123456789abcdef0123456789abcdef01234567", GitRemote: "https://example.com/shop.git"}
	bundleOld = state.BundleRef{VersionID: "v6", SHA256: strings.Repeat("a6", 32), GitRef: "fedcba9876543210fedcba9876543210fedcba98", GitRemote: "https://example.com/shop.git"}
)

// rebuildFixture is, in creation order, the five stacks of graph shop/prod (real stack
// names unlike their config names, one still from an older bundle, one requiring a stack
// that no longer exists) among stacks without cairn tags, stacks of other graphs, a stack
// of shop/prod without a cairn:name, and a deleted stack of shop/prod.
func rebuildFixture() []fixtureStack {
	team := map[string]string{"team": "web"}
	stack := func(name, stackName string, bundle state.BundleRef, requires ...string) fixtureStack {
		return fixtureStack{stackName: stackName, ns: "shop", key: "prod", bundle: bundle, extra: team, st: state.Stack{
			Name: name, Requires: requires, TemplateHash: "tmpl-" + name, ParametersHash: "params-" + name}}
	}
	untagged := func(name string) fixtureStack {
		return fixtureStack{stackName: name, extra: map[string]string{"owner": "someone else"}}
	}
	other := func(ns, key, name, stackName string) fixtureStack {
		return fixtureStack{stackName: stackName, ns: ns, key: key, bundle: bundleNew, st: state.Stack{Name: name, TemplateHash: "tmpl-" + name, ParametersHash: "params-" + name}}
	}
	gone := stack("old", "shop-prod-old", bundleNew, "network")
	gone.deleted = true
	nameless := stack("half", "shop-prod-half", bundleNew)
	nameless.st.Name = "" // StackTags leaves out empty values
	return []fixtureStack{
		untagged("legacy-dns"),
		stack("network", "prod-vpc-01", bundleNew),
		untagged("legacy-mail"),
		other("shop", "staging", "app", "shop-staging-app"),
		stack("database", "prod-db-main", bundleNew, "network"),
		untagged("legacy-ftp"),
		gone,
		untagged("legacy-wiki"),
		stack("cache", "prod-cache", bundleOld, "network"),
		other("blog", "prod", "app", "blog-prod-app"),
		untagged("legacy-chat"),
		nameless,
		stack("app", "prod-app", bundleNew, "cache", "database"),
		untagged("legacy-vpn"),
		untagged("legacy-git"),
		stack("web", "prod-web", bundleNew, "app", "cdn"), // cdn: no such stack
		other("shop", "prod-eu", "web", "shop-prod-eu-web"),
		untagged("legacy-ci"),
	}
}

// createFixture creates the stacks through the SDK, lets them complete on the virtual
// clock, deletes those marked deleted, and returns the stack ids by stack name.
func (e *cfnEnv) createFixture(t *testing.T, stacks []fixtureStack) map[string]string {
	t.Helper()
	ctx := context.Background()
	body, err := os.ReadFile("testdata/rebuild-stack.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, f := range stacks {
		var tags []cfntypes.Tag
		for k, v := range f.tags() {
			tags = append(tags, cfntypes.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		out, err := e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{
			StackName: aws.String(f.stackName), TemplateBody: aws.String(string(body)), Tags: tags,
			Parameters: []cfntypes.Parameter{{ParameterKey: aws.String("Value"), ParameterValue: aws.String("value of " + f.stackName)}},
		})
		if err != nil {
			t.Fatalf("create stack %s: %v", f.stackName, err)
		}
		ids[f.stackName] = aws.ToString(out.StackId)
	}
	e.settle(t, len(stacks))
	for _, f := range stacks {
		if !f.deleted {
			continue
		}
		if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(f.stackName)}); err != nil {
			t.Fatalf("delete stack %s: %v", f.stackName, err)
		}
		delete(ids, f.stackName)
	}
	e.settle(t, len(ids))
	return ids
}

// settle advances the virtual clock until the emulator lists exactly want stacks, all
// CREATE_COMPLETE.
func (e *cfnEnv) settle(t *testing.T, want int) {
	t.Helper()
	var statuses map[string]cfntypes.StackStatus
	for range 20 {
		e.clk.Advance(time.Minute)
		statuses = map[string]cfntypes.StackStatus{}
		done := 0
		p := cloudformation.NewDescribeStacksPaginator(e.cfn, &cloudformation.DescribeStacksInput{})
		for p.HasMorePages() {
			page, err := p.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range page.Stacks {
				statuses[aws.ToString(s.StackName)] = s.StackStatus
				if s.StackStatus == cfntypes.StackStatusCreateComplete {
					done++
				}
			}
		}
		if done == want && len(statuses) == want {
			return
		}
	}
	t.Fatalf("stacks did not settle to %d CREATE_COMPLETE: %v", want, statuses)
}

// pagesOf returns, for each stack name, the DescribeStacks page (from 1) it is listed on.
func (e *cfnEnv) pagesOf(t *testing.T) map[string]int {
	t.Helper()
	pages := map[string]int{}
	p := cloudformation.NewDescribeStacksPaginator(e.cfn, &cloudformation.DescribeStacksInput{})
	for n := 1; p.HasMorePages(); n++ {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Stacks {
			pages[aws.ToString(s.StackName)] = n
		}
	}
	return pages
}

// expectedGraph is the graph namespace/key that the fixture's tags describe, with the
// stack ids the emulator gave.
func expectedGraph(stacks []fixtureStack, ids map[string]string, namespace, key string, bundle state.BundleRef) *state.Graph {
	g := &state.Graph{SchemaVersion: state.SchemaVersion, Namespace: namespace, Key: key, Bundle: bundle, Stacks: map[string]*state.Stack{}}
	for _, f := range stacks {
		if f.ns != namespace || f.key != key || f.st.Name == "" || f.deleted {
			continue
		}
		st := f.st
		st.StackName, st.StackID, st.Region = f.stackName, ids[f.stackName], "us-east-1"
		st.Status = string(cfntypes.StackStatusCreateComplete)
		st.Outputs = map[string]string{"Value": "value of " + f.stackName}
		st.Tags = f.tags()
		st.UpdatedAt = t0 // created at the virtual clock's start
		g.Stacks[st.Name] = &st
	}
	for _, st := range g.Stacks {
		var kept []string
		for _, r := range st.Requires {
			if _, ok := g.Stacks[r]; ok {
				kept = append(kept, r)
			}
		}
		sort.Strings(kept)
		st.Requires = kept
	}
	g.Rebuilt = len(g.Stacks) > 0
	return g
}

func graphJSON(t *testing.T, g *state.Graph) string {
	t.Helper()
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRebuildFromEmulatorStacks creates stacks through the SDK against the emulator and
// rebuilds graphs from their tags with the real CloudFormation client, over several
// DescribeStacks pages.
func TestRebuildFromEmulatorStacks(t *testing.T) {
	e := newCFNEnv(t)
	fixture := rebuildFixture()
	ids := e.createFixture(t, fixture)

	// The fixture proves paging only if one graph's stacks are listed on several pages.
	pages := e.pagesOf(t)
	onPage := map[int]bool{}
	maxPage := 0
	for _, f := range fixture {
		maxPage = max(maxPage, pages[f.stackName])
		if f.ns == "shop" && f.key == "prod" && f.st.Name != "" && !f.deleted {
			onPage[pages[f.stackName]] = true
		}
	}
	if len(onPage) < 2 || maxPage < 3 {
		t.Fatalf("graph shop/prod is listed on pages %v of %d: the fixture does not exercise paging", onPage, maxPage)
	}

	for _, tc := range []struct {
		namespace, key string
		bundle         state.BundleRef
		names          []string
	}{
		// cache still carries the older bundle's tags: the graph records the most common.
		{"shop", "prod", bundleNew, []string{"app", "cache", "database", "network", "web"}},
		{"shop", "staging", bundleNew, []string{"app"}},
		{"blog", "prod", bundleNew, []string{"app"}},
		{"shop", "prod-eu", bundleNew, []string{"web"}},
		{"nobody", "prod", state.BundleRef{}, nil},
	} {
		t.Run(tc.namespace+"/"+tc.key, func(t *testing.T) {
			g, err := e.store.Rebuild(context.Background(), e.cfn, awsclient.Budget{}, tc.namespace, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Names(); strings.Join(got, ",") != strings.Join(tc.names, ",") {
				t.Errorf("rebuilt stacks %v, want %v", got, tc.names)
			}
			want := expectedGraph(fixture, ids, tc.namespace, tc.key, tc.bundle)
			if got, want := graphJSON(t, g), graphJSON(t, want); got != want {
				t.Errorf("rebuilt graph:\n%s\nwant:\n%s", got, want)
			}
			if err := g.Validate(); err != nil {
				t.Errorf("rebuilt graph is invalid: %v", err)
			}
		})
	}
	if logs := e.logs.String(); !strings.Contains(logs, "rebuilt the persistent graph from stack tags") ||
		!strings.Contains(logs, "requires a stack that was not found") || !strings.Contains(logs, "different bundles") {
		t.Errorf("the rebuild, the dropped dependency on cdn and the mixed bundles are not all logged:\n%s", logs)
	}
}

// TestReadOrRebuildAfterStateObjectDeleted writes the graph of the fixture's stacks under
// the lock, deletes its state object (leaving a delete marker, or every version), and
// reads it back under a new lock: ReadOrRebuild gives the same graph from the tags, and
// it can be written again under that lock.
func TestReadOrRebuildAfterStateObjectDeleted(t *testing.T) {
	e := newCFNEnv(t)
	fixture := rebuildFixture()
	ids := e.createFixture(t, fixture)
	for _, tc := range []struct {
		name         string
		allVersions  bool
		wantVersions int // of the state object after the rebuilt graph is written again
	}{
		{"delete marker", false, 3},
		{"every version gone", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			key := "prod"
			ns := "shop"
			written := expectedGraph(fixture, ids, ns, key, bundleNew)
			written.Rebuilt = false
			l, err := e.store.Acquire(ctx, ns, key, "run-1", statestore.Owner{Function: "deployer", RequestID: "r1"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.store.ReadOrRebuild(ctx, l, e.cfn, awsclient.Budget{}); err != nil {
				t.Fatal(err)
			}
			if err := e.store.Write(ctx, l, written); err != nil {
				t.Fatal(err)
			}
			if err := e.store.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
			deleteState(t, e.s3, layout.StateKey(ns, key), tc.allVersions)

			l, err = e.store.Acquire(ctx, ns, key, "run-2", statestore.Owner{Function: "deployer", RequestID: "r2"})
			if err != nil {
				t.Fatal(err)
			}
			defer e.store.Release(ctx, l)
			g, err := e.store.ReadOrRebuild(ctx, l, e.cfn, awsclient.Budget{})
			if err != nil {
				t.Fatal(err)
			}
			if !g.Rebuilt {
				t.Errorf("ReadOrRebuild did not say the graph was rebuilt")
			}
			if got, want := graphJSON(t, &state.Graph{Stacks: g.Stacks, Bundle: g.Bundle}), graphJSON(t, &state.Graph{Stacks: written.Stacks, Bundle: written.Bundle}); got != want {
				t.Errorf("rebuilt stacks:\n%s\nwritten before the state object was deleted:\n%s", got, want)
			}
			if err := e.store.Write(ctx, l, g); err != nil {
				t.Fatalf("write the rebuilt graph: %v", err)
			}
			back, err := e.store.Read(ctx, l)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := graphJSON(t, &state.Graph{Stacks: back.Stacks}), graphJSON(t, &state.Graph{Stacks: written.Stacks}); got != want {
				t.Errorf("stored after the rebuild:\n%s\nwant:\n%s", got, want)
			}
			// The stored generation says it came from a rebuild; reading it is no rebuild,
			// so a run that writes it back does not mark its own generation too.
			if back.Rebuilt {
				t.Errorf("Read of the stored graph says it was rebuilt: every later run would report a rebuild")
			}
			if shown, err := e.store.Show(ctx, ns, key, ""); err != nil || !shown.Rebuilt {
				t.Errorf("Show of the generation written from the rebuild: rebuilt %v, err %v; want rebuilt", shown != nil && shown.Rebuilt, err)
			}
			if n := stateVersions(t, e.s3, layout.StateKey(ns, key)); n != tc.wantVersions {
				t.Errorf("state object has %d versions and delete markers, want %d", n, tc.wantVersions)
			}
		})
		// The next case starts without state again.
		deleteState(t, e.s3, layout.StateKey("shop", "prod"), true)
	}
}

// deleteState deletes the state object: its current version only (a versioned bucket
// then keeps a delete marker), or every version and marker.
func deleteState(t *testing.T, c *s3.Client, key string, allVersions bool) {
	t.Helper()
	ctx := context.Background()
	if !allVersions {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
		return
	}
	out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	var vs []*string
	for _, v := range out.Versions {
		vs = append(vs, v.VersionId)
	}
	for _, m := range out.DeleteMarkers {
		vs = append(vs, m.VersionId)
	}
	for _, v := range vs {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: v}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err == nil {
		t.Fatalf("%s still exists after its versions were deleted", key)
	}
	if n := stateVersions(t, c, key); n != 0 {
		t.Fatalf("%s: %d versions left", key, n)
	}
}

func stateVersions(t *testing.T, c *s3.Client, key string) int {
	t.Helper()
	out, err := c.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Versions) + len(out.DeleteMarkers)
}
