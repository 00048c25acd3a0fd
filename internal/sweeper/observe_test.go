package sweeper

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/smithy-go"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/drift"
)

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// fakeCFN answers the drift calls from canned values, for cases the emulator does not
// produce: failures, throttling and pagination.
type fakeCFN struct {
	CloudFormationAPI
	detectErr error
	status    *cloudformation.DescribeStackDriftDetectionStatusOutput
	statusErr error
	pages     []*cloudformation.DescribeStackResourceDriftsOutput
	tokens    []string
}

func (f *fakeCFN) DetectStackDrift(ctx context.Context, in *cloudformation.DetectStackDriftInput, _ ...func(*cloudformation.Options)) (*cloudformation.DetectStackDriftOutput, error) {
	if f.detectErr != nil {
		return nil, f.detectErr
	}
	return &cloudformation.DetectStackDriftOutput{StackDriftDetectionId: aws.String("det-1")}, nil
}

func (f *fakeCFN) DescribeStackDriftDetectionStatus(ctx context.Context, in *cloudformation.DescribeStackDriftDetectionStatusInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStackDriftDetectionStatusOutput, error) {
	return f.status, f.statusErr
}

func (f *fakeCFN) DescribeStackResourceDrifts(ctx context.Context, in *cloudformation.DescribeStackResourceDriftsInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStackResourceDriftsOutput, error) {
	f.tokens = append(f.tokens, aws.ToString(in.NextToken))
	p := f.pages[0]
	f.pages = f.pages[1:]
	return p, nil
}

func apiErr(code, msg string) error { return &smithy.GenericAPIError{Code: code, Message: msg} }

func resourceDrift(logicalID, path string) cfntypes.StackResourceDrift {
	return cfntypes.StackResourceDrift{LogicalResourceId: aws.String(logicalID), ResourceType: aws.String("AWS::SQS::Queue"),
		StackResourceDriftStatus: cfntypes.StackResourceDriftStatusModified,
		PropertyDifferences: []cfntypes.PropertyDifference{{PropertyPath: aws.String(path), ExpectedValue: aws.String("30"),
			ActualValue: aws.String("60"), DifferenceType: cfntypes.DifferenceTypeNotEqual}}}
}

func testDriver(t *testing.T, cfn CloudFormationAPI) (*Driver, *invocation) {
	t.Helper()
	d := &Driver{cfg: Config{Concurrency: 5, Budget: func() *rate.Limiter { return rate.NewLimiter(rate.Inf, 1) }}, c: Clients{CFN: cfn}, clk: clock.NewFake(mustTime("2026-11-30T12:00:00Z")), log: slog.New(slog.DiscardHandler)}
	return d, &invocation{places: d.places("test"), log: d.log}
}

func TestDetectStartsOrSettlesByAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		want   drift.Status
		reason string
	}{
		{"started", nil, drift.Detecting, ""},
		{"throttled stays pending", apiErr("Throttling", "Rate exceeded"), drift.Pending, ""},
		{"gone", apiErr("ValidationError", "Stack with id shop-app does not exist"), drift.NotChecked, "stack does not exist in AWS"},
		{"refused", apiErr("ValidationError", "Drift detection is not supported for stack shop-app in status ROLLBACK_COMPLETE"), drift.Unknown, "ROLLBACK_COMPLETE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, inv := testDriver(t, &fakeCFN{detectErr: tc.err})
			s := &drift.Stack{Name: "app", StackName: "shop-app", Status: drift.Pending}
			answer, err := d.detect(context.Background(), inv, s)
			if err != nil {
				t.Fatal(err)
			}
			s = drift.Start(&drift.Sweep{Graphs: []*drift.Graph{{Stacks: []*drift.Stack{s}}}}, []drift.Started{answer}, d.clk.Now()).Graphs[0].Stacks[0]
			if s.Status != tc.want || !strings.Contains(s.Reason, tc.reason) {
				t.Fatalf("%s (%q), want %s containing %q", s.Status, s.Reason, tc.want, tc.reason)
			}
		})
	}
}

func TestObserveSettlesFinishedDetections(t *testing.T) {
	status := func(det cfntypes.StackDriftDetectionStatus, drift cfntypes.StackDriftStatus, reason string) *cloudformation.DescribeStackDriftDetectionStatusOutput {
		return &cloudformation.DescribeStackDriftDetectionStatusOutput{DetectionStatus: det, StackDriftStatus: drift, DetectionStatusReason: aws.String(reason)}
	}
	twoPages := func() []*cloudformation.DescribeStackResourceDriftsOutput {
		return []*cloudformation.DescribeStackResourceDriftsOutput{
			{StackResourceDrifts: []cfntypes.StackResourceDrift{resourceDrift("Queue", "/VisibilityTimeout")}, NextToken: aws.String("p2")},
			{StackResourceDrifts: []cfntypes.StackResourceDrift{resourceDrift("Dlq", "/VisibilityTimeout")}},
		}
	}
	for _, tc := range []struct {
		name      string
		cfn       *fakeCFN
		want      drift.Status
		reason    string
		resources int
	}{
		{"in progress", &fakeCFN{status: status("DETECTION_IN_PROGRESS", "", "")}, drift.Detecting, "", 0},
		{"in sync", &fakeCFN{status: status("DETECTION_COMPLETE", "IN_SYNC", "")}, drift.InSync, "", 0},
		{"drifted over two pages", &fakeCFN{status: status("DETECTION_COMPLETE", "DRIFTED", ""), pages: twoPages()}, drift.Drifted, "", 2},
		{"failed", &fakeCFN{status: status("DETECTION_FAILED", "", "Failed to detect drift on resource [Fn]: access denied")}, drift.Unknown, "access denied", 0},
		{"failed but drifted", &fakeCFN{status: status("DETECTION_FAILED", "DRIFTED", "Failed to detect drift on resource [Fn]"), pages: twoPages()}, drift.Drifted, "some resources", 2},
		{"throttled", &fakeCFN{statusErr: apiErr("Throttling", "Rate exceeded")}, drift.Detecting, "", 0},
		{"detection unknown", &fakeCFN{statusErr: apiErr("ValidationError", "Stack drift detection det-1 does not exist")}, drift.Unknown, "det-1", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, inv := testDriver(t, tc.cfn)
			s := &drift.Stack{Name: "app", StackName: "shop-app", Status: drift.Detecting, DetectionID: "det-1"}
			seen, err := d.look(context.Background(), inv, s)
			if err != nil {
				t.Fatal(err)
			}
			sw := &drift.Sweep{StartedAt: d.clk.Now(), Graphs: []*drift.Graph{{Stacks: []*drift.Stack{s}}}}
			s = drift.Observe(sw, []drift.Detection{seen}, d.clk.Now(), time.Hour).Graphs[0].Stacks[0]
			if s.Status != tc.want || !strings.Contains(s.Reason, tc.reason) || len(s.Resources) != tc.resources {
				t.Fatalf("%s (%q) with %d resources, want %s containing %q with %d", s.Status, s.Reason, len(s.Resources), tc.want, tc.reason, tc.resources)
			}
			if tc.resources == 2 && (len(tc.cfn.tokens) != 2 || tc.cfn.tokens[1] != "p2") {
				t.Fatalf("pages requested with tokens %q, want [\"\" p2]", tc.cfn.tokens)
			}
		})
	}
}
