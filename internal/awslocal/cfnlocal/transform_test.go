package cfnlocal

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// langExtTemplate uses every part of AWS::LanguageExtensions the emulator processes.
const langExtTemplate = `Transform: AWS::LanguageExtensions
Parameters:
  Queues: {Type: CommaDelimitedList, Default: "orders,refunds"}
  Env: {Type: String, Default: dev, AllowedValues: [dev, prod]}
Conditions:
  IsProd: !Equals [!Ref Env, prod]
Mappings:
  Sizes:
    prod: {Retention: "1209600"}
Resources:
  Fn::ForEach::Queues:
    - Name
    - !Ref Queues
    - Queue&{Name}:
        Type: AWS::SQS::Queue
        DeletionPolicy: !If [IsProd, Retain, Delete]
        Properties:
          QueueName: !Sub "${Env}-${Name}"
          MessageRetentionPeriod: !FindInMap [Sizes, !Ref Env, Retention, {DefaultValue: "345600"}]
  Settings:
    Type: AWS::SSM::Parameter
    Properties:
      Type: String
      Value:
        Fn::ToJsonString: {queues: !Ref Queues, count: {"Fn::Length": [a, b, c]}}
      Tags:
        Fn::ForEach::Tags:
          - Key
          - [team, cost]
          - ${Key}: !Sub "${Env}-${Key}"
Outputs:
  Fn::ForEach::Urls:
    - Name
    - !Ref Queues
    - Url${Name}:
        Value: !Ref
          Fn::Sub: Queue${Name}
  Count:
    Value:
      Fn::Length: !Ref Queues
`

func TestLanguageExtensionsAreProcessed(t *testing.T) {
	tests := []struct {
		name       string
		params     map[string]string
		wantQueues []string // logical ids
		wantOut    map[string]string
		retention  string
	}{
		{"defaults", nil, []string{"Queueorders", "Queuerefunds", "Settings"}, map[string]string{"Count": "2"}, "345600"},
		{"three queues in prod", map[string]string{"Queues": "a,b,c", "Env": "prod"}, []string{"Queuea", "Queueb", "Queuec", "Settings"}, map[string]string{"Count": "3"}, "1209600"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			ctx := context.Background()
			name := "langext"
			// a change set needs no CAPABILITY_AUTO_EXPAND; CreateStack does
			out, err := e.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String(name), ChangeSetName: aws.String("c1"),
				ChangeSetType: types.ChangeSetTypeCreate, TemplateBody: aws.String(langExtTemplate), Parameters: sdkParams(tc.params)})
			if err != nil {
				t.Fatal(err)
			}
			e.clk.Advance(time.Minute)
			cs, err := e.cfn.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{ChangeSetName: out.Id})
			if err != nil || cs.Status != types.ChangeSetStatusCreateComplete {
				t.Fatalf("change set %v %s (%s)", err, cs.Status, aws.ToString(cs.StatusReason))
			}
			var added []string
			for _, c := range cs.Changes {
				added = append(added, aws.ToString(c.ResourceChange.LogicalResourceId))
			}
			if !slices.Equal(added, tc.wantQueues) {
				t.Errorf("change set adds %v, want %v", added, tc.wantQueues)
			}
			if _, err := e.cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{ChangeSetName: out.Id}); err != nil {
				t.Fatal(err)
			}
			st := e.settle(name)
			if st.StackStatus != types.StackStatusCreateComplete {
				t.Fatalf("status %s (%s)\n%s", st.StackStatus, aws.ToString(st.StackStatusReason), strings.Join(eventLines(e.allEvents(name)), "\n"))
			}
			got := outputs(st)
			for k, v := range tc.wantOut {
				if got[k] != v {
					t.Errorf("output %s = %q, want %q", k, got[k], v)
				}
			}
			for _, q := range tc.wantQueues[:len(tc.wantQueues)-1] {
				if !strings.HasPrefix(got["Url"+strings.TrimPrefix(q, "Queue")], "https://sqs.") {
					t.Errorf("output Url of %s = %q, want the queue's URL (outputs %v)", q, got["Url"+strings.TrimPrefix(q, "Queue")], got)
				}
			}
			processed := e.template(name, types.TemplateStageProcessed)
			var m map[string]any
			if err := json.Unmarshal([]byte(processed), &m); err != nil {
				t.Fatalf("processed template is not JSON: %v\n%s", err, processed)
			}
			if _, ok := m["Transform"]; ok {
				t.Error("the processed template still names its transform")
			}
			res := m["Resources"].(map[string]any)
			q := res[tc.wantQueues[0]].(map[string]any)
			props := q["Properties"].(map[string]any)
			if props["MessageRetentionPeriod"] != tc.retention {
				t.Errorf("MessageRetentionPeriod = %v, want %s (FindInMap with DefaultValue)", props["MessageRetentionPeriod"], tc.retention)
			}
			wantPolicy := "Delete"
			if tc.params["Env"] == "prod" {
				wantPolicy = "Retain"
			}
			if q["DeletionPolicy"] != wantPolicy {
				t.Errorf("DeletionPolicy = %v, want %s", q["DeletionPolicy"], wantPolicy)
			}
			sp := res["Settings"].(map[string]any)["Properties"].(map[string]any)
			if tags := sp["Tags"].(map[string]any); len(tags) != 2 || tags["cost"] == nil {
				t.Errorf("Tags = %v, want the two entries the loop in the properties makes", tags)
			}
			settings := sp["Value"]
			if v, ok := settings.(string); !ok || !strings.Contains(v, `"count":3`) {
				t.Errorf("Settings Value = %v, want a JSON string with count 3", settings)
			}
			if e.template(name, types.TemplateStageOriginal) != langExtTemplate {
				t.Error("the Original stage is not the template as given")
			}
		})
	}
}

func (e *env) template(stack string, stage types.TemplateStage) string {
	e.t.Helper()
	out, err := e.cfn.GetTemplate(context.Background(), &cloudformation.GetTemplateInput{StackName: aws.String(stack), TemplateStage: stage})
	if err != nil {
		e.t.Fatal(err)
	}
	return aws.ToString(out.TemplateBody)
}

// A macro nothing defines fails the change set in AWS's words; CreateStack needs
// CAPABILITY_AUTO_EXPAND for any transform and then refuses the same way.
func TestMissingMacroFailsAsInAWS(t *testing.T) {
	body := "Transform: Count\nResources:\n  B:\n    Type: AWS::SQS::Queue\n    Count: 3\n"
	e := newEnv(t, nil)
	ctx := context.Background()
	out, err := e.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("macro"), ChangeSetName: aws.String("c1"),
		ChangeSetType: types.ChangeSetTypeCreate, TemplateBody: aws.String(body)})
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Minute)
	cs, err := e.cfn.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{ChangeSetName: out.Id})
	if err != nil {
		t.Fatal(err)
	}
	if want := "No transform named 000000000000::Count found."; cs.Status != types.ChangeSetStatusFailed || aws.ToString(cs.StatusReason) != want {
		t.Errorf("change set %s (%s), want FAILED (%s)", cs.Status, aws.ToString(cs.StatusReason), want)
	}
	_, err = e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("macro2"), TemplateBody: aws.String(body)})
	if apiCode(err) != "InsufficientCapabilitiesException" {
		t.Errorf("CreateStack without CAPABILITY_AUTO_EXPAND: %v", err)
	}
	_, err = e.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("macro2"), TemplateBody: aws.String(body),
		Capabilities: []types.Capability{types.CapabilityCapabilityAutoExpand}})
	if err == nil || !strings.Contains(err.Error(), "No transform named 000000000000::Count found.") {
		t.Errorf("CreateStack of a missing macro: %v", err)
	}
}
