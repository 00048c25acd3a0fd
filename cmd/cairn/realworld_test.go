package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
)

// copyBundle copies a bundle of testdata/bundles into a folder the test may edit.
func copyBundle(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join(testBundles, name)
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// edit replaces old by new in a bundle's file, once.
func edit(t *testing.T, dir, file, old, new string) {
	t.Helper()
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", file, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

var followFlags = []string{"--wait", "--poll", "20ms", "--timeout", "2m"}

// cairnOK runs cairn with args and returns its output, failing on a non-zero exit.
func cairnOK(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("cairn %s exited %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func outputsOf(s cfntypes.Stack) map[string]string {
	m := map[string]string{}
	for _, o := range s.Outputs {
		m[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	return m
}

// allStacks lists every live stack, nested ones (which cairn's own view leaves out) too.
func allStacks(t *testing.T, cfn *cloudformation.Client) []cfntypes.Stack {
	t.Helper()
	var out []cfntypes.Stack
	for _, s := range liveStacks(t, cfn) {
		out = append(out, s)
	}
	return out
}

func eventReasons(t *testing.T, cfn *cloudformation.Client, stack string) string {
	t.Helper()
	out, err := cfn.DescribeStackEvents(context.Background(), &cloudformation.DescribeStackEventsInput{StackName: aws.String(stack)})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range out.StackEvents {
		b.WriteString(aws.ToString(e.LogicalResourceId) + " " + string(e.ResourceStatus) + " " + aws.ToString(e.ResourceStatusReason) + "\n")
	}
	return b.String()
}

// TestRealWorldBundles validates, pushes, updates and removes (destroy, then approve) the
// bundles of templates real users write — a local nested stack, a SAM function fed by SQS,
// Fn::ForEach, a Lambda-backed custom resource — through the CLI and the deployer, against
// the emulator.
func TestRealWorldBundles(t *testing.T) {
	tests := []struct {
		bundle, deployment string
		created            func(t *testing.T, em *awslocal.Emulator, cfn *cloudformation.Client)
		update             func(t *testing.T, dir string) // edits the bundle
		viaPlan            string                         // the update goes through a plan whose output has this
		updated            func(t *testing.T, em *awslocal.Emulator, cfn *cloudformation.Client)
	}{
		{
			bundle: "nested", deployment: "nest",
			created: func(t *testing.T, _ *awslocal.Emulator, cfn *cloudformation.Client) {
				stacks := allStacks(t, cfn)
				if len(stacks) != 3 {
					t.Fatalf("%d stacks, want the parent, its nested network and the network's subnets", len(stacks))
				}
				out := outputsOf(liveStacks(t, cfn)["nest-app"])
				if !strings.HasPrefix(out["VpcId"], "vpc-") || !strings.HasPrefix(out["SubnetId"], "subnet-") {
					t.Errorf("outputs through the nested stacks %v", out)
				}
			},
			update: func(t *testing.T, dir string) {
				// only the grandchild changes: the parent's input does
				edit(t, dir, "templates/network/subnets.yaml", "      CidrBlock: !Ref Cidr\n", "      CidrBlock: !Ref Cidr\n      MapPublicIpOnLaunch: true\n")
			},
			viaPlan: "Network/Subnets/Subnet",
			updated: func(t *testing.T, _ *awslocal.Emulator, cfn *cloudformation.Client) {
				for _, s := range allStacks(t, cfn) {
					if strings.Contains(aws.ToString(s.StackName), "-Subnets-") && s.StackStatus != cfntypes.StackStatusUpdateComplete {
						t.Errorf("the subnets stack is %s after its template changed", s.StackStatus)
					}
				}
			},
		},
		{
			bundle: "sam-sqs", deployment: "sam",
			created: func(t *testing.T, em *awslocal.Emulator, cfn *cloudformation.Client) {
				out := outputsOf(liveStacks(t, cfn)["sam-orders"])
				if out["Function"] != "sam-orders-processor" || !strings.HasPrefix(out["Role"], "arn:aws:iam::000000000000:role/sam-orders-ProcessorRole-") {
					t.Fatalf("outputs %v", out)
				}
				// the expanded event source mapping feeds the function the queue's messages
				got := make(chan events.SQSEvent, 1)
				if err := em.RegisterFunction("sam-orders-processor", func(_ context.Context, ev events.SQSEvent) error { got <- ev; return nil }); err != nil {
					t.Fatal(err)
				}
				cfg, err := awsclient.Load(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := sqs.NewFromConfig(cfg).SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(out["QueueUrl"]), MessageBody: aws.String("order 1")}); err != nil {
					t.Fatal(err)
				}
				select {
				case ev := <-got:
					if len(ev.Records) != 1 || ev.Records[0].Body != "order 1" {
						t.Errorf("the function got %+v", ev)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("the function never got the queue's message")
				}
			},
			update: func(t *testing.T, dir string) { edit(t, dir, "cairn.yaml", `BatchSize: "5"`, `BatchSize: "2"`) },
			updated: func(t *testing.T, _ *awslocal.Emulator, cfn *cloudformation.Client) {
				if got := param(liveStacks(t, cfn)["sam-orders"], "BatchSize"); got != "2" {
					t.Errorf("BatchSize %q after the update", got)
				}
			},
		},
		{
			bundle: "foreach", deployment: "loop",
			created: func(t *testing.T, _ *awslocal.Emulator, cfn *cloudformation.Client) {
				out := outputsOf(liveStacks(t, cfn)["loop-queues"])
				if !strings.HasSuffix(out["Urlorders"], "/loop-queues-orders") || !strings.HasSuffix(out["Urlrefunds"], "/loop-queues-refunds") || out["Count"] != "2" {
					t.Errorf("outputs %v", out)
				}
			},
			update: func(t *testing.T, dir string) {
				edit(t, dir, "cairn.yaml", "Names: orders,refunds", "Names: orders,refunds,returns")
			},
			updated: func(t *testing.T, _ *awslocal.Emulator, cfn *cloudformation.Client) {
				if out := outputsOf(liveStacks(t, cfn)["loop-queues"]); out["Count"] != "3" || !strings.HasSuffix(out["Urlreturns"], "/loop-queues-returns") {
					t.Errorf("outputs after the update %v", out)
				}
			},
		},
		{
			bundle: "lambda-custom", deployment: "lookup",
			created: func(t *testing.T, em *awslocal.Emulator, cfn *cloudformation.Client) {
				if ev := eventReasons(t, cfn, "lookup-app"); !strings.Contains(ev, "a stand-in answered the Create request SUCCESS with no data") {
					t.Errorf("no stand-in warning in the events:\n%s", ev)
				}
				// the next answers for Lookup carry data and a physical id of their own
				body := `{"stack": "lookup-app", "logicalId": "Lookup", "physicalResourceId": "ami-lookup-1", "data": {"ImageId": "ami-0123456789abcdef0"}}`
				resp, err := http.Post(em.URL()+"/_local/cloudformation/custom-resources", "application/json", strings.NewReader(body))
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("set the stand-in's answer: %v %v", resp, err)
				}
				resp.Body.Close()
			},
			update: func(t *testing.T, dir string) {
				edit(t, dir, "cairn.yaml", "    template_path: app.yaml\n", "    template_path: app.yaml\n    parameters:\n      Architecture: arm64\n")
			},
			updated: func(t *testing.T, _ *awslocal.Emulator, cfn *cloudformation.Client) {
				if out := outputsOf(liveStacks(t, cfn)["lookup-app"]); out["LookupId"] != "ami-lookup-1" {
					t.Errorf("LookupId %q after the update, want the stand-in's physical id", out["LookupId"])
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.bundle, func(t *testing.T) {
			em, _ := deployEmulator(t)
			t.Setenv("CAIRN_BUCKET", localBucket)
			cfn := cfnClient(t)
			dir := copyBundle(t, tc.bundle)
			if out := cairnOK(t, "validate", dir); !strings.Contains(out, ": ok: 1 stacks") {
				t.Fatalf("validate: %s", out)
			}
			if out := cairnOK(t, append([]string{"push", dir, "--deployment", tc.deployment}, followFlags...)...); !strings.Contains(out, ": 1 created,") {
				t.Fatalf("push:\n%s", out)
			}
			tc.created(t, em, cfn)
			tc.update(t, dir)
			if tc.viaPlan != "" {
				out := cairnOK(t, append([]string{"plan", dir, "--deployment", tc.deployment}, followFlags...)...)
				m := regexp.MustCompile(`plan id: (\S+)`).FindStringSubmatch(out)
				if m == nil || !strings.Contains(out, tc.viaPlan) {
					t.Fatalf("plan lacks %q:\n%s", tc.viaPlan, out)
				}
				if out := cairnOK(t, append([]string{"approve", tc.deployment, m[1]}, followFlags...)...); !strings.Contains(out, "1 updated") {
					t.Fatalf("approve:\n%s", out)
				}
			} else if out := cairnOK(t, append([]string{"push", dir, "--deployment", tc.deployment}, followFlags...)...); !strings.Contains(out, ": 0 created, 1 updated,") {
				t.Fatalf("update push:\n%s", out)
			}
			tc.updated(t, em, cfn)
			out := cairnOK(t, append([]string{"destroy", tc.deployment}, followFlags...)...)
			m := regexp.MustCompile(`plan id: (\S+)`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("destroy:\n%s", out)
			}
			cairnOK(t, append([]string{"approve", tc.deployment, m[1]}, followFlags...)...)
			if left := allStacks(t, cfn); len(left) != 0 {
				t.Errorf("%d stacks left after the approved destroy", len(left))
			}
		})
	}
}
