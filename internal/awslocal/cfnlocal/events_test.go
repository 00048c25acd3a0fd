package cfnlocal

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// Every stack event has its own EventId, so a follower that de-duplicates by id loses
// none: a provider's second CREATE_IN_PROGRESS ("Resource creation Initiated") in the same
// millisecond as the first, signals received, and a rollback's events, included.
func TestStackEventIDsAreUnique(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.Providers = map[string]Provider{"AWS::SQS::Queue": {
			Create: func(ctx context.Context, r Resource) (string, map[string]any, error) { return r.PhysicalID, nil, nil },
		}}
	})
	e.svc.SetResourceDelay("ids", 100*time.Microsecond) // every event in the same millisecond
	body := "Resources:\n  A: {Type: AWS::SQS::Queue}\n  B: {Type: AWS::SQS::Queue}\n  C: {Type: AWS::SNS::Topic}\n" +
		"  I:\n    Type: AWS::EC2::Instance\n    CreationPolicy: {ResourceSignal: {Count: 2}}\n    Properties: {ImageId: ami-0123456789abcdef0}\n"
	e.create("ids", body, nil)
	e.settle("ids")
	if err := e.svc.InjectFault(Fault{Stack: "ids", LogicalID: "C2", Operation: "CREATE", Reason: "boom"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cfn.UpdateStack(context.Background(), &cloudformation.UpdateStackInput{StackName: aws.String("ids"),
		TemplateBody: aws.String(body + "  D: {Type: AWS::SQS::Queue}\n  C2: {Type: AWS::SNS::Topic, DependsOn: D}\n")}); err != nil {
		t.Fatal(err)
	}
	e.settle("ids")
	evs := e.allEvents("ids")
	seen := map[string]string{}
	creating := 0
	for _, ev := range evs {
		id, line := aws.ToString(ev.EventId), eventLine(ev)
		if prev, dup := seen[id]; dup {
			t.Errorf("EventId %s twice: %s and %s", id, prev, line)
		}
		seen[id] = line
		if aws.ToString(ev.LogicalResourceId) == "A" && ev.ResourceStatus == "CREATE_IN_PROGRESS" {
			creating++
		}
	}
	if creating != 2 || len(evs) < 12 {
		t.Errorf("%d events, %d CREATE_IN_PROGRESS of A (want 2):\n%v", len(evs), creating, eventLines(evs))
	}
}

// TestStackEventsAreAMillisecondApart: events of one instant of the clock (no resource
// delay) are a millisecond apart, in the order they happened, so a client that orders them
// by Timestamp — the CDK CLI sorts what it reads by it, keeping the API's newest-first
// order within a tie — shows a stack's UPDATE_IN_PROGRESS first and its UPDATE_COMPLETE
// after its resources', where it printed UPDATE_COMPLETE first.
func TestStackEventsAreAMillisecondApart(t *testing.T) {
	e := newEnv(t, nil)
	e.svc.SetResourceDelay("tie", 0)
	body := "Resources:\n  A: {Type: AWS::SNS::Topic}\n  B: {Type: AWS::SNS::Topic, DependsOn: A}\n"
	e.create("tie", body, nil)
	e.settle("tie")
	if _, err := e.cfn.UpdateStack(context.Background(), &cloudformation.UpdateStackInput{StackName: aws.String("tie"),
		TemplateBody: aws.String(body + "  C: {Type: AWS::SNS::Topic, DependsOn: B}\n")}); err != nil {
		t.Fatal(err)
	}
	e.settle("tie")
	evs := e.allEvents("tie") // oldest first
	for i := 1; i < len(evs); i++ {
		if !evs[i].Timestamp.After(*evs[i-1].Timestamp) {
			t.Errorf("event %d (%s at %s) is not after event %d (%s at %s)", i, eventLine(evs[i]), evs[i].Timestamp.Format(time.RFC3339Nano),
				i-1, eventLine(evs[i-1]), evs[i-1].Timestamp.Format(time.RFC3339Nano))
		}
	}
	// As the CDK CLI orders them: the API's pages (newest first), sorted by Timestamp.
	sorted := slices.Clone(evs)
	slices.Reverse(sorted)
	slices.SortStableFunc(sorted, func(a, b types.StackEvent) int { return a.Timestamp.Compare(*b.Timestamp) })
	lines := eventLines(sorted)
	want := []string{"tie CREATE_IN_PROGRESS", "A CREATE_IN_PROGRESS"}
	if len(lines) < 2 || !slices.Equal(lines[:2], want) || lines[len(lines)-1] != "tie UPDATE_COMPLETE" ||
		!slices.Contains(lines, "tie UPDATE_IN_PROGRESS") || slices.Index(lines, "tie UPDATE_IN_PROGRESS") > slices.Index(lines, "C CREATE_IN_PROGRESS") {
		t.Errorf("events as the CDK CLI orders them:\n%s", strings.Join(lines, "\n"))
	}
}
