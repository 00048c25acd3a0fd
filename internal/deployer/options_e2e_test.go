package deployer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cairn-dev/cairn/internal/run"
)

// TestStackPolicyRefusesReplacement: the stack policy of the config is set before the
// change set is executed; an update that would replace the protected resource fails as
// CloudFormation fails it, and one that only modifies it goes through.
func TestStackPolicyRefusesReplacement(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.putLookupParameters()
	dir := copyBundle(t, lookupsBundle)
	first := w.wait("shop", w.push("shop", dir))
	if first.Run.Status != run.Succeeded {
		t.Fatalf("first run: %s (%s); stacks %v", first.Run.Status, first.Run.Reason, phases(first))
	}
	pol, err := w.cfnc.GetStackPolicy(context.Background(), &cloudformation.GetStackPolicyInput{StackName: aws.String("shop-guarded")})
	if err != nil || !strings.Contains(aws.ToString(pol.StackPolicyBody), `"Update:Replace"`) {
		t.Fatalf("stack policy of shop-guarded: %v, %v", pol, err)
	}

	edit(t, dir, "cairn.yaml", "Name: /shop/guarded/v1", "Name: /shop/guarded/v2")
	refused := w.wait("shop", w.push("shop", dir))
	g := refused.Run.Stacks["guarded"]
	want := "Action denied by stack policy: Statement [#2] does not allow [Update:Replace] for resource [LogicalResourceId/Parameter]"
	if refused.Run.Status != run.RunFailed || g.Phase != run.Failed || !strings.Contains(g.Reason, want) {
		t.Fatalf("replacement: run %s, stack guarded %s %q, want failed with %q", refused.Run.Status, g.Phase, g.Reason, want)
	}
	if st := w.stacks()["shop-guarded"]; st.StackStatus != "UPDATE_ROLLBACK_COMPLETE" {
		t.Errorf("shop-guarded is %s, want UPDATE_ROLLBACK_COMPLETE", st.StackStatus)
	}
	if got := w.parameterValue(first, "guarded"); got != "one" {
		t.Errorf("the protected parameter holds %q, want it untouched", got)
	}

	edit(t, dir, "cairn.yaml", "Name: /shop/guarded/v2", "Name: /shop/guarded/v1")
	edit(t, dir, "cairn.yaml", "Value: one", "Value: two")
	modified := w.wait("shop", w.push("shop", dir))
	if s := modified.Run.Stacks["guarded"]; modified.Run.Status != run.Succeeded || s.Phase != run.Done {
		t.Fatalf("modification: run %s (%s), stack guarded %s %q", modified.Run.Status, modified.Run.Reason, s.Phase, s.Reason)
	}
	if got := w.parameterValue(modified, "guarded"); got != "two" {
		t.Errorf("the modified parameter holds %q, want two", got)
	}
}

// TestNotificationARNsReceiveStackEvents: a stack's notification_arns topics get its
// events, in CloudFormation's format, through an SQS queue subscribed to the topic; a
// change of the topics alone updates the stack.
func TestNotificationARNsReceiveStackEvents(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.putLookupParameters()
	ctx := context.Background()
	cfg, err := w.em.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snsc := sns.NewFromConfig(cfg)
	topic, err := snsc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("stack-events")})
	if err != nil {
		t.Fatal(err)
	}
	q, err := w.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("stack-events")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snsc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String(w.em.SQS().QueueARN("stack-events"))}); err != nil {
		t.Fatal(err)
	}
	dir := copyBundle(t, lookupsBundle)
	edit(t, dir, "cairn.yaml", "      Value: fixed\n", "      Value: fixed\n    notification_arns: ["+aws.ToString(topic.TopicArn)+"]\n")
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("run: %s (%s); stacks %v", doc.Run.Status, doc.Run.Reason, phases(doc))
	}
	var events []string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !containsLine(events, "ResourceStatus='CREATE_COMPLETE'", "ResourceType='AWS::CloudFormation::Stack'") {
		out, err := w.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			var env struct{ Subject, Message, TopicArn string }
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &env); err != nil {
				t.Fatalf("not an SNS envelope: %s", aws.ToString(m.Body))
			}
			if env.Subject != "AWS CloudFormation Notification" || env.TopicArn != aws.ToString(topic.TopicArn) {
				t.Errorf("notification subject %q topic %q", env.Subject, env.TopicArn)
			}
			events = append(events, env.Message)
		}
	}
	for _, want := range [][]string{
		{"StackName='shop-plain'", "ResourceStatus='CREATE_IN_PROGRESS'", "ResourceType='AWS::CloudFormation::Stack'"},
		{"StackName='shop-plain'", "LogicalResourceId='Parameter'", "ResourceStatus='CREATE_COMPLETE'", "ResourceType='AWS::SSM::Parameter'"},
		{"StackName='shop-plain'", "ResourceStatus='CREATE_COMPLETE'", "ResourceType='AWS::CloudFormation::Stack'", "StackId='" + doc.Run.Stacks["plain"].StackID + "'"},
	} {
		if !containsLine(events, want...) {
			t.Errorf("no notification with %q among %d:\n%s", want, len(events), strings.Join(events, "\n"))
		}
	}
	for _, e := range events {
		if !strings.Contains(e, "StackName='shop-plain'") {
			t.Errorf("a notification of another stack: %s", e)
		}
	}
	st := w.stacks()["shop-plain"]
	if len(st.NotificationARNs) != 1 || st.NotificationARNs[0] != aws.ToString(topic.TopicArn) {
		t.Errorf("shop-plain notification ARNs %v", st.NotificationARNs)
	}

	// Only the topics change: the stack is updated to match.
	edit(t, dir, "cairn.yaml", "    notification_arns: ["+aws.ToString(topic.TopicArn)+"]\n", "")
	doc = w.wait("shop", w.push("shop", dir))
	if s := doc.Run.Stacks["plain"]; doc.Run.Status != run.Succeeded || s.Phase == run.Unchanged {
		t.Errorf("topics removed: run %s, stack plain %s (%s), want it updated", doc.Run.Status, s.Phase, s.Reason)
	}
	if st := w.stacks()["shop-plain"]; len(st.NotificationARNs) != 0 {
		t.Errorf("shop-plain still notifies %v", st.NotificationARNs)
	}
}

// containsLine reports whether one of the messages holds every part.
func containsLine(messages []string, parts ...string) bool {
	for _, m := range messages {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(m, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// TestStackerMigrationDeploys deploys the migration example of docs/migrating.md, a Stacker config
// converted to cairn.yaml (namespace, variables, lookups, stack options), end to end.
func TestStackerMigrationDeploys(t *testing.T) {
	readme, err := os.ReadFile("../../docs/migrating.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"stacker.yaml", "cairn.yaml"} {
		b, err := os.ReadFile(filepath.Join(migrationBundle, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(readme, b) {
			t.Errorf("docs/migrating.md does not show %s/%s as it is", migrationBundle, f)
		}
	}

	w := newWorld(t, worldOptions{})
	ctx := context.Background()
	w.putParameter("/shop/api-key", "SecureString", "k-4711-very-secret")
	w.putParameter("/shop/zones", "StringList", "us-east-1a,us-east-1b")
	if _, err := w.em.SNS().CreateTopic("shop-stack-events", nil, nil); err != nil {
		t.Fatal(err)
	}
	legacy, err := os.ReadFile(filepath.Join(migrationBundle, "templates", "legacy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.cfnc.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-legacy"), TemplateBody: aws.String(string(legacy))}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); w.stacks()["shop-legacy"].StackStatus != "CREATE_COMPLETE"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("shop-legacy was never created")
		}
	}

	doc := w.wait("shop", w.push("shop", copyBundle(t, migrationBundle)))
	if doc.Run.Status != run.Succeeded {
		t.Fatalf("run: %s (%s); stacks %v", doc.Run.Status, doc.Run.Reason, phases(doc))
	}
	queueURL := doc.Run.Stacks["queues"].Outputs["QueueUrl"]
	settings, err := w.ssmClient().GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(doc.Run.Stacks["app"].Outputs["Settings"])})
	if err != nil {
		t.Fatal(err)
	}
	if want := queueURL + "|us-east-1a|Welcome to the shop|https://legacy.example.com"; aws.ToString(settings.Parameter.Value) != want {
		t.Errorf("app settings %q, want %q", aws.ToString(settings.Parameter.Value), want)
	}
	live := w.stacks()
	app, queues := live["shop-app"], live["shop-queues"]
	tagOf := func(name, key string) string {
		for _, tg := range live[name].Tags {
			if aws.ToString(tg.Key) == key {
				return aws.ToString(tg.Value)
			}
		}
		return ""
	}
	if tagOf("shop-app", "team") != "checkout" || tagOf("shop-queues", "team") != "payments" {
		t.Errorf("team tags: app %q, queues %q; want the stack's own tag to win", tagOf("shop-app", "team"), tagOf("shop-queues", "team"))
	}
	if len(app.NotificationARNs) != 1 || app.NotificationARNs[0] != "arn:aws:sns:us-east-1:000000000000:shop-stack-events" || len(queues.NotificationARNs) != 0 {
		t.Errorf("notification ARNs: app %v, queues %v", app.NotificationARNs, queues.NotificationARNs)
	}
	if p := app.EnableTerminationProtection; p == nil || !*p {
		t.Errorf("shop-app termination protection %v", p)
	}
	pol, err := w.cfnc.GetStackPolicy(ctx, &cloudformation.GetStackPolicyInput{StackName: aws.String("shop-app")})
	if err != nil || !strings.Contains(aws.ToString(pol.StackPolicyBody), "LogicalResourceId/Key") {
		t.Errorf("shop-app stack policy %v, %v", pol, err)
	}
	for _, p := range app.Parameters {
		if aws.ToString(p.ParameterKey) == "ApiKey" && aws.ToString(p.ParameterValue) != "****" {
			t.Errorf("DescribeStacks shows ApiKey as %q, want it masked (NoEcho)", aws.ToString(p.ParameterValue))
		}
	}
	w.scanBucket("k-4711-very-secret")
}
