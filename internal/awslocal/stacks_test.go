package awslocal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cairn-dev/cairn/internal/awslocal"
)

// stackEnv is an emulator whose CloudFormation takes a millisecond per resource, with a
// CloudFormation client, for tests of what stacks make.
type stackEnv struct {
	*env
	cf      *cloudformation.Client
	ssm     *ssm.Client
	secrets *secretsmanager.Client
}

func startStacks(t *testing.T) *stackEnv {
	t.Helper()
	v := start(t, awslocal.Options{Logger: quiet(), CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: time.Millisecond, ChangeSetDelay: time.Millisecond}})
	cfg, err := v.e.AWSConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &stackEnv{env: v, cf: cloudformation.NewFromConfig(cfg), ssm: ssm.NewFromConfig(cfg), secrets: secretsmanager.NewFromConfig(cfg)}
}

// deploy creates a stack and waits for CREATE_COMPLETE, returning its outputs.
func (v *stackEnv) deploy(t *testing.T, name, body string) map[string]string {
	t.Helper()
	if _, err := v.cf.CreateStack(context.Background(), &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body),
		Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityNamedIam}}); err != nil {
		t.Fatalf("create stack %s: %v", name, err)
	}
	return waitStack(t, v.cf, name, cfntypes.StackStatusCreateComplete)
}

// failure creates a stack that must fail and returns the reason of its first failed
// resource.
func (v *stackEnv) failure(t *testing.T, name, body string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := v.cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body)}); err != nil {
		t.Fatalf("create stack %s: %v", name, err)
	}
	waitStack(t, v.cf, name, cfntypes.StackStatusRollbackComplete)
	evs, err := v.cf.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	reason := ""
	for _, ev := range evs.StackEvents { // newest first: the last failure seen is the first
		if ev.ResourceStatus == cfntypes.ResourceStatusCreateFailed {
			reason = aws.ToString(ev.LogicalResourceId) + ": " + aws.ToString(ev.ResourceStatusReason)
		}
	}
	if reason == "" {
		t.Fatalf("stack %s rolled back with no failed resource", name)
	}
	return reason
}

func contains(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Fatalf("%s = %q, want it to contain %q", what, got, w)
		}
	}
}
