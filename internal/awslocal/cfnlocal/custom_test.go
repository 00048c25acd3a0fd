package cfnlocal

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

const portTopic = "arn:aws:sns:us-east-1:000000000000:cairn-ports"

const portTemplate = `Parameters:
  Want: {Type: String, Default: "8080"}
  Timeout: {Type: Number, Default: 60}
Resources:
  Port:
    Type: Custom::PortAllocation
    Properties:
      ServiceToken: ` + portTopic + `
      ServiceTimeout: !Ref Timeout
      Pool: web
      Want: !Ref Want
  Listener:
    Type: AWS::SSM::Parameter
    Properties:
      Type: String
      Value: !GetAtt Port.Port
Outputs:
  Port: {Value: !GetAtt Port.Port}
  Phys: {Value: !Ref Port}
`

// portProvider answers custom resource requests the way a Lambda behind SNS would: in
// its own goroutine, by PUTting to the ResponseURL.
type portProvider struct {
	t        *testing.T
	mu       sync.Mutex
	requests []cfn.Event
	pending  sync.WaitGroup
	silent   bool // do not answer Create and Update
}

func (p *portProvider) receive(pub published) {
	var ev cfn.Event
	if err := json.Unmarshal([]byte(pub.Message), &ev); err != nil || pub.Topic != portTopic {
		return // stack notifications and other topics
	}
	p.mu.Lock()
	p.requests = append(p.requests, ev)
	silent := p.silent && ev.RequestType != cfn.RequestDelete
	p.mu.Unlock()
	if silent {
		return
	}
	p.pending.Add(1)
	go func() {
		defer p.pending.Done()
		want, _ := ev.ResourceProperties["Want"].(string)
		resp := cfn.Response{Status: cfn.StatusSuccess, RequestID: ev.RequestID, StackID: ev.StackID,
			LogicalResourceID: ev.LogicalResourceID, PhysicalResourceID: "port-web-" + want, Data: map[string]any{"Port": want}}
		if ev.RequestType == cfn.RequestDelete {
			resp.PhysicalResourceID, resp.Data = ev.PhysicalResourceID, nil
		} else if want == "fail" {
			resp.Status, resp.Reason = cfn.StatusFailed, "pool web is exhausted"
		}
		b, _ := json.Marshal(resp)
		req, _ := http.NewRequest(http.MethodPut, ev.ResponseURL, bytes.NewReader(b))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			p.t.Errorf("PUT response: %v", err)
			return
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			p.t.Errorf("PUT response: %s", res.Status)
		}
	}()
}

func (p *portProvider) last() cfn.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[len(p.requests)-1]
}

func TestCustomResourceOverSNS(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	prov := &portProvider{t: t}
	e.onPub = prov.receive
	step := func(name string) types.Stack { t.Helper(); return e.stepUntilSettled(name, prov.pending.Wait) }

	e.create("ports", portTemplate, nil)
	st := step("ports")
	if st.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("create = %s (%s)", st.StackStatus, aws.ToString(st.StackStatusReason))
	}
	if out := outputs(st); out["Port"] != "8080" || out["Phys"] != "port-web-8080" {
		t.Fatalf("outputs = %v", out)
	}
	req := prov.last()
	if req.RequestType != cfn.RequestCreate || req.ResourceType != "Custom::PortAllocation" || req.LogicalResourceID != "Port" ||
		req.ResourceProperties["ServiceToken"] != portTopic || req.ResourceProperties["Want"] != "8080" ||
		!strings.HasPrefix(req.ResponseURL, e.srv.URL+ResponsePath) || req.StackID != aws.ToString(st.StackId) {
		t.Fatalf("create request = %+v", req)
	}

	update := func(want string) {
		t.Helper()
		if _, err := e.cfn.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("ports"), UsePreviousTemplate: aws.Bool(true),
			Parameters: sdkParams(map[string]string{"Want": want})}); err != nil {
			t.Fatal(err)
		}
	}
	update("9090")
	st = step("ports")
	if st.StackStatus != types.StackStatusUpdateComplete || outputs(st)["Port"] != "9090" {
		t.Fatalf("update = %s %v", st.StackStatus, outputs(st))
	}
	var upd, del *cfn.Event
	prov.mu.Lock()
	for i := range prov.requests {
		r := &prov.requests[i]
		if r.RequestType == cfn.RequestUpdate && upd == nil {
			upd = r
		}
		if r.RequestType == cfn.RequestDelete && del == nil {
			del = r
		}
	}
	prov.mu.Unlock()
	if upd == nil || upd.OldResourceProperties["Want"] != "8080" || upd.PhysicalResourceID != "port-web-8080" {
		t.Fatalf("update request = %+v", upd)
	}
	// a new physical id from Update is a replacement: the old one is deleted in cleanup
	if del == nil || del.PhysicalResourceID != "port-web-8080" {
		t.Fatalf("delete of the replaced allocation = %+v", del)
	}

	update("fail")
	st = step("ports")
	if st.StackStatus != types.StackStatusUpdateRollbackComplete || outputs(st)["Port"] != "9090" {
		t.Fatalf("failed update = %s %v", st.StackStatus, outputs(st))
	}
	mustContainInOrder(t, eventLines(e.allEvents("ports")), "Port UPDATE_FAILED (pool web is exhausted)",
		"ports UPDATE_ROLLBACK_IN_PROGRESS (The following resource(s) failed to update: [Port]. )", "Port UPDATE_COMPLETE", "ports UPDATE_ROLLBACK_COMPLETE")

	if _, err := e.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("ports")}); err != nil {
		t.Fatal(err)
	}
	if st = step(aws.ToString(st.StackId)); st.StackStatus != types.StackStatusDeleteComplete {
		t.Fatalf("delete = %s", st.StackStatus)
	}
	if r := prov.last(); r.RequestType != cfn.RequestDelete || r.PhysicalResourceID != "port-web-9090" {
		t.Fatalf("last request = %+v", r)
	}
}

func TestCustomResourceTimeout(t *testing.T) {
	e := newEnv(t, nil)
	prov := &portProvider{t: t, silent: true}
	e.onPub = prov.receive
	e.create("slow", portTemplate, map[string]string{"Timeout": "30"})
	e.clk.Advance(29 * time.Second)
	if st := e.stack("slow"); st.StackStatus != types.StackStatusCreateInProgress {
		t.Fatalf("before the ServiceTimeout = %s", st.StackStatus)
	}
	st := e.stepUntilSettled("slow", prov.pending.Wait)
	if st.StackStatus != types.StackStatusRollbackComplete {
		t.Fatalf("after the timeout = %s", st.StackStatus)
	}
	evs := e.allEvents("slow")
	found := false
	for _, ev := range evs {
		if aws.ToString(ev.LogicalResourceId) == "Port" && ev.ResourceStatus == types.ResourceStatusCreateFailed &&
			strings.Contains(aws.ToString(ev.ResourceStatusReason), "did not receive a response from your Custom Resource") {
			found = true
			if got := ev.Timestamp.Sub(epoch); got != 30*time.Second {
				t.Errorf("failed %v after the start, want the 30s ServiceTimeout", got)
			}
		}
	}
	if !found {
		t.Fatalf("no timeout event:\n%s", strings.Join(eventLines(evs), "\n"))
	}
}
