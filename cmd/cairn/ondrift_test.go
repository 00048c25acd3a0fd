package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-dev/cairn/internal/bucket"
)

// ondriftBundle writes a one-stack bundle: a security group and a queue, with on_drift set
// to mode; timeout is the queue's VisibilityTimeout (a change elsewhere in the stack).
func ondriftBundle(t *testing.T, dir, mode string, timeout int) string {
	t.Helper()
	return ondriftBundleIn(t, dir, "od"+mode, mode, timeout)
}

// ondriftBundleIn writes ondriftBundle's bundle with namespace namespace.
func ondriftBundleIn(t *testing.T, dir, namespace, mode string, timeout int) string {
	t.Helper()
	files := map[string]string{
		"cairn.yaml": "namespace: " + namespace + "\nstacks:\n  - name: web\n    template_path: web.yaml\n    on_drift: " + mode + "\n",
		"web.yaml": `Resources:
  Web:
    Type: AWS::EC2::SecurityGroup
    Properties:
      GroupDescription: web
      SecurityGroupIngress:
        - {IpProtocol: tcp, FromPort: 443, ToPort: 443, CidrIp: 10.0.0.0/8}
  Queue:
    Type: AWS::SQS::Queue
    Properties: {VisibilityTimeout: ` + strconv.Itoa(timeout) + `}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// both runs cairn with args and returns its exit code and its stdout and stderr together.
func both(t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, stdout, stderr := cli(t, args...)
	return code, stdout + stderr
}

// TestOnDriftThroughTheCLI: a security-group rule added out of band, then a push that
// changes the same stack elsewhere: with on_drift revert the rule is brought back and
// `cairn drift` is clean after; with keep the rule stays, and the run report says, from
// the sweep's report, that the push left the rule and overwrote the queue's timeout (also
// changed out of band, and changed by the template); with refuse the push stops, the rule
// listed with the ways out in its output and its report, and the stack keeps the rule.
func TestOnDriftThroughTheCLI(t *testing.T) {
	_, s3c := deployEmulator(t, 20*time.Millisecond)
	const rule = `SecurityGroupIngress=[{"IpProtocol":"tcp","FromPort":443,"ToPort":443,"CidrIp":"10.0.0.0/8"},{"IpProtocol":"tcp","FromPort":22,"ToPort":22,"CidrIp":"0.0.0.0/0"}]`
	for _, mode := range []string{"revert", "keep", "refuse"} {
		t.Run(mode, func(t *testing.T) {
			push := func(dir string) (int, string) {
				return both(t, "push", dir, "--deployment", "od"+mode, "--bucket", localBucket, "--wait", "--poll", "20ms", "--timeout", "1m")
			}
			// drift sweeps the graph once no run holds its lock.
			drift := func() (code int, out string) {
				for range 100 {
					if code, out = both(t, "drift", "od"+mode, "--wait", "--poll", "20ms", "--bucket", localBucket); !strings.Contains(out, "deploy in progress") {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				return code, out
			}
			dir := t.TempDir()
			if code, out := push(ondriftBundle(t, dir, mode, 30)); code != 0 {
				t.Fatalf("first push: exit %d\n%s", code, out)
			}
			if code, out := both(t, "local", "tamper", "od"+mode+"-web", "Web", rule); code != 0 {
				t.Fatalf("tamper: exit %d\n%s", code, out)
			}
			if mode == "keep" {
				if code, out := both(t, "local", "tamper", "odkeep-web", "Queue", "VisibilityTimeout=45"); code != 0 {
					t.Fatalf("tamper: exit %d\n%s", code, out)
				}
			}
			reconcile := map[string]string{
				"revert": "reconcile web (od" + mode + "-web): `cairn plan PATH --deployment od" + mode + "` reverts it (on_drift: revert)",
				"keep":   "reconcile web (od" + mode + "-web): to revert it through review, set `on_drift: revert` on stack web, then `cairn plan PATH --deployment od" + mode + "`",
			}[mode]
			if code, out := drift(); code != 1 || !strings.Contains(out, "DRIFTED") || !strings.Contains(out, reconcile) {
				t.Fatalf("drift after the tamper: exit %d, want DRIFTED and %q\n%s", code, reconcile, out)
			}
			code, out := push(ondriftBundle(t, dir, mode, 60))
			switch mode {
			case "revert":
				if code != 0 {
					t.Fatalf("push with on_drift revert: exit %d\n%s", code, out)
				}
				if code, out := drift(); code != 0 || strings.Contains(out, "DRIFTED") {
					t.Errorf("drift after the revert: exit %d\n%s", code, out)
				}
			case "keep":
				if code != 0 {
					t.Fatalf("push with on_drift keep: exit %d\n%s", code, out)
				}
				report := newestRunReport(t, s3c, "odkeep")
				for _, want := range []string{"## Changed outside cairn", "are shown as the drift report s3://" + localBucket + "/drift/odkeep/",
					"| web | Web | /SecurityGroupIngress | left as it is: CloudFormation does not touch it (still drifted) |",
					"| web | Queue | /VisibilityTimeout | overwritten with the template's new value |"} {
					if !strings.Contains(report, want) {
						t.Errorf("the run report lacks %q:\n%s", want, report)
					}
				}
				if code, out := drift(); code != 1 || !strings.Contains(out, "DRIFTED") || strings.Contains(out, "VisibilityTimeout") {
					t.Errorf("drift after a push that keeps it: exit %d, want the rule still there and the timeout overwritten\n%s", code, out)
				}
			case "refuse":
				if code == 0 || !strings.Contains(out, "its on_drift is refuse and it was changed outside cairn: Web.SecurityGroupIngress") ||
					!strings.Contains(out, "set `on_drift: revert` on the stack") {
					t.Fatalf("push with on_drift refuse: exit %d\n%s", code, out)
				}
				if report := newestRunReport(t, s3c, "odrefuse"); !strings.Contains(report, "changed outside cairn: Web.SecurityGroupIngress") ||
					!strings.Contains(report, "set \\`on_drift: revert\\` on the stack") {
					t.Errorf("the refused push's report lacks the rule and the ways out:\n%s", report)
				}
				if code, out := drift(); code != 1 || !strings.Contains(out, "DRIFTED") {
					t.Errorf("drift after the refusal: exit %d, want the rule still there\n%s", code, out)
				}
			}
		})
	}
}

// TestPlanShowsChangedOutsideCairn: the plan of a stack with on_drift revert, after a rule
// was added out of band and while the PR changes the stack elsewhere, says in its comment
// that it reverts the rule; a template changed to the drifted value is kept
// (SyncWithActual), and after the apply `cairn drift` is clean.
func TestPlanShowsChangedOutsideCairn(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond)
	dir := t.TempDir()
	const rule = `SecurityGroupIngress=[{"IpProtocol":"tcp","FromPort":443,"ToPort":443,"CidrIp":"10.0.0.0/8"},{"IpProtocol":"tcp","FromPort":22,"ToPort":22,"CidrIp":"0.0.0.0/0"}]`
	if code, out := both(t, "push", ondriftBundle(t, dir, "revert", 30), "--deployment", "odrevert", "--bucket", localBucket, "--wait", "--poll", "20ms", "--timeout", "1m"); code != 0 {
		t.Fatalf("push: exit %d\n%s", code, out)
	}
	for _, tamper := range [][]string{{"Web", rule}, {"Queue", "VisibilityTimeout=90"}} {
		if code, out := both(t, "local", "tamper", "odrevert-web", tamper[0], tamper[1]); code != 0 {
			t.Fatalf("tamper: exit %d\n%s", code, out)
		}
	}
	// The template adopts the queue's new timeout and changes nothing else.
	code, out := both(t, "plan", ondriftBundle(t, dir, "revert", 90), "--deployment", "odrevert", "--bucket", localBucket, "--wait", "--poll", "20ms", "--format", "md")
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s", code, out)
	}
	for _, want := range []string{"## Changed outside cairn", "| web | Web | SecurityGroupIngress |", `"FromPort":22`, "**reverts it** to the template's value",
		"| web | Queue | VisibilityTimeout | `30` | `90` | `90` | keeps it (the template now sets it: SyncWithActual) |"} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan lacks %q:\n%s", want, out)
		}
	}
	if code, out := both(t, "apply", dir, "--deployment", "odrevert", "--bucket", localBucket, "--wait", "--poll", "20ms", "--timeout", "1m"); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	for range 100 {
		if code, out = both(t, "drift", "odrevert", "--wait", "--poll", "20ms", "--bucket", localBucket); !strings.Contains(out, "deploy in progress") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code != 0 || !strings.Contains(out, "IN_SYNC") {
		t.Errorf("drift after the apply: exit %d\n%s", code, out)
	}
}

// TestPlanCommentPerOnDrift: a security-group rule added out of band and found by a drift
// sweep, then a plan that changes the same stack elsewhere: the comment says what each
// on_drift does with the rule: revert brings it back (its drift-aware change set), keep
// leaves it (the sweep's report, the ordinary change set does not touch it), refuse stops
// the plan with the rule listed and the ways out, and its comment's section shows the rule
// three ways as its refused change set saw it.
func TestPlanCommentPerOnDrift(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond)
	const rule = `SecurityGroupIngress=[{"IpProtocol":"tcp","FromPort":443,"ToPort":443,"CidrIp":"10.0.0.0/8"},{"IpProtocol":"tcp","FromPort":22,"ToPort":22,"CidrIp":"0.0.0.0/0"}]`
	for _, tc := range []struct {
		mode string
		code int
		want []string
	}{
		{"revert", 0, []string{"## Changed outside cairn", "| web | Web | SecurityGroupIngress |", `"FromPort":22`, "**reverts it** to the template's value"}},
		{"keep", 0, []string{"## Changed outside cairn", "| web | Web | /SecurityGroupIngress", `"FromPort":22`,
			"leaves it (CloudFormation does not touch it: still drifted)", "are shown as the drift report s3://" + localBucket + "/drift/odkeep/"}},
		{"refuse", 1, []string{"its on_drift is refuse and it was changed outside cairn: Web.SecurityGroupIngress", "set \\`on_drift: revert\\` on the stack",
			"## Changed outside cairn", "| web | Web | SecurityGroupIngress |", `"FromPort":22`, "**stops the plan** (on_drift: refuse): adopt it in the template, or revert it through review |"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			dep := "od" + tc.mode
			dir := t.TempDir()
			if code, out := both(t, "push", ondriftBundle(t, dir, tc.mode, 30), "--deployment", dep, "--bucket", localBucket, "--wait", "--poll", "20ms", "--timeout", "1m"); code != 0 {
				t.Fatalf("push: exit %d\n%s", code, out)
			}
			if code, out := both(t, "local", "tamper", dep+"-web", "Web", rule); code != 0 {
				t.Fatalf("tamper: exit %d\n%s", code, out)
			}
			var code int
			var out string
			for range 100 {
				if code, out = both(t, "drift", dep, "--wait", "--poll", "20ms", "--bucket", localBucket); !strings.Contains(out, "deploy in progress") {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if code != 1 || !strings.Contains(out, "DRIFTED") {
				t.Fatalf("drift after the tamper: exit %d\n%s", code, out)
			}
			code, out = both(t, "plan", ondriftBundle(t, dir, tc.mode, 60), "--deployment", dep, "--bucket", localBucket, "--wait", "--poll", "20ms", "--format", "md")
			if (code == 0) != (tc.code == 0) {
				t.Fatalf("plan: exit %d, want %d\n%s", code, tc.code, out)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("the plan lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestPlanDetectsDriftWithoutAReport: with no drift sweep behind it, the plan of an
// on_drift keep stack detects the stack's drift itself (DetectStackDrift, as states of its
// run) and its comment says what its ordinary change set does with each property changed
// outside cairn: the rule added out of band is left as it is, and the queue's timeout,
// which the template changes, is overwritten. The plan then applies: the rule is still
// there after, the timeout is the template's.
func TestPlanDetectsDriftWithoutAReport(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond)
	dir := t.TempDir()
	const rule = `SecurityGroupIngress=[{"IpProtocol":"tcp","FromPort":443,"ToPort":443,"CidrIp":"10.0.0.0/8"},{"IpProtocol":"tcp","FromPort":22,"ToPort":22,"CidrIp":"0.0.0.0/0"}]`
	if code, out := both(t, "push", ondriftBundle(t, dir, "keep", 30), "--deployment", "odkeep", "--bucket", localBucket, "--wait", "--poll", "20ms", "--timeout", "1m"); code != 0 {
		t.Fatalf("push: exit %d\n%s", code, out)
	}
	for _, tamper := range [][]string{{"Web", rule}, {"Queue", "VisibilityTimeout=45"}} {
		if code, out := both(t, "local", "tamper", "odkeep-web", tamper[0], tamper[1]); code != 0 {
			t.Fatalf("tamper: exit %d\n%s", code, out)
		}
	}
	code, out := both(t, "plan", ondriftBundle(t, dir, "keep", 60), "--deployment", "odkeep", "--bucket", localBucket, "--wait", "--poll", "20ms", "--format", "md")
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s", code, out)
	}
	for _, want := range []string{"## Changed outside cairn", "are shown as the drift detection ", " made by this plan found them",
		"| web | Web | /SecurityGroupIngress", `"FromPort":22`, "leaves it (CloudFormation does not touch it: still drifted)",
		"| web | Queue | /VisibilityTimeout | `30` | `45` | (its new value) | **overwrites it** with the template's new value |"} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan lacks %q:\n%s", want, out)
		}
	}
	// The detection leaves the plan current: it applies, and the rule stays (keep).
	if code, out := both(t, "apply", dir, "--deployment", "odkeep", "--bucket", localBucket, "--wait", "--poll", "20ms", "--timeout", "1m"); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	for range 100 {
		if code, out = both(t, "drift", "odkeep", "--wait", "--poll", "20ms", "--bucket", localBucket); !strings.Contains(out, "deploy in progress") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code != 1 || !strings.Contains(out, "SecurityGroupIngress") || strings.Contains(out, "VisibilityTimeout") {
		t.Errorf("drift after the apply: exit %d, want the rule left and the timeout overwritten\n%s", code, out)
	}
}

// TestPlanRecreatesDeletedResource: a queue deleted out of band (through the SQS API), then
// a plan of its on_drift revert stack: the comment says the plan re-creates it; after the
// apply the queue exists again and `cairn drift` is clean.
func TestPlanRecreatesDeletedResource(t *testing.T) {
	e, _ := deployEmulator(t, 20*time.Millisecond)
	ctx := context.Background()
	dir := t.TempDir()
	if code, out := both(t, "push", ondriftBundle(t, dir, "revert", 30), "--deployment", "odrevert", "--bucket", localBucket, "--wait", "--poll", "20ms", "--timeout", "1m"); code != 0 {
		t.Fatalf("push: exit %d\n%s", code, out)
	}
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	queue := func() string {
		t.Helper()
		res, err := cloudformation.NewFromConfig(cfg).DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{StackName: aws.String("odrevert-web"), LogicalResourceId: aws.String("Queue")})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(res.StackResourceDetail.PhysicalResourceId)
	}
	if _, err := sqs.NewFromConfig(cfg).DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(queue())}); err != nil {
		t.Fatal(err)
	}
	code, out := both(t, "plan", ondriftBundle(t, dir, "revert", 60), "--deployment", "odrevert", "--bucket", localBucket, "--wait", "--poll", "20ms", "--format", "md")
	if code != 0 || !strings.Contains(out, "| web | Queue | (the resource) | exists | deleted | exists | **re-creates it** from the template |") {
		t.Fatalf("plan: exit %d, want the queue re-created\n%s", code, out)
	}
	if code, out := both(t, "apply", dir, "--deployment", "odrevert", "--bucket", localBucket, "--wait", "--poll", "20ms", "--timeout", "1m"); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	if _, err := sqs.NewFromConfig(cfg).GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queue())}); err != nil {
		t.Errorf("the queue after the apply: %v", err)
	}
	for range 100 {
		if code, out = both(t, "drift", "odrevert", "--wait", "--poll", "20ms", "--bucket", localBucket); !strings.Contains(out, "deploy in progress") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code != 0 || !strings.Contains(out, "IN_SYNC") {
		t.Errorf("drift after the apply: exit %d\n%s", code, out)
	}
}

// newestRunReport is the Markdown report of deployment's newest run, read from cairn's bucket.
func newestRunReport(t *testing.T, s3c *s3.Client, deployment string) string {
	t.Helper()
	ctx := context.Background()
	out, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(localBucket), Prefix: aws.String(bucket.RunsOf(deployment))})
	if err != nil {
		t.Fatal(err)
	}
	var newest string
	for _, o := range out.Contents {
		if k := aws.ToString(o.Key); strings.HasSuffix(k, ".md") && k > newest {
			newest = k
		}
	}
	if newest == "" {
		t.Fatalf("no run report of %s", deployment)
	}
	obj, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(localBucket), Key: aws.String(newest)})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Body.Close()
	b, err := io.ReadAll(obj.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPlanReadsItsGraphsReportUnderItsGraphName: deployment odns moves to another namespace,
// leaving its old graph behind, which keeps the report folder drift/odns/; the sweep files
// the new graph's report under NAMESPACE.KEY (drift/odnsb.odns/). The plan of an on_drift
// keep stack reads that report (not the old graph's, nor detecting): its comment says the
// rule added out of band is left, as that report found it.
func TestPlanReadsItsGraphsReportUnderItsGraphName(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond)
	const rule = `SecurityGroupIngress=[{"IpProtocol":"tcp","FromPort":443,"ToPort":443,"CidrIp":"10.0.0.0/8"},{"IpProtocol":"tcp","FromPort":22,"ToPort":22,"CidrIp":"0.0.0.0/0"}]`
	dir := t.TempDir()
	for _, ns := range []string{"odnsa", "odnsb"} {
		if code, out := both(t, "push", ondriftBundleIn(t, dir, ns, "keep", 30), "--deployment", "odns", "--bucket", localBucket, "--wait", "--poll", "20ms", "--timeout", "1m"); code != 0 {
			t.Fatalf("push in namespace %s: exit %d\n%s", ns, code, out)
		}
	}
	if code, out := both(t, "local", "tamper", "odnsb-web", "Web", rule); code != 0 {
		t.Fatalf("tamper: exit %d\n%s", code, out)
	}
	var code int
	var out string
	for range 100 {
		if code, out = both(t, "drift", "--wait", "--poll", "20ms", "--bucket", localBucket); !strings.Contains(out, "deploy in progress") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code != 1 || !strings.Contains(out, "drift/odnsb.odns/") {
		t.Fatalf("drift: exit %d, want the new graph's report under drift/odnsb.odns/\n%s", code, out)
	}
	code, out = both(t, "plan", ondriftBundleIn(t, dir, "odnsb", "keep", 60), "--deployment", "odns", "--bucket", localBucket, "--wait", "--poll", "20ms", "--format", "md")
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s", code, out)
	}
	for _, want := range []string{"## Changed outside cairn", "are shown as the drift report s3://" + localBucket + "/drift/odnsb.odns/",
		"| web | Web | /SecurityGroupIngress", "leaves it (CloudFormation does not touch it: still drifted)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan lacks %q:\n%s", want, out)
		}
	}
}
