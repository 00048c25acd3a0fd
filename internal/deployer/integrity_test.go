package deployer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// written lists the objects cairn wrote in its bucket: runs, state, locks and plans.
func (w *world) written() []string {
	w.t.Helper()
	var keys []string
	for _, prefix := range []string{layout.RunsPrefix, layout.StatePrefix, layout.LocksPrefix, layout.PlansPrefix} {
		out, err := w.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
		if err != nil {
			w.t.Fatal(err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// TestForgedEventOfAnotherBucketIsRefused sends the deploy queue S3 events, in the exact
// JSON S3 sends, naming a bucket other than cairn's: an upload of a valid bundle at
// deployments/shop.zip there, and an approval object there. The deployer refuses both,
// says so in its log, and records or deploys nothing.
func TestForgedEventOfAnotherBucketIsRefused(t *testing.T) {
	for _, key := range []string{"deployments/shop.zip", "approvals/shop/20261130-080000000-1a2b3c4d"} {
		t.Run(key, func(t *testing.T) {
			w := newWorld(t, worldOptions{})
			ctx := context.Background()
			const other = "someone-elses-bucket"
			must(t, func() error {
				_, err := w.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(other)})
				return err
			})
			must(t, func() error {
				_, err := w.s3.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(other),
					VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}})
				return err
			})
			zip, err := bundle.Zip(copyBundle(t, chain))
			if err != nil {
				t.Fatal(err)
			}
			put, err := w.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(other), Key: aws.String(key), Body: bytes.NewReader(zip)})
			if err != nil {
				t.Fatal(err)
			}
			var sample events.SQSEvent
			if err := json.Unmarshal(mustRead(t, "../../events/s3-put-sqs.json"), &sample); err != nil {
				t.Fatal(err)
			}
			var body events.S3Event
			if err := json.Unmarshal([]byte(sample.Records[0].Body), &body); err != nil {
				t.Fatal(err)
			}
			r := &body.Records[0]
			r.S3.Bucket.Name, r.S3.Bucket.Arn = other, "arn:aws:s3:::"+other
			r.S3.Object.Key, r.S3.Object.VersionID, r.EventTime = key, aws.ToString(put.VersionId), w.clk.Now()
			forged, _ := json.Marshal(body)
			if _, err := w.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(w.queue), MessageBody: aws.String(string(forged))}); err != nil {
				t.Fatal(err)
			}
			w.waitLog(`msg="deploy: upload refused: the event names another bucket than cairn's; nothing is recorded or changed" bucket=` + other)
			time.Sleep(100 * time.Millisecond) // virtual minutes: anything the event started would show
			if keys := w.written(); len(keys) > 0 {
				t.Errorf("the forged event wrote %v", keys)
			}
			if stacks := w.stacks(); len(stacks) != 0 {
				t.Errorf("the forged event deployed %d stack(s)", len(stacks))
			}
		})
	}
}

// fence takes the lock of the shop graph away from the run holding it, as an operator or
// another writer would, and returns a function that gives it back (releases it).
type fence struct {
	name string
	take func(t *testing.T, w *world) (release func())
}

var fences = []fence{
	{"cairn unlock --force", func(t *testing.T, w *world) func() {
		// A step renewing the lock meanwhile makes the removal fail ("the lock changed while
		// removing it ... look again"): the operator runs it again, as the message says.
		for attempt := 1; ; attempt++ {
			_, err := w.store().ForceUnlock(context.Background(), "shop", "shop", true)
			if err == nil {
				return func() {}
			}
			if attempt == 10 || !strings.Contains(err.Error(), "the lock changed while removing it") {
				t.Fatal(err)
			}
		}
	}},
	{"lease takeover", func(t *testing.T, w *world) func() {
		// Another writer whose clock says the lease is long over takes the lock over.
		later := clock.NewFake(w.clk.Now().Add(24 * time.Hour))
		s := w.store()
		s.Clock = later
		l, err := s.Acquire(context.Background(), "shop", "shop", "taker", statestore.Owner{Function: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := s.Release(context.Background(), l); err != nil {
				t.Fatal(err)
			}
		}
	}},
}

func (w *world) store() *statestore.Store {
	return &statestore.Store{S3: w.s3, Bucket: bucket, Clock: w.clk}
}

// TestFencedChangeIsReplanned fences a run while CloudFormation executes its slow update of
// shop-web: the run stops, CloudFormation finishes the update (the stack now holds the new
// value and the new cairn:parameters-sha256 tag), and the graph still records the old
// inputs. The next push of the old bundle must see that the live stack's hash tags disagree
// with the graph and update the stack back, not call it unchanged.
func TestFencedChangeIsReplanned(t *testing.T) {
	for _, f := range fences {
		t.Run(f.name, func(t *testing.T) {
			w := newWorld(t, worldOptions{})
			dir, _ := deployChain(t, w)
			old, err := bundle.Zip(dir)
			if err != nil {
				t.Fatal(err)
			}
			w.fault(cfnlocal.Fault{Stack: "shop-web", LogicalID: "Parameter", Operation: "UPDATE", Delay: 5 * time.Minute})
			edit(t, dir, "cairn.yaml", "      Value: ${output app::Name}\n      Size: small", "      Value: ${output app::Name}\n      Size: large")
			v2 := w.push("shop", dir)
			w.waitFor("shop-web to update", func() bool { return w.stacks()["shop-web"].StackStatus == cfntypes.StackStatusUpdateInProgress })
			release := f.take(t, w)
			doc := w.wait("shop", v2)
			release()
			if doc.Run.Status != run.Abandoned {
				t.Fatalf("the fenced run: %s (%s), want abandoned", doc.Run.Status, doc.Run.Reason)
			}
			// The run leaves the open-run index just after its document is saved ended.
			w.waitFor("the abandoned run to leave the open-run index", func() bool { return len(w.openRuns()) == 0 })
			w.waitFor("shop-web's update to finish", func() bool { return w.stacks()["shop-web"].StackStatus == cfntypes.StackStatusUpdateComplete })
			if got := parameter(w.stacks()["shop-web"], "Size"); got != "large" {
				t.Fatalf("shop-web Size %q after the fenced update, want large", got)
			}

			back := w.wait("shop", w.pushBytes("shop", old))
			if back.Run.Status != run.Succeeded {
				t.Fatalf("push of the old bundle: %s (%s); stacks %v", back.Run.Status, back.Run.Reason, phases(back))
			}
			web := back.Run.Stacks["web"]
			if web.Phase != run.Done || web.ChangeSetName == "" {
				t.Errorf("web: %s (%s), want updated back", web.Phase, web.Reason)
			}
			var reason string
			for _, d := range back.Decisions {
				if d.Stack == "web" {
					reason = string(d.Action) + ": " + d.Reason
				}
			}
			if !strings.HasPrefix(reason, "update: ") || !strings.Contains(reason, state.TagParametersHash) {
				t.Errorf("web decision %q, want an update naming the disagreeing tag", reason)
			}
			if got := parameter(w.stacks()["shop-web"], "Size"); got != "small" {
				t.Errorf("shop-web Size %q, want small again", got)
			}
			for _, n := range []string{"network", "database", "cache", "app"} {
				if s := back.Run.Stacks[n]; s.Phase != run.Unchanged {
					t.Errorf("stack %s: %s (%s), want unchanged", n, s.Phase, s.Reason)
				}
			}
		})
	}
}

func parameter(s cfntypes.Stack, key string) string {
	for _, p := range s.Parameters {
		if aws.ToString(p.ParameterKey) == key {
			return aws.ToString(p.ParameterValue)
		}
	}
	return ""
}

// TestAnotherDeploymentMayNotWriteAGraph: deployment guard owns the graph guard; deployment
// other, whose config names persistent_graph_key: guard and leaves out one of guard's
// stacks, is refused with the owner's name and deletes nothing. Naming the owner in
// take_over_graph_from (a rename) takes the graph over once guard consented
// (hand_over_graph_to: other, applied through a plan); then guard itself is refused.
func TestAnotherDeploymentMayNotWriteAGraph(t *testing.T) {
	w := newReviewWorld(t)
	guard := copyBundle(t, chain)
	if doc := w.wait("guard", w.push("guard", guard)); doc.Run.Status != run.Succeeded {
		t.Fatalf("guard: %s (%s)", doc.Run.Status, doc.Run.Reason)
	}
	if g := w.graph("shop", "guard"); g.Deployment != "guard" {
		t.Fatalf("graph shop/guard records owner %q, want guard", g.Deployment)
	}
	other := copyBundle(t, chain)
	edit(t, other, "cairn.yaml", "namespace: shop\n", "namespace: shop\npersistent_graph_key: guard\n")
	edit(t, other, "cairn.yaml", "  - name: web\n    template_path: templates/parameter.yaml\n    parameters:\n      Value: ${output app::Name}\n      Size: small\n", "")

	doc := w.wait("other", w.push("other", other))
	want := "the persistent graph shop/guard belongs to deployment guard: deployment other may not write it; if other is guard renamed, set `take_over_graph_from: guard` in cairn.yaml and have guard consent with `hand_over_graph_to: other`"
	if doc.Run.Status != run.RunFailed || !strings.Contains(strings.Join(doc.Refusals, "\n"), want) {
		t.Fatalf("other's run: %s (%s), refusals %q; want refused with %q", doc.Run.Status, doc.Run.Reason, doc.Refusals, want)
	}
	if _, ok := w.stacks()["shop-web"]; !ok {
		t.Fatal("deployment other deleted shop-web of guard's graph")
	}
	if g := w.graph("shop", "guard"); g.Deployment != "guard" || g.Stacks["web"] == nil {
		t.Fatalf("graph after the refusal: owner %q, stacks %v", g.Deployment, g.Names())
	}

	edit(t, guard, "cairn.yaml", "namespace: shop\n", "namespace: shop\nhand_over_graph_to: other\n")
	consent := w.planOf("guard", w.uploadPlan("guard", guard))
	if a := w.approve("guard", consent.ID); a.Run.Status != run.Succeeded {
		t.Fatalf("guard's consent: %s (%s) %q", a.Run.Status, a.Run.Reason, a.Refusals)
	}
	edit(t, other, "cairn.yaml", "persistent_graph_key: guard\n", "persistent_graph_key: guard\ntake_over_graph_from: guard\n")
	doc = w.wait("other", w.push("other", other))
	if doc.Run.Status != run.Succeeded || doc.Run.Stacks["web"] == nil || doc.Run.Stacks["web"].Phase != run.Done {
		t.Fatalf("the takeover: %s (%s); stacks %v", doc.Run.Status, doc.Run.Reason, phases(doc))
	}
	if !strings.Contains(strings.Join(doc.Notes, "\n"), "deployment other takes over the persistent graph shop/guard from deployment guard") {
		t.Errorf("the takeover's notes %q do not say so", doc.Notes)
	}
	if g := w.graph("shop", "guard"); g.Deployment != "other" {
		t.Errorf("owner after the takeover %q, want other", g.Deployment)
	}
	doc = w.wait("guard", w.push("guard", guard))
	if doc.Run.Status != run.RunFailed || !strings.Contains(strings.Join(doc.Refusals, "\n"), "belongs to deployment other: deployment guard may not write it") {
		t.Errorf("guard after the takeover: %s, refusals %q", doc.Run.Status, doc.Refusals)
	}
}

// TestNamespacesOutsideTheAllowListAreRefused: with CAIRN_NAMESPACES=shop, a bundle of
// namespace other, and one naming a stack finance-ledger, are refused before any
// CloudFormation call, with the errors cairn validate gives; nothing is created.
func TestNamespacesOutsideTheAllowListAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"namespace", "namespace: shop\n", "namespace: other\n",
			`cairn.yaml:3:12: namespace: namespace "other" is not one this cairn may manage (allowed: shop)`},
		{"stack name", "  - name: web\n", "  - name: web\n    stack_name: finance-ledger\n",
			`stacks[4].stack_name: stack name "finance-ledger" is outside the namespaces this cairn may manage: it must be named shop-*`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, worldOptions{Namespaces: "shop"})
			dir := copyBundle(t, chain)
			edit(t, dir, "cairn.yaml", tc.old, tc.new)
			before := w.cfnCalls()
			doc := w.wait("shop", w.push("shop", dir))
			if doc.Run.Status != run.RunFailed || !strings.Contains(strings.Join(doc.Errors, "\n"), tc.want) {
				t.Fatalf("run %s (%s), errors %q; want failed with %q", doc.Run.Status, doc.Run.Reason, doc.Errors, tc.want)
			}
			for action, n := range w.cfnCalls() {
				if n != before[action] {
					t.Errorf("the refused bundle made %d CloudFormation %s call(s)", n-before[action], action)
				}
			}
			if stacks := w.stacks(); len(stacks) != 0 {
				t.Errorf("the refused bundle created %d stack(s)", len(stacks))
			}
		})
	}
}

// TestUserErrorReasonIsTheAWSMessage: a change set CloudFormation refuses at once for a
// reason the user caused and no check could see before (an SSM parameter type naming a
// parameter that does not exist) fails its stack with CloudFormation's message, never the
// SDK's dump of the operation, status code and request id.
func TestUserErrorReasonIsTheAWSMessage(t *testing.T) {
	w := newWorld(t, worldOptions{})
	dir := t.TempDir()
	writeFile(t, dir, "cairn.yaml", "namespace: shop\nstacks:\n  - name: ami\n    template_path: ami.yaml\n    parameters: {ImageId: /shop/golden-ami}\n")
	writeFile(t, dir, "ami.yaml", `Parameters:
  ImageId: {Type: "AWS::SSM::Parameter::Value<String>"}
Resources:
  Handle:
    Type: AWS::CloudFormation::WaitConditionHandle
Outputs:
  Image: {Value: !Ref ImageId}
`)
	doc := w.wait("shop", w.push("shop", dir))
	s := doc.Run.Stacks["ami"]
	if s == nil {
		t.Fatalf("run %s (%s): no stack ami; errors %q, refusals %q", doc.Run.Status, doc.Run.Reason, doc.Errors, doc.Refusals)
	}
	if doc.Run.Status != run.RunFailed || s.Phase != run.Failed {
		t.Fatalf("run %s, ami %s (%s): want the stack failed", doc.Run.Status, s.Phase, s.Reason)
	}
	const want = " failed after 1 attempt(s): CreateChangeSet shop-ami: Unable to fetch parameters [/shop/golden-ami] from parameter store for this account."
	if !strings.HasPrefix(s.Reason, "create change set cairn-") || !strings.HasSuffix(s.Reason, want) {
		t.Errorf("ami's reason %q, want CloudFormation's message: %q", s.Reason, want)
	}
	for _, dump := range []string{"operation error", "RequestID", "api error", "StatusCode", "https response error"} {
		if strings.Contains(s.Reason, dump) {
			t.Errorf("ami's reason holds the SDK's %q: %s", dump, s.Reason)
		}
	}
}

const noechoBundle = "testdata/noecho"
