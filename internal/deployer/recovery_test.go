package deployer_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
)

// TestRecoveryAfterStateDeleted deploys the chain, deletes the persistent graph's object
// (leaving a delete marker in the versioned bucket, or removing every version) and pushes
// the same bundle again: the run rebuilds the graph from the stacks' cairn:* tags, says so
// in its document and report, gives back the graph it had, and changes nothing in
// CloudFormation.
func TestRecoveryAfterStateDeleted(t *testing.T) {
	for _, tc := range []struct {
		name        string
		allVersions bool
	}{
		{"delete marker", false},
		{"every version gone", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, worldOptions{})
			dir, _ := deployChain(t, w)
			key := layout.StateKey("shop", "shop")
			before := w.graph("shop", "shop")
			if got := strings.Join(before.Stacks["app"].Requires, ","); got != "cache,database" {
				t.Fatalf("graph before: app requires %q: the comparison of dependencies proves nothing", got)
			}
			w.deleteObject(key, tc.allVersions)
			if _, err := w.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err == nil {
				t.Fatalf("%s still readable after the delete", key)
			}

			calls := w.cfnCalls()
			doc := w.wait("shop", w.push("shop", dir))
			if doc.Run.Status != run.Succeeded {
				t.Fatalf("run after the state was deleted: %s (%s); stacks %v", doc.Run.Status, doc.Run.Reason, phases(doc))
			}
			warning := fmt.Sprintf("the persistent graph %s was missing and was rebuilt from the tags of 5 stack(s)", key)
			if !contains(doc.Warnings, warning) {
				t.Errorf("run document warnings %q lack %q", doc.Warnings, warning)
			}
			if report := w.object("runs/shop/" + doc.Run.ID + ".md"); !strings.Contains(report, warning) {
				t.Errorf("report lacks %q:\n%s", warning, report)
			}
			for _, n := range chainStacks {
				if s := doc.Run.Stacks[n]; s == nil || s.Phase != run.Unchanged {
					t.Errorf("stack %s: %+v, want unchanged", n, s)
				}
			}
			writes := cfnWrites(calls, w.cfnCalls())
			if len(writes) > 0 {
				t.Errorf("the run after the rebuild made CloudFormation write calls: %v", writes)
			}

			after := w.graph("shop", "shop")
			if after.Generation < 2 {
				t.Errorf("graph generation %d: the rebuilt graph and the run's result were not both written", after.Generation)
			}
			sameStacks(t, "after the run", after, before)
			// The history marks the one generation written from the rebuild, and it is the
			// graph as it was before the loss.
			var marked []int64
			for _, g := range w.stateHistory(key) {
				if g.Rebuilt {
					marked = append(marked, g.Generation)
					sameStacks(t, fmt.Sprintf("rebuilt (generation %d)", g.Generation), g, before)
				}
			}
			if len(marked) != 1 || marked[0] >= after.Generation {
				t.Errorf("generations %v of the history are marked rebuilt, want one before the run's last write (generation %d)", marked, after.Generation)
			}

			// The next run reads the stored graph: nothing was missing, nothing is rebuilt.
			next := w.wait("shop", w.push("shop", dir))
			if next.Run.Status != run.Succeeded {
				t.Fatalf("run after the recovery: %s (%s)", next.Run.Status, next.Run.Reason)
			}
			for _, warn := range next.Warnings {
				if strings.Contains(warn, "rebuilt") {
					t.Errorf("the run after the recovery warns %q although the graph was there", warn)
				}
			}
			// It changes nothing, so it writes only its run document: the graph stays the
			// run's before, with its bundle (docs/push.md: what each push writes).
			if !next.Quiet {
				t.Errorf("run after the recovery: not recorded as quiet (nothing to change)")
			}
			if g := w.graph("shop", "shop"); g.Rebuilt || g.Generation != after.Generation || g.Bundle.VersionID != after.Bundle.VersionID || strings.Join(g.Names(), ",") != strings.Join(before.Names(), ",") {
				t.Errorf("graph after the next run: rebuilt %v, bundle %+v, stacks %v", g.Rebuilt, g.Bundle, g.Names())
			}
			var marked2 int
			for _, g := range w.stateHistory(key) {
				if g.Rebuilt {
					marked2++
				}
			}
			if marked2 != 1 {
				t.Errorf("after the next run %d generations are marked rebuilt, want still 1", marked2)
			}
		})
	}
}

// TestAdoptTaggedStackRefuseUntagged adds two stacks to the config whose stacks already
// exist, created outside cairn: the one carrying this graph's cairn:* tags is adopted into
// the graph; the one without cairn tags is refused with the plan's reason, and nothing
// changes.
func TestAdoptTaggedStackRefuseUntagged(t *testing.T) {
	w := newWorld(t, worldOptions{})
	dir, first := deployChain(t, w)
	network := w.graph("shop", "shop").Stacks["network"].Outputs["VpcId"]

	// Adoption: shop-extra exists, tagged as cairn would tag stack extra of shop/shop.
	extraID := w.createStack("shop-extra", dir, map[string]string{"Value": network, "Size": "small"},
		state.StackTags("shop", "shop", state.BundleRef{SHA256: first.Bundle.SHA256}, &state.Stack{Name: "extra"}))
	addStack(t, dir, "extra")
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("adopting run: %s (%s); stacks %v; refusals %q", doc.Run.Status, doc.Run.Reason, phases(doc), doc.Refusals)
	}
	if d := decision(doc, "extra"); d.Action != plan.Adopt || d.StackName != "shop-extra" {
		t.Errorf("decision for extra: %+v, want adopt of shop-extra", d)
	}
	if s := doc.Run.Stacks["extra"]; s == nil || s.Phase != run.Done {
		t.Errorf("extra: %+v, want done", s)
	}
	report := w.object("runs/shop/" + doc.Run.ID + ".md")
	// The plan section carries the adoption, and so does the stacks table.
	if !strings.Contains(report, "- extra (shop-extra): adopt — exists with matching cairn tags: adopted into the graph") ||
		!strings.Contains(report, "| extra | shop-extra | adopt | done |") {
		t.Errorf("report does not say extra was adopted:\n%s", report)
	}
	g := w.graph("shop", "shop")
	if s := g.Stacks["extra"]; s == nil || s.StackID != extraID || s.StackName != "shop-extra" || strings.Join(s.Requires, ",") != "network" || s.Outputs["Name"] == "" {
		t.Errorf("graph entry of extra: %+v, want stack %s requiring network, with outputs", s, extraID)
	}
	if live := w.stacks()["shop-extra"]; tag(live, state.TagTemplateHash) != g.Stacks["extra"].TemplateHash || tag(live, "team") != "web" {
		t.Errorf("adopted stack's tags %v do not carry the graph's template hash and the config's tags", tags(live))
	}

	// Refusal: shop-foreign exists without any cairn tag.
	foreignID := w.createStack("shop-foreign", dir, map[string]string{"Value": "theirs", "Size": "large"}, map[string]string{"owner": "another team"})
	foreignBefore := w.stacks()["shop-foreign"]
	addStack(t, dir, "foreign")
	graphBefore := w.object(layout.StateKey("shop", "shop"))
	calls := w.cfnCalls()
	doc = w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.RunFailed {
		t.Fatalf("run with an untagged stack of the same name: %s (%s), want failed", doc.Run.Status, doc.Run.Reason)
	}
	reason := "stack shop-foreign exists but cairn did not create it (no cairn:* tags): rename the stack in the config, or adopt it: tag it with cairn:namespace=shop, cairn:graph-key=shop, cairn:name=foreign (the command keeps its template, parameters and tags, and adds cairn's), then push again: "
	command := "`aws cloudformation update-stack --stack-name shop-foreign --use-previous-template --parameters ParameterKey=Size,UsePreviousValue=true ParameterKey=Value,UsePreviousValue=true --capabilities CAPABILITY_IAM CAPABILITY_NAMED_IAM CAPABILITY_AUTO_EXPAND --tags Key=cairn:namespace,Value=shop Key=cairn:graph-key,Value=shop Key=cairn:name,Value=foreign Key=cairn:bundle-sha256,Value="
	if len(doc.Refusals) != 1 || !strings.HasPrefix(doc.Refusals[0], reason+command) || !strings.HasSuffix(doc.Refusals[0], " 'Key=owner,Value=another team'`; the push that adopts it gives it the tags of cairn.yaml, which lacks owner: add it under tags to keep it") {
		t.Errorf("refusals %q, want exactly one starting %q and keeping the stack's own tag", doc.Refusals, reason+command)
	}
	if report := w.object("runs/shop/" + doc.Run.ID + ".md"); !strings.Contains(report, reason) {
		t.Errorf("report lacks the refusal:\n%s", report)
	}
	if writes := cfnWrites(calls, w.cfnCalls()); len(writes) > 0 {
		t.Errorf("the refused run made CloudFormation write calls: %v", writes)
	}
	if got := w.object(layout.StateKey("shop", "shop")); got != graphBefore {
		t.Errorf("the refused run changed the graph:\n%s\nwas:\n%s", got, graphBefore)
	}
	foreign := w.stacks()["shop-foreign"]
	if aws.ToString(foreign.StackId) != foreignID || foreign.StackStatus != foreignBefore.StackStatus ||
		foreign.LastUpdatedTime != nil || fmt.Sprint(tags(foreign)) != fmt.Sprint(tags(foreignBefore)) {
		t.Errorf("shop-foreign changed: %s %s updated %v tags %v, was %s %s tags %v", aws.ToString(foreign.StackId), foreign.StackStatus,
			foreign.LastUpdatedTime, tags(foreign), foreignID, foreignBefore.StackStatus, tags(foreignBefore))
	}
	for _, n := range append(chainStacks, "extra") {
		if s := doc.Run.Stacks[n]; s != nil && s.Phase != run.Blocked {
			t.Errorf("stack %s: phase %s in the refused run, want blocked", n, s.Phase)
		}
	}
}

// sameStacks reports how the stacks of graph got differ from want's in what the graph
// must keep: real names, ids, regions, dependencies, input hashes and outputs.
func sameStacks(t *testing.T, label string, got, want *state.Graph) {
	t.Helper()
	if g, w := strings.Join(got.Names(), ","), strings.Join(want.Names(), ","); g != w {
		t.Errorf("graph %s holds %s, before %s", label, g, w)
		return
	}
	for _, n := range want.Names() {
		b, a := want.Stacks[n], got.Stacks[n]
		for _, f := range []struct{ field, got, want string }{
			{"stack name", a.StackName, b.StackName},
			{"stack id", a.StackID, b.StackID},
			{"region", a.Region, b.Region},
			{"requires", strings.Join(a.Requires, ","), strings.Join(b.Requires, ",")},
			{"template hash", a.TemplateHash, b.TemplateHash},
			{"parameters hash", a.ParametersHash, b.ParametersHash},
			{"outputs", fmt.Sprint(a.Outputs), fmt.Sprint(b.Outputs)},
		} {
			if f.got != f.want {
				t.Errorf("graph %s: stack %s: %s %q, before %q", label, n, f.field, f.got, f.want)
			}
		}
		if b.StackID == "" || b.TemplateHash == "" || b.ParametersHash == "" || len(b.Outputs) == 0 {
			t.Errorf("stack %s before: %+v: the comparison proves nothing", n, b)
		}
	}
}

// deleteObject deletes key's current version (a versioned bucket keeps a delete marker),
// or every version and delete marker of it.
func (w *world) deleteObject(key string, allVersions bool) {
	w.t.Helper()
	ctx := context.Background()
	if !allVersions {
		if _, err := w.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			w.t.Fatal(err)
		}
		return
	}
	out, err := w.s3.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(key)})
	if err != nil {
		w.t.Fatal(err)
	}
	var ids []*string
	for _, v := range out.Versions {
		if aws.ToString(v.Key) == key {
			ids = append(ids, v.VersionId)
		}
	}
	for _, m := range out.DeleteMarkers {
		if aws.ToString(m.Key) == key {
			ids = append(ids, m.VersionId)
		}
	}
	if len(ids) < 2 {
		w.t.Fatalf("%s has %d versions: the graph was written only once", key, len(ids))
	}
	for _, id := range ids {
		if _, err := w.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: id}); err != nil {
			w.t.Fatal(err)
		}
	}
	if left, err := w.s3.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(key)}); err != nil {
		w.t.Fatal(err)
	} else if n := len(left.Versions) + len(left.DeleteMarkers); n != 0 {
		w.t.Fatalf("%s: %d versions left after deleting them all", key, n)
	}
}

// stateHistory returns every stored version of the state object key, newest first.
func (w *world) stateHistory(key string) []*state.Graph {
	w.t.Helper()
	ctx := context.Background()
	out, err := w.s3.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(key)})
	if err != nil {
		w.t.Fatal(err)
	}
	var gs []*state.Graph
	for _, v := range out.Versions {
		obj, err := w.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: v.VersionId})
		if err != nil {
			w.t.Fatalf("get %s version %s: %v", key, aws.ToString(v.VersionId), err)
		}
		body, err := io.ReadAll(obj.Body)
		obj.Body.Close()
		if err != nil {
			w.t.Fatal(err)
		}
		g, err := state.Decode(body)
		if err != nil {
			w.t.Fatalf("%s version %s: %v", key, aws.ToString(v.VersionId), err)
		}
		gs = append(gs, g)
	}
	return gs
}

// createStack creates a stack through the SDK from the chain's parameter template, as
// someone outside cairn would, waits until it is complete and returns its id.
func (w *world) createStack(name, dir string, params, tags map[string]string) string {
	w.t.Helper()
	body, err := os.ReadFile(filepath.Join(dir, "templates", "parameter.yaml"))
	if err != nil {
		w.t.Fatal(err)
	}
	in := &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(string(body))}
	for k, v := range params {
		in.Parameters = append(in.Parameters, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	for k, v := range tags {
		in.Tags = append(in.Tags, cfntypes.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	out, err := w.cfnc.CreateStack(context.Background(), in)
	if err != nil {
		w.t.Fatalf("create stack %s: %v", name, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if s := w.stacks()[name]; s.StackStatus == cfntypes.StackStatusCreateComplete {
			return aws.ToString(out.StackId)
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.t.Fatalf("stack %s was never created", name)
	return ""
}

// addStack appends a stack NAME to the bundle's config, fed by the network like the
// database and cache.
func addStack(t *testing.T, dir, name string) {
	t.Helper()
	p := filepath.Join(dir, "cairn.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, fmt.Sprintf(`  - name: %s
    template_path: templates/parameter.yaml
    parameters:
      Value: ${output network::VpcId}
      Size: small
`, name)...)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// cfnWrites returns the CloudFormation calls other than reads made between two counts.
func cfnWrites(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for action, n := range after {
		if n -= before[action]; n == 0 {
			continue
		}
		if !strings.HasPrefix(action, "Describe") && !strings.HasPrefix(action, "List") && !strings.HasPrefix(action, "Get") {
			out[action] = n
		}
	}
	return out
}

func decision(doc *rundoc.Document, stack string) plan.Decision {
	for _, d := range doc.Decisions {
		if d.Stack == stack {
			return d
		}
	}
	return plan.Decision{}
}

func tag(s cfntypes.Stack, key string) string { return tags(s)[key] }

func tags(s cfntypes.Stack) map[string]string {
	out := map[string]string{}
	for _, t := range s.Tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
