package deploy_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/cairn-dev/cairn/internal/deploy"
	"github.com/cairn-dev/cairn/internal/run"
)

const lookupsBundle = "testdata/lookups"

// The SecureString values of the tests: never to be found in the bucket or the logs.
const (
	secret1 = "Corr3ct-Horse-Battery-1"
	secret2 = "Corr3ct-Horse-Battery-2"
)

// ssmClient talks to the emulator's Parameter Store as a user's tools do.
func (w *world) ssmClient() *ssm.Client {
	w.t.Helper()
	cfg, err := w.em.AWSConfig(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	return ssm.NewFromConfig(cfg)
}

func (w *world) putParameter(name, typ, value string) {
	w.t.Helper()
	_, err := w.ssmClient().PutParameter(context.Background(), &ssm.PutParameterInput{
		Name: aws.String(name), Type: ssmtypes.ParameterType(typ), Value: aws.String(value), Overwrite: aws.Bool(true),
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

// parameterValue is the value of the SSM parameter a stack created (its Name output).
func (w *world) parameterValue(doc *deploy.Document, stack string) string {
	w.t.Helper()
	name := doc.Run.Stacks[stack].Outputs["Name"]
	out, err := w.ssmClient().GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		w.t.Fatalf("stack %s: parameter %q: %v", stack, name, err)
	}
	return aws.ToString(out.Parameter.Value)
}

func (w *world) putLookupParameters() {
	w.putParameter("/shop/prod/size", "String", "small")
	w.putParameter("/shop/prod/other", "StringList", "a,b")
	w.putParameter("/shop/prod/db/password", "SecureString", secret1)
}

// TestSSMValueChangeUpdatesExactlyItsStacks deploys stacks reading SSM parameters; an
// unchanged value costs no change set, and a changed one updates exactly the stack
// reading it.
func TestSSMValueChangeUpdatesExactlyItsStacks(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.putLookupParameters()
	dir := copyBundle(t, lookupsBundle)
	first := w.wait("shop", w.push("shop", dir))
	if first.Run.Status != run.Succeeded {
		t.Fatalf("first run: %s (%s); stacks %v", first.Run.Status, first.Run.Reason, phases(first))
	}
	for stack, want := range map[string]string{"sized": "small", "other": "a,b", "plain": "fixed", "db": "admin:" + secret1} {
		if got := w.parameterValue(first, stack); got != want {
			t.Errorf("stack %s made a parameter of %q, want %q", stack, got, want)
		}
	}

	before := w.cfnCalls()
	again := w.wait("shop", w.push("shop", dir))
	for _, n := range again.Run.Names() {
		if s := again.Run.Stacks[n]; s.Phase != run.Unchanged {
			t.Errorf("unchanged values: stack %s is %s (%s), want unchanged", n, s.Phase, s.Reason)
		}
	}
	if n := w.cfnCalls()["CreateChangeSet"] - before["CreateChangeSet"]; n != 0 {
		t.Errorf("unchanged values made %d change set(s), want none", n)
	}

	w.putParameter("/shop/prod/size", "String", "large")
	before = w.cfnCalls()
	changed := w.wait("shop", w.push("shop", dir))
	if changed.Run.Status != run.Succeeded {
		t.Fatalf("run after the change: %s (%s); stacks %v", changed.Run.Status, changed.Run.Reason, phases(changed))
	}
	for _, n := range changed.Run.Names() {
		want := run.Unchanged
		if n == "sized" {
			want = run.Done
		}
		if s := changed.Run.Stacks[n]; s.Phase != want {
			t.Errorf("after /shop/prod/size changed: stack %s is %s (%s), want %s", n, s.Phase, s.Reason, want)
		}
	}
	if n := w.cfnCalls()["CreateChangeSet"] - before["CreateChangeSet"]; n != 1 {
		t.Errorf("the change made %d change sets, want 1 (stack sized)", n)
	}
	if got := w.parameterValue(changed, "sized"); got != "large" {
		t.Errorf("stack sized holds %q after the update, want large", got)
	}
}

// TestMissingSSMParameterFailsItsStackOnly: a stack reading a parameter that does not
// exist fails with the reason before any change set; its dependents are blocked, the
// others deploy.
func TestMissingSSMParameterFailsItsStackOnly(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.putLookupParameters()
	dir := copyBundle(t, lookupsBundle)
	edit(t, dir, "cairn.yaml", "Value: ${ssm /shop/${var env}/other}", "Value: ${ssm /shop/${var env}/missing}")
	edit(t, dir, "cairn.yaml", "      Value: fixed", "      Value: ${output other::Name}")
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.RunFailed {
		t.Fatalf("run: %s, want failed", doc.Run.Status)
	}
	other, plain := doc.Run.Stacks["other"], doc.Run.Stacks["plain"]
	want := "parameters: stack other: parameter Value: ${ssm /shop/${var env}/missing}: SSM parameter /shop/prod/missing not found: create it (aws ssm put-parameter --name /shop/prod/missing --type String --value ...) or fix the name"
	if other.Phase != run.Failed || other.Reason != want || other.ChangeSetName != "" {
		t.Errorf("stack other: %s %q (change set %q), want failed %q before any change set", other.Phase, other.Reason, other.ChangeSetName, want)
	}
	if plain.Phase != run.Blocked || plain.Reason != "dependency other failed" {
		t.Errorf("stack plain: %s %q, want blocked by other", plain.Phase, plain.Reason)
	}
	if s := doc.Run.Stacks["sized"]; s.Phase != run.Done {
		t.Errorf("stack sized: %s (%s), want done", s.Phase, s.Reason)
	}
}

// TestSecureStringIsNeverStored deploys, plans and updates a stack fed a SecureString:
// CloudFormation gets the value, and no version of any object cairn wrote to its bucket,
// nor the logs, ever holds it.
func TestSecureStringIsNeverStored(t *testing.T) {
	w := newReviewWorld(t)
	w.putLookupParameters()
	dir := copyBundle(t, lookupsBundle)
	first := w.wait("shop", w.push("shop", dir))
	if first.Run.Status != run.Succeeded {
		t.Fatalf("first run: %s (%s); stacks %v", first.Run.Status, first.Run.Reason, phases(first))
	}
	if got := w.parameterValue(first, "db"); got != "admin:"+secret1 {
		t.Errorf("stack db made %q: CloudFormation did not get the SecureString", got)
	}
	if p := first.Run.Stacks["db"].Parameters["Password"]; !strings.HasPrefix(p, "{{cairn:ssm-secure:/shop/prod/db/password@") {
		t.Errorf("run document: Password = %q, want the sealed reference", p)
	}

	w.putParameter("/shop/prod/db/password", "SecureString", secret2)
	p := w.planOf("shop", w.uploadPlan("shop", dir))
	if s := p.Run.Stacks["db"]; s == nil || s.ChangeSetID == "" {
		t.Fatalf("plan: stack db %+v, want a change set for the new SecureString", s)
	}
	applied := w.approve("shop", p.ID)
	if applied.Run.Status != run.Succeeded {
		t.Fatalf("apply: %s (%s); stacks %v", applied.Run.Status, applied.Run.Reason, phases(applied))
	}
	if got := w.parameterValue(applied, "db"); got != "admin:"+secret2 {
		t.Errorf("after the apply stack db holds %q, want the new SecureString", got)
	}
	for _, n := range applied.Run.Names() {
		if s := applied.Run.Stacks[n]; n != "db" && s.Phase != run.Unchanged {
			t.Errorf("apply: stack %s is %s, want unchanged (only db reads the SecureString)", n, s.Phase)
		}
	}

	scanned := w.scanBucket(secret1, secret2)
	if scanned < 10 {
		t.Errorf("scanned only %d object versions", scanned)
	}
	for _, s := range []string{secret1, secret2} {
		if strings.Contains(w.logs.String(), s) {
			t.Errorf("the logs hold the SecureString %q", s)
		}
	}
}

// scanBucket reads every version of every object of the bucket (the entries of zips
// too) and fails the test where one holds a secret; it returns how many it read.
func (w *world) scanBucket(secrets ...string) int {
	w.t.Helper()
	ctx := context.Background()
	n := 0
	p := s3.NewListObjectVersionsPaginator(w.s3, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, v := range page.Versions {
			out, err := w.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: v.Key, VersionId: v.VersionId})
			if err != nil {
				w.t.Fatalf("get %s version %s: %v", aws.ToString(v.Key), aws.ToString(v.VersionId), err)
			}
			body, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil {
				w.t.Fatal(err)
			}
			n++
			texts := [][]byte{body}
			if zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body))); err == nil {
				for _, f := range zr.File {
					rc, err := f.Open()
					if err != nil {
						w.t.Fatal(err)
					}
					b, _ := io.ReadAll(rc)
					rc.Close()
					texts = append(texts, b)
				}
			}
			for _, s := range secrets {
				for _, b := range texts {
					if bytes.Contains(b, []byte(s)) {
						w.t.Errorf("%s (version %s) holds the SecureString %q", aws.ToString(v.Key), aws.ToString(v.VersionId), s)
					}
				}
			}
		}
	}
	return n
}

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

const migrationBundle = "../../testdata/bundles/stacker-migration"

// TestStackerMigrationDeploys deploys the README's migration example, a Stacker config
// converted to cairn.yaml (namespace, variables, lookups, stack options), end to end.
func TestStackerMigrationDeploys(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"stacker.yaml", "cairn.yaml"} {
		b, err := os.ReadFile(filepath.Join(migrationBundle, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(readme, b) {
			t.Errorf("the README does not show %s/%s as it is", migrationBundle, f)
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
