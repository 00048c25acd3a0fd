package cfnlocal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

func TestDriftReportsTamperedPropertyValues(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	e.create("app", readFixture(t, "app.yaml")[0:0]+`Resources:
  Bucket:
    Type: AWS::S3::Bucket
    Properties:
      VersioningConfiguration: {Status: Enabled}
  Queue:
    Type: AWS::SQS::Queue
    Properties: {VisibilityTimeout: 30}
`, nil)
	e.settle("app")
	postControl(t, e, "tamper", map[string]string{"stack": "app", "logicalId": "Bucket", "property": "VersioningConfiguration/Status", "value": "Suspended"})
	if err := e.svc.Tamper("app", "Nope", "X", "1"); err == nil {
		t.Error("tampering with a missing resource succeeded")
	}
	det, err := e.cfn.DetectStackDrift(ctx, &cloudformation.DetectStackDriftInput{StackName: aws.String("app")})
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.cfn.DescribeStackDriftDetectionStatus(ctx, &cloudformation.DescribeStackDriftDetectionStatusInput{StackDriftDetectionId: det.StackDriftDetectionId})
	if err != nil {
		t.Fatal(err)
	}
	if st.DetectionStatus != types.StackDriftDetectionStatusDetectionInProgress {
		t.Fatalf("detection right away = %s", st.DetectionStatus)
	}
	e.clk.Advance(time.Minute)
	st, err = e.cfn.DescribeStackDriftDetectionStatus(ctx, &cloudformation.DescribeStackDriftDetectionStatusInput{StackDriftDetectionId: det.StackDriftDetectionId})
	if err != nil {
		t.Fatal(err)
	}
	if st.DetectionStatus != types.StackDriftDetectionStatusDetectionComplete || st.StackDriftStatus != types.StackDriftStatusDrifted || aws.ToInt32(st.DriftedStackResourceCount) != 1 {
		t.Fatalf("detection = %s %s %d", st.DetectionStatus, st.StackDriftStatus, aws.ToInt32(st.DriftedStackResourceCount))
	}
	drifts, err := e.cfn.DescribeStackResourceDrifts(ctx, &cloudformation.DescribeStackResourceDriftsInput{StackName: aws.String("app"),
		StackResourceDriftStatusFilters: []types.StackResourceDriftStatus{types.StackResourceDriftStatusModified}})
	if err != nil {
		t.Fatal(err)
	}
	if len(drifts.StackResourceDrifts) != 1 {
		t.Fatalf("modified resources = %d", len(drifts.StackResourceDrifts))
	}
	d := drifts.StackResourceDrifts[0]
	if aws.ToString(d.LogicalResourceId) != "Bucket" || len(d.PropertyDifferences) != 1 {
		t.Fatalf("drift = %+v", d)
	}
	pd := d.PropertyDifferences[0]
	if aws.ToString(pd.PropertyPath) != "/VersioningConfiguration/Status" || aws.ToString(pd.ExpectedValue) != "Enabled" ||
		aws.ToString(pd.ActualValue) != "Suspended" || pd.DifferenceType != types.DifferenceTypeNotEqual {
		t.Fatalf("difference = %s %s %s %s", aws.ToString(pd.PropertyPath), aws.ToString(pd.ExpectedValue), aws.ToString(pd.ActualValue), pd.DifferenceType)
	}
	if !strings.Contains(aws.ToString(d.ActualProperties), `"Suspended"`) || !strings.Contains(aws.ToString(d.ExpectedProperties), `"Enabled"`) {
		t.Errorf("properties = %s / %s", aws.ToString(d.ExpectedProperties), aws.ToString(d.ActualProperties))
	}
	stack := e.stack("app")
	if stack.DriftInformation.StackDriftStatus != types.StackDriftStatusDrifted {
		t.Errorf("stack drift = %s", stack.DriftInformation.StackDriftStatus)
	}
	var driftEvent map[string]any
	e.mu.Lock()
	for _, ev := range e.events {
		if ev.DetailType == "CloudFormation Drift Detection Status Change" {
			_ = json.Unmarshal(ev.Detail, &driftEvent)
		}
	}
	e.mu.Unlock()
	sd, _ := driftEvent["status-details"].(map[string]any)
	if sd["stack-drift-status"] != "DRIFTED" || sd["detection-status"] != "DETECTION_COMPLETE" {
		t.Errorf("drift event detail = %v", driftEvent)
	}
	// The documented detail shape: the detection id and the drifted count's own object.
	details, _ := driftEvent["drift-detection-details"].(map[string]any)
	if id, _ := driftEvent["stack-drift-detection-id"].(string); id == "" || details["drifted-stack-resource-count"] != float64(1) {
		t.Errorf("drift event detail = %v", driftEvent)
	}
}

func TestPaginationOverMoreThanOnePage(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, func(o *Options) { o.PageSize = 3 })
	var body strings.Builder
	body.WriteString("Resources:\n")
	for i := range 7 {
		fmt.Fprintf(&body, "  T%d:\n    Type: AWS::SNS::Topic\n", i)
	}
	for i := range 4 {
		e.create(fmt.Sprintf("p%d", i), body.String(), nil)
	}
	e.settle("p0")

	var stacks int
	sp := cloudformation.NewDescribeStacksPaginator(e.cfn, &cloudformation.DescribeStacksInput{})
	pages := 0
	for sp.HasMorePages() {
		out, err := sp.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		stacks += len(out.Stacks)
	}
	if stacks != 4 || pages != 2 {
		t.Errorf("DescribeStacks: %d stacks in %d pages, want 4 in 2", stacks, pages)
	}
	// 1 + 7*2 + 1 events
	if n := len(e.allEvents("p0")); n != 16 {
		t.Errorf("DescribeStackEvents over pages = %d events, want 16", n)
	}
	evs, err := e.cfn.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String("p0")})
	if err != nil {
		t.Fatal(err)
	}
	if evs.StackEvents[0].ResourceStatus != types.ResourceStatusCreateComplete || aws.ToString(evs.StackEvents[0].LogicalResourceId) != "p0" || evs.NextToken == nil {
		t.Errorf("first page starts with %s and has next token %v; want newest first", eventLine(evs.StackEvents[0]), evs.NextToken)
	}

	if _, err := e.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("p0"), ChangeSetName: aws.String("rm"),
		TemplateBody: aws.String("Resources:\n  Only:\n    Type: AWS::SQS::Queue\n")}); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Minute)
	var changes []types.Change
	var token *string
	pages = 0
	for {
		out, err := e.cfn.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String("p0"), ChangeSetName: aws.String("rm"), NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		changes = append(changes, out.Changes...)
		if token = out.NextToken; token == nil {
			break
		}
	}
	if len(changes) != 8 || pages != 3 {
		t.Errorf("DescribeChangeSet: %d changes in %d pages, want 8 in 3", len(changes), pages)
	}
}

func TestWaitersWithAVirtualClockAdvancedByAGoroutine(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // virtual time runs 1000x faster than real time
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				e.clk.Advance(time.Second)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	fast := func(min, max *time.Duration) { *min, *max = 5*time.Millisecond, 20*time.Millisecond }

	e.create("w", threeQueues, nil)
	if err := cloudformation.NewStackCreateCompleteWaiter(e.cfn, func(o *cloudformation.StackCreateCompleteWaiterOptions) {
		fast(&o.MinDelay, &o.MaxDelay)
	}).Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("w")}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("w"), ChangeSetName: aws.String("cs"),
		TemplateBody: aws.String(strings.Replace(threeQueues, "DelaySeconds: 0", "DelaySeconds: 9", 1))}); err != nil {
		t.Fatal(err)
	}
	if err := cloudformation.NewChangeSetCreateCompleteWaiter(e.cfn, func(o *cloudformation.ChangeSetCreateCompleteWaiterOptions) {
		fast(&o.MinDelay, &o.MaxDelay)
	}).Wait(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String("w"), ChangeSetName: aws.String("cs")}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String("w"), ChangeSetName: aws.String("cs")}); err != nil {
		t.Fatal(err)
	}
	if err := cloudformation.NewStackUpdateCompleteWaiter(e.cfn, func(o *cloudformation.StackUpdateCompleteWaiterOptions) {
		fast(&o.MinDelay, &o.MaxDelay)
	}).Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("w")}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("w")}); err != nil {
		t.Fatal(err)
	}
	if err := cloudformation.NewStackDeleteCompleteWaiter(e.cfn, func(o *cloudformation.StackDeleteCompleteWaiterOptions) {
		fast(&o.MinDelay, &o.MaxDelay)
	}).Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("w")}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	// A failed create is a waiter failure, not a timeout.
	if err := e.svc.InjectFault(Fault{Stack: "w2", LogicalID: "B", Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	e.create("w2", threeQueues, nil)
	err := cloudformation.NewStackCreateCompleteWaiter(e.cfn, func(o *cloudformation.StackCreateCompleteWaiterOptions) {
		fast(&o.MinDelay, &o.MaxDelay)
	}).Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("w2")}, 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), "transitioned to Failure") {
		t.Fatalf("waiter on a failing create: %v", err)
	}
}

func TestStatusEventsAndNotifications(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	topic := "arn:aws:sns:us-east-1:000000000000:stack-events"
	if _, err := e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("n"), TemplateBody: aws.String(threeQueues),
		NotificationARNs: []string{topic}, ClientRequestToken: aws.String("tok-7")}); err != nil {
		t.Fatal(err)
	}
	st := e.settle("n")
	e.mu.Lock()
	evs := append(e.events[:0:0], e.events...)
	pubs := append(e.pubs[:0:0], e.pubs...)
	e.mu.Unlock()
	var statuses []string
	for _, ev := range evs {
		if ev.DetailType != "CloudFormation Stack Status Change" || ev.Source != "aws.cloudformation" || ev.Resources[0] != aws.ToString(st.StackId) {
			t.Fatalf("event = %+v", ev)
		}
		var d struct {
			StackID string `json:"stack-id"`
			Status  struct {
				Status string `json:"status"`
			} `json:"status-details"`
			Token string `json:"client-request-token"`
		}
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			t.Fatal(err)
		}
		if d.StackID != aws.ToString(st.StackId) || d.Token != "tok-7" {
			t.Errorf("detail = %s", ev.Detail)
		}
		statuses = append(statuses, d.Status.Status)
	}
	if strings.Join(statuses, ",") != "CREATE_IN_PROGRESS,CREATE_COMPLETE" {
		t.Errorf("status change events = %v", statuses)
	}
	raw, _ := json.Marshal(evs[0])
	for _, k := range []string{`"detail-type":"CloudFormation Stack Status Change"`, `"account":"000000000000"`, `"region":"us-east-1"`} {
		if !bytes.Contains(raw, []byte(k)) {
			t.Errorf("EventBridge JSON %s lacks %s", raw, k)
		}
	}
	// classic SNS notifications: one per event
	if len(pubs) != len(e.allEvents("n")) {
		t.Fatalf("%d notifications for %d events", len(pubs), len(e.allEvents("n")))
	}
	last := pubs[len(pubs)-1]
	for _, want := range []string{"StackName='n'\n", "ResourceStatus='CREATE_COMPLETE'\n", "ResourceType='AWS::CloudFormation::Stack'\n", "ClientRequestToken='tok-7'\n"} {
		if last.Topic != topic || last.Subject != "AWS CloudFormation Notification" || !strings.Contains(last.Message, want) {
			t.Errorf("notification %q lacks %q", last.Message, want)
		}
	}
}

func TestStatePersistsAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, func(o *Options) { o.Dir = dir })
	e.create("keep", readFixture(t, "network.yaml"), nil)
	before := e.settle("keep")
	if err := e.svc.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := newEnv(t, func(o *Options) { o.Dir = dir })
	after := e2.stack("keep")
	if after.StackStatus != types.StackStatusCreateComplete || aws.ToString(after.StackId) != aws.ToString(before.StackId) ||
		!equalJSON(outputs(after), outputs(before)) {
		t.Fatalf("after restart: %s %v", after.StackStatus, outputs(after))
	}
	// the restored stack still works: its export is visible and it can be updated
	if _, err := e2.cfn.UpdateStack(context.Background(), &cloudformation.UpdateStackInput{StackName: aws.String("keep"), UsePreviousTemplate: aws.Bool(true),
		Parameters: sdkParams(map[string]string{"Env": "prod"})}); err != nil {
		t.Fatal(err)
	}
	if st := e2.settle("keep"); st.StackStatus != types.StackStatusUpdateComplete {
		t.Fatalf("update after restart = %s", st.StackStatus)
	}
}
