package sweeper

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/drift"
)

// templateCFN is fakeCFN that also answers GetTemplate.
type templateCFN struct {
	*fakeCFN
	body string
	err  error
}

func (f *templateCFN) GetTemplate(ctx context.Context, in *cloudformation.GetTemplateInput, _ ...func(*cloudformation.Options)) (*cloudformation.GetTemplateOutput, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &cloudformation.GetTemplateOutput{TemplateBody: aws.String(f.body)}, nil
}

// TestSecretsOfAStackOfUnknownTemplate: for a stack whose applied template cairn cannot
// read (Secrets "*"), the drift pass reads its template from CloudFormation and masks the
// properties it sets from NoEcho parameters only; when that fails too, every value of the
// stack stays masked.
func TestSecretsOfAStackOfUnknownTemplate(t *testing.T) {
	const tmpl = "Parameters:\n  Secret: {Type: String, NoEcho: true}\nResources:\n  Queue:\n    Type: AWS::SQS::Queue\n    Properties:\n      VisibilityTimeout: !Ref Secret\n      DelaySeconds: 5\n"
	drifts := func() []*cloudformation.DescribeStackResourceDriftsOutput {
		return []*cloudformation.DescribeStackResourceDriftsOutput{{StackResourceDrifts: []cfntypes.StackResourceDrift{
			resourceDrift("Queue", "/VisibilityTimeout"), resourceDrift("Queue", "/DelaySeconds")}}}
	}
	for _, tc := range []struct {
		name            string
		getErr          error
		visible, masked []string
	}{
		{"template read", nil, []string{"/DelaySeconds"}, []string{"/VisibilityTimeout"}},
		{"template unreadable", apiErr("AccessDenied", "not authorized to perform: cloudformation:GetTemplate"), nil, []string{"/VisibilityTimeout", "/DelaySeconds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfn := &templateCFN{fakeCFN: &fakeCFN{pages: drifts(), status: &cloudformation.DescribeStackDriftDetectionStatusOutput{
				DetectionStatus: cfntypes.StackDriftDetectionStatusDetectionComplete, StackDriftStatus: cfntypes.StackDriftStatusDrifted}}, body: tmpl, err: tc.getErr}
			d, inv := testDriver(t, cfn)
			s := &drift.Stack{Name: "app", StackName: "shop-app", Status: drift.Detecting, DetectionID: "det-1", Secrets: map[string][]string{"*": {"*"}}}
			det, err := d.look(context.Background(), inv, s)
			if err != nil {
				t.Fatal(err)
			}
			sw := &drift.Sweep{StartedAt: d.clk.Now(), Graphs: []*drift.Graph{{Stacks: []*drift.Stack{s}}}}
			s = drift.Observe(sw, []drift.Detection{det}, d.clk.Now(), time.Hour).Graphs[0].Stacks[0]
			got := map[string]drift.Difference{}
			for _, r := range s.Resources {
				for _, df := range r.Differences {
					got[df.Path] = df
				}
			}
			for _, p := range tc.visible {
				if got[p].Masked || got[p].Actual != "60" {
					t.Errorf("%s: %+v, want its values", p, got[p])
				}
			}
			for _, p := range tc.masked {
				if !got[p].Masked || strings.Contains(got[p].Expected+got[p].Actual, "0") {
					t.Errorf("%s: %+v, want masked", p, got[p])
				}
			}
		})
	}
}
