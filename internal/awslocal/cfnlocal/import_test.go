package cfnlocal

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

func toImportQueue(url string) []types.ResourceToImport {
	return []types.ResourceToImport{{ResourceType: aws.String("AWS::SQS::Queue"), LogicalResourceId: aws.String("Queue"),
		ResourceIdentifier: map[string]string{"QueueUrl": url}}}
}

const importURL = "https://sqs.us-east-1.amazonaws.com/000000000000/legacy"

// An IMPORT change set adopts an existing resource into a new stack, and then into an
// existing one, as AWS does: Import changes, IMPORT_IN_PROGRESS to IMPORT_COMPLETE, the
// identifier as physical id; the stack updates as any other afterwards.
func TestImportChangeSetAdoptsResources(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	body := "Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n    DeletionPolicy: Retain\n    Properties: {QueueName: legacy}\nOutputs:\n  Url: {Value: !Ref Queue}\n"
	cs := e.settledChangeSet(&cloudformation.CreateChangeSetInput{StackName: aws.String("adopt"), ChangeSetName: aws.String("i1"),
		ChangeSetType: types.ChangeSetTypeImport, TemplateBody: aws.String(body), ResourcesToImport: toImportQueue(importURL)})
	if cs.Status != types.ChangeSetStatusCreateComplete || len(cs.Changes) != 1 {
		t.Fatalf("change set %s (%s), %d changes", cs.Status, aws.ToString(cs.StatusReason), len(cs.Changes))
	}
	rc := cs.Changes[0].ResourceChange
	if rc.Action != types.ChangeActionImport || aws.ToString(rc.LogicalResourceId) != "Queue" || aws.ToString(rc.PhysicalResourceId) != importURL {
		t.Errorf("change %s %s %s", rc.Action, aws.ToString(rc.LogicalResourceId), aws.ToString(rc.PhysicalResourceId))
	}
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{ChangeSetName: cs.ChangeSetId}); err != nil {
		t.Fatal(err)
	}
	st := e.settle("adopt")
	if st.StackStatus != types.StackStatusImportComplete || outputs(st)["Url"] != importURL {
		t.Fatalf("stack %s, outputs %v\n%s", st.StackStatus, outputs(st), strings.Join(eventLines(e.allEvents("adopt")), "\n"))
	}
	mustContainInOrder(t, eventLines(e.allEvents("adopt")), "adopt IMPORT_IN_PROGRESS", "Queue IMPORT_IN_PROGRESS",
		"Queue IMPORT_COMPLETE", "adopt IMPORT_COMPLETE")

	// into the existing stack, beside what it has
	more := body + "  Topic: {Value: !Ref Topic}\n"
	more = strings.Replace(more, "Outputs:", "  Topic:\n    Type: AWS::SNS::Topic\n    DeletionPolicy: Delete\nOutputs:", 1)
	topicARN := "arn:aws:sns:us-east-1:000000000000:legacy-topic"
	cs = e.settledChangeSet(&cloudformation.CreateChangeSetInput{StackName: aws.String("adopt"), ChangeSetName: aws.String("i2"),
		ChangeSetType: types.ChangeSetTypeImport, TemplateBody: aws.String(more), ResourcesToImport: []types.ResourceToImport{{
			ResourceType: aws.String("AWS::SNS::Topic"), LogicalResourceId: aws.String("Topic"), ResourceIdentifier: map[string]string{"TopicArn": topicARN}}}})
	if cs.Status != types.ChangeSetStatusCreateComplete {
		t.Fatalf("second import: %s (%s)", cs.Status, aws.ToString(cs.StatusReason))
	}
	if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{ChangeSetName: cs.ChangeSetId}); err != nil {
		t.Fatal(err)
	}
	st = e.settle("adopt")
	if st.StackStatus != types.StackStatusImportComplete || outputs(st)["Topic"] != topicARN {
		t.Fatalf("stack %s, outputs %v", st.StackStatus, outputs(st))
	}
	if _, err := e.cfn.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("adopt"),
		TemplateBody: aws.String(strings.Replace(more, "{QueueName: legacy}", "{QueueName: legacy, DelaySeconds: 5}", 1))}); err != nil {
		t.Fatal(err)
	}
	if st = e.settle("adopt"); st.StackStatus != types.StackStatusUpdateComplete {
		t.Errorf("update after import: %s", st.StackStatus)
	}
}

// What AWS refuses when the change set is made: a resource to import without a
// DeletionPolicy, one the template does not describe, and an import that changes more.
func TestImportChangeSetRefusals(t *testing.T) {
	e := newEnv(t, nil)
	e.create("has", "Resources:\n  Old: {Type: AWS::SNS::Topic}\n", nil)
	e.settle("has")
	tests := []struct{ name, stack, body, want string }{
		{"no DeletionPolicy", "new1", "Resources:\n  Queue: {Type: AWS::SQS::Queue}\n",
			"The following resources to import [Queue] must have DeletionPolicy attribute specified in the template."},
		{"not in the template", "new2", "Resources:\n  Other: {Type: AWS::SQS::Queue, DeletionPolicy: Retain}\n", "Resource to import Queue does not exist in the template"},
		{"another resource added", "has", "Resources:\n  Old: {Type: AWS::SNS::Topic}\n  Queue: {Type: AWS::SQS::Queue, DeletionPolicy: Retain}\n  New: {Type: AWS::SNS::Topic}\n",
			"As part of the import operation, you cannot modify or add [New]"},
		{"an existing resource changed", "has", "Resources:\n  Old: {Type: AWS::SNS::Topic, Properties: {DisplayName: x}}\n  Queue: {Type: AWS::SQS::Queue, DeletionPolicy: Retain}\n",
			"As part of the import operation, you cannot modify or add [Old]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.cfn.CreateChangeSet(context.Background(), &cloudformation.CreateChangeSetInput{StackName: aws.String(tc.stack), ChangeSetName: aws.String("i"),
				ChangeSetType: types.ChangeSetTypeImport, TemplateBody: aws.String(tc.body), ResourcesToImport: toImportQueue(importURL)})
			if err == nil || !strings.Contains(err.Error(), tc.want) || apiCode(err) != "ValidationError" {
				t.Fatalf("err = %v, want a ValidationError with %q", err, tc.want)
			}
		})
	}
}

// A resource the emulator's services hold must exist to be imported: importing a missing
// one fails, and the stack forgets what it adopted (nothing is deleted).
func TestImportOfMissingResourceRollsBack(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.Providers = map[string]Provider{"AWS::SQS::Queue": {
			Read: func(ctx context.Context, r Resource) (map[string]any, bool, error) { return nil, false, nil },
			Delete: func(ctx context.Context, r Resource) error {
				t.Errorf("import rollback deleted %s", r.PhysicalID)
				return nil
			},
		}}
	})
	body := "Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n    DeletionPolicy: Delete\n"
	cs := e.settledChangeSet(&cloudformation.CreateChangeSetInput{StackName: aws.String("missing"), ChangeSetName: aws.String("i1"),
		ChangeSetType: types.ChangeSetTypeImport, TemplateBody: aws.String(body), ResourcesToImport: toImportQueue(importURL)})
	if _, err := e.cfn.ExecuteChangeSet(context.Background(), &cloudformation.ExecuteChangeSetInput{ChangeSetName: cs.ChangeSetId}); err != nil {
		t.Fatal(err)
	}
	st := e.settle("missing")
	evs := strings.Join(eventLines(e.allEvents("missing")), "\n")
	if st.StackStatus != types.StackStatusImportRollbackComplete || !strings.Contains(evs, "Queue IMPORT_FAILED (Resource of type 'AWS::SQS::Queue' with identifier '"+importURL+"' was not found.)") {
		t.Fatalf("%s\n%s", st.StackStatus, evs)
	}
	res, err := e.cfn.DescribeStackResources(context.Background(), &cloudformation.DescribeStackResourcesInput{StackName: aws.String("missing")})
	if err != nil || len(res.StackResources) != 0 {
		t.Errorf("resources after the rollback: %v %v", res, err)
	}
}
