package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
)

// TestEmulatorDeploy validates and deploys the synthesized template (the one
// TestStack checks) in the local emulator's CloudFormation, the way
// `cdk deploy` does with the default synthesizer: the bootstrap version
// parameter exists (cdk bootstrap makes it), the template is uploaded to the
// bootstrap assets bucket and passed by URL, with CAPABILITY_IAM and
// CAPABILITY_NAMED_IAM. Then it checks the exports other tools rely on, and
// that the resources the emulator's services provide exist: the bucket, the
// queues, the topics.
//
// The template is synthesized with the default synthesizer, unchanged. The
// emulator simulates less than AWS, so this test does not show:
//   - the CheckBootstrapVersion rule: the emulator parses the Rules section
//     and does not evaluate it;
//   - the Lambda code: its S3 location (the bootstrap assets bucket) is a
//     plain property the emulator never reads;
//   - IAM, CloudWatch and Logs resources: simulated, with generated ids; no
//     IAM policy, queue policy or topic policy is evaluated.
//
// `cairn local up` deploys the same template (internal/localcairn keeps it as
// a golden file, which TestGoldenTemplate holds to what infra synthesizes).
func TestEmulatorDeploy(t *testing.T) {
	s := sharedStack(t)
	e, err := awslocal.New(awslocal.Options{CloudFormation: awslocal.CloudFormationTimings{
		ResourceDelay: 10 * time.Millisecond, ChangeSetDelay: 10 * time.Millisecond,
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := ssm.NewFromConfig(cfg).PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/cdk-bootstrap/hnb659fds/version"),
		Value: aws.String("30"), Type: ssmtypes.ParameterTypeString}); err != nil {
		t.Fatal(err)
	}
	assets := "cdk-hnb659fds-assets-" + e.AccountID() + "-" + e.Region()
	s3c := awsclient.S3(cfg)
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(assets)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(assets), Key: aws.String("Cairn.template.json"), Body: bytes.NewReader(s.body)}); err != nil {
		t.Fatal(err)
	}
	// `cdk deploy` publishes the functions' code before it deploys: Lambda reads it.
	for id, r := range s.resources {
		if r["Type"] != "AWS::Lambda::Function" {
			continue
		}
		key, _ := props(r)["Code"].(map[string]interface{})["S3Key"].(string)
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(assets), Key: aws.String(key), Body: strings.NewReader("code of " + id)}); err != nil {
			t.Fatal(err)
		}
	}
	url := e.URL() + "/" + assets + "/Cairn.template.json"
	t.Logf("template: %d bytes, %d resources", len(s.body), len(s.resources))
	// The emulator enforces neither of CloudFormation's quotas on a template
	// read from S3, so they are checked here.
	if len(s.body) > 1<<20 || len(s.resources) > 500 {
		t.Errorf("template has %d bytes and %d resources; CloudFormation takes at most 1 MB and 500 resources", len(s.body), len(s.resources))
	}

	cf := cloudformation.NewFromConfig(cfg)
	v, err := cf.ValidateTemplate(ctx, &cloudformation.ValidateTemplateInput{TemplateURL: aws.String(url)})
	if err != nil {
		t.Fatalf("ValidateTemplate: %v", err)
	}
	// The deployer's and drift's roles are named (cairn-deployer-REGION, cairn-drift-REGION)
	// so target deploy roles can trust them by name.
	if !slices.Equal(v.Capabilities, []cfntypes.Capability{cfntypes.CapabilityCapabilityNamedIam}) {
		t.Errorf("ValidateTemplate capabilities %v, want [CAPABILITY_NAMED_IAM] (the deployer's and drift's roles are named)", v.Capabilities)
	}
	if !strings.HasPrefix(aws.ToString(v.Description), "cairn:") {
		t.Errorf("ValidateTemplate description %q, want the stack's", aws.ToString(v.Description))
	}

	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{
		StackName:    aws.String(stackName),
		TemplateURL:  aws.String(url),
		Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityIam, cfntypes.CapabilityCapabilityNamedIam},
	}); err != nil {
		t.Fatalf("CreateStack: %v", err)
	}
	w := cloudformation.NewStackCreateCompleteWaiter(cf, func(o *cloudformation.StackCreateCompleteWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, 500*time.Millisecond
	})
	if err := w.Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stackName)}, time.Minute); err != nil {
		events, _ := cf.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(stackName)})
		if events != nil {
			for _, ev := range events.StackEvents {
				if strings.HasSuffix(string(ev.ResourceStatus), "FAILED") {
					t.Logf("%s %s: %s", aws.ToString(ev.LogicalResourceId), ev.ResourceStatus, aws.ToString(ev.ResourceStatusReason))
				}
			}
		}
		t.Fatalf("stack %s did not reach CREATE_COMPLETE: %v", stackName, err)
	}

	res, err := cf.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(stackName)})
	if err != nil {
		t.Fatal(err)
	}
	physical := map[string]string{}
	for _, r := range res.StackResources {
		physical[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
		if r.ResourceStatus != cfntypes.ResourceStatusCreateComplete {
			t.Errorf("%s (%s): %s", aws.ToString(r.LogicalResourceId), aws.ToString(r.ResourceType), r.ResourceStatus)
		}
	}
	if len(physical) != len(s.resources) {
		t.Errorf("stack has %d resources, template %d", len(physical), len(s.resources))
	}

	exports := map[string]string{}
	p := cloudformation.NewListExportsPaginator(cf, &cloudformation.ListExportsInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range page.Exports {
			exports[aws.ToString(x.Name)] = aws.ToString(x.Value)
		}
	}
	topicARN := "arn:aws:sns:" + e.Region() + ":" + e.AccountID() + ":"
	for name, want := range map[string]string{
		ExportBucketName:         "cairn-" + e.AccountID() + "-" + e.Region(),
		ExportPortsServiceToken:  physical[s.id(t, "AWS::SNS::Topic", "PortsTopic")],
		ExportNotificationsTopic: physical[s.id(t, "AWS::SNS::Topic", "NotificationsTopic")],
	} {
		if got := exports[name]; got == "" || got != want {
			t.Errorf("export %s = %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{ExportPortsServiceToken, ExportNotificationsTopic} {
		if !strings.HasPrefix(exports[name], topicARN) {
			t.Errorf("export %s = %q, want a topic ARN %s...", name, exports[name], topicARN)
		}
	}
	if exports[ExportPortsServiceToken] == exports[ExportNotificationsTopic] {
		t.Errorf("ports ServiceToken and notifications topic are the same topic %s", exports[ExportPortsServiceToken])
	}
	// The emulator's services made what the stack holds.
	if _, err := s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(exports[ExportBucketName])}); err != nil {
		t.Errorf("the stack's bucket %s does not exist: %v", exports[ExportBucketName], err)
	}
	for id, phys := range physical {
		switch typ := s.resources[id]["Type"]; typ {
		case "AWS::SQS::Queue":
			if !strings.HasPrefix(phys, e.URL()+"/") || !e.SQS().Exists(e.SQS().QueueARN(phys[strings.LastIndex(phys, "/")+1:])) {
				t.Errorf("queue %s (%s) does not exist in the emulator's SQS", id, phys)
			}
		case "AWS::SNS::Topic":
			if !e.SNS().Exists(phys) {
				t.Errorf("topic %s (%s) does not exist in the emulator's SNS", id, phys)
			}
		}
	}
}
