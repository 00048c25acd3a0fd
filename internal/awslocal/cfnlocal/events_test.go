package cfnlocal

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
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
