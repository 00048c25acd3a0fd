package cfnlocal

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// lambdaBacked is a stack whose custom resource is served by a function the same stack
// makes with inline code (recorded by the emulator, never run).
const lambdaBacked = `Parameters:
  Size: {Type: String, Default: small}
Resources:
  Fn:
    Type: AWS::Lambda::Function
    Properties:
      Runtime: python3.12
      Handler: index.handler
      Role: arn:aws:iam::000000000000:role/fn
      Code: {ZipFile: "def handler(event, context): pass"}
  Lookup:
    Type: Custom::Lookup
    Properties:
      ServiceToken: !GetAtt Fn.Arn
      Size: !Ref Size
Outputs:
  Id: {Value: !Ref Lookup}
`

func TestLambdaBackedCustomResourcesGetAStandIn(t *testing.T) {
	withData := lambdaBacked + "  Ami: {Value: !GetAtt Lookup.ImageId}\n"
	tests := []struct {
		name       string
		body       string
		standIn    string // POSTed to the control endpoint first
		wantStatus types.StackStatus
		wantOut    map[string]string
		wantEvent  string // in the stack's events
	}{
		{name: "default success", body: lambdaBacked, wantStatus: types.StackStatusCreateComplete,
			wantEvent: "Lookup CREATE_IN_PROGRESS (Warning: the ServiceToken's Lambda function arn:aws:lambda:us-east-1:000000000000:function:lam-Fn-"},
		{name: "data", body: withData, standIn: `{"logicalId": "Lookup", "data": {"ImageId": "ami-0123456789abcdef0"}, "physicalResourceId": "lookup-1"}`,
			wantStatus: types.StackStatusCreateComplete, wantOut: map[string]string{"Ami": "ami-0123456789abcdef0", "Id": "lookup-1"}},
		{name: "data of another stack", body: withData, standIn: `{"stack": "other", "logicalId": "Lookup", "data": {"ImageId": "ami-x"}}`,
			wantStatus: types.StackStatusRollbackComplete, wantEvent: "Vendor response doesn't contain ImageId key"},
		{name: "failure", body: lambdaBacked, standIn: `{"stack": "lam", "logicalId": "Lookup", "reason": "no such image"}`,
			wantStatus: types.StackStatusRollbackComplete, wantEvent: "Lookup CREATE_FAILED (no such image)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			if tc.standIn != "" {
				resp, err := http.Post(e.srv.URL+StandInPath, "application/json", strings.NewReader(tc.standIn))
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("POST %s: %v %v", StandInPath, resp, err)
				}
				resp.Body.Close()
			}
			e.create("lam", tc.body, nil)
			st := e.settle("lam")
			lines := eventLines(e.allEvents("lam"))
			if st.StackStatus != tc.wantStatus {
				t.Fatalf("status %s, want %s\n%s", st.StackStatus, tc.wantStatus, strings.Join(lines, "\n"))
			}
			for k, v := range tc.wantOut {
				if got := outputs(st)[k]; got != v {
					t.Errorf("output %s = %q, want %q", k, got, v)
				}
			}
			if tc.wantEvent != "" && !strings.Contains(strings.Join(lines, "\n"), tc.wantEvent) {
				t.Errorf("events lack %q:\n%s", tc.wantEvent, strings.Join(lines, "\n"))
			}
			if st.StackStatus != types.StackStatusCreateComplete {
				return
			}
			// updates and deletes are answered the same way
			if _, err := e.cfn.UpdateStack(context.Background(), &cloudformation.UpdateStackInput{StackName: aws.String("lam"),
				UsePreviousTemplate: aws.Bool(true), Parameters: sdkParams(map[string]string{"Size": "large"})}); err != nil {
				t.Fatal(err)
			}
			if st := e.settle("lam"); st.StackStatus != types.StackStatusUpdateComplete {
				t.Fatalf("update: %s (%s)", st.StackStatus, aws.ToString(st.StackStatusReason))
			}
			if _, err := e.cfn.DeleteStack(context.Background(), &cloudformation.DeleteStackInput{StackName: aws.String("lam")}); err != nil {
				t.Fatal(err)
			}
			if st := e.settle(aws.ToString(st.StackId)); st.StackStatus != types.StackStatusDeleteComplete {
				t.Fatalf("delete: %s (%s)", st.StackStatus, aws.ToString(st.StackStatusReason))
			}
		})
	}
}

// A function that runs in process gets the request as Lambda gets it from CloudFormation
// and answers through the ResponseURL.
func TestLambdaBackedCustomResourcesInvokeFunctionsThatRun(t *testing.T) {
	var mu sync.Mutex
	var got []cfn.Event
	var wg sync.WaitGroup
	e := newEnv(t, func(o *Options) {
		o.FunctionRuns = func(arn string) bool { return strings.HasSuffix(arn, ":function:resolver") }
		o.InvokeFunction = func(ctx context.Context, arn string, payload []byte) error {
			var ev cfn.Event
			if err := json.Unmarshal(payload, &ev); err != nil {
				return err
			}
			mu.Lock()
			got = append(got, ev)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				body, _ := json.Marshal(cfn.Response{Status: cfn.StatusSuccess, RequestID: ev.RequestID, LogicalResourceID: ev.LogicalResourceID,
					StackID: ev.StackID, PhysicalResourceID: "resolved-1", Data: map[string]any{"Answer": "42"}})
				req, _ := http.NewRequest(http.MethodPut, ev.ResponseURL, bytes.NewReader(body))
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}()
			return nil
		}
	})
	body := `Resources:
  R:
    Type: Custom::Resolve
    Properties:
      ServiceToken: arn:aws:lambda:us-east-1:000000000000:function:resolver
      Question: life
Outputs:
  Answer: {Value: !GetAtt R.Answer}
`
	e.create("run", body, nil)
	st := e.stepUntilSettled("run", wg.Wait)
	if st.StackStatus != types.StackStatusCreateComplete || outputs(st)["Answer"] != "42" {
		t.Fatalf("status %s, outputs %v\n%s", st.StackStatus, outputs(st), strings.Join(eventLines(e.allEvents("run")), "\n"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].RequestType != cfn.RequestCreate || got[0].ResourceProperties["Question"] != "life" || got[0].ResourceType != "Custom::Resolve" {
		t.Fatalf("the function got %+v", got)
	}
}
