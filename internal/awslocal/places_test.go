package awslocal_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

// as returns an SDK configuration for the emulator signed with the access key (and session
// token) for region, as a client of that account and region would be.
func as(t *testing.T, e *awslocal.Emulator, key, secret, token, region string) aws.Config {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(), awsclient.WithSafeBodies(), config.WithRegion(region), config.WithBaseEndpoint(e.URL()),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(key, secret, token)),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithRetryMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func fastCFN() awslocal.CloudFormationTimings {
	return awslocal.CloudFormationTimings{ResourceDelay: time.Millisecond, ChangeSetDelay: time.Millisecond}
}

// createStack creates a stack and waits until it is CREATE_COMPLETE; it returns the outputs.
func createStack(t *testing.T, cfg aws.Config, name, body string) map[string]string {
	t.Helper()
	cf := cloudformation.NewFromConfig(cfg)
	if _, err := cf.CreateStack(context.Background(), &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body),
		Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityNamedIam}}); err != nil {
		t.Fatalf("create stack %s in %s: %v", name, cfg.Region, err)
	}
	return waitStack(t, cf, name, cfntypes.StackStatusCreateComplete)
}

// TestAccountsAndRegionsAreApart: the account comes from the access key (12 digits is that
// account, anything else the home account) and the region from the signature; each
// account and region has its own parameters, queues and stacks.
func TestAccountsAndRegionsAreApart(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet(), CloudFormation: fastCFN()})
	ctx := context.Background()
	places := []struct {
		name, key, region, account string
	}{
		{"home", "test", "us-east-1", "000000000000"},
		{"home account elsewhere", "AKIAIOSFODNN7EXAMPLE", "eu-west-1", "000000000000"},
		{"second account", "111111111111", "eu-west-1", "111111111111"},
		{"second account at home's region", "111111111111", "us-east-1", "111111111111"},
	}
	for _, p := range places {
		cfg := as(t, v.e, p.key, "x", "", p.region)
		id, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if aws.ToString(id.Account) != p.account || aws.ToString(id.Arn) != "arn:aws:iam::"+p.account+":root" {
			t.Errorf("%s: caller %s %s, want account %s", p.name, aws.ToString(id.Account), aws.ToString(id.Arn), p.account)
		}
		if _, err := ssm.NewFromConfig(cfg).PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/where"), Value: aws.String(p.name), Type: ssmtypes.ParameterTypeString}); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
	}
	for _, p := range places {
		cfg := as(t, v.e, p.key, "x", "", p.region)
		got, err := ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/where")})
		if err != nil || aws.ToString(got.Parameter.Value) != p.name {
			t.Errorf("%s: /where = %v (%v), want its own value", p.name, got, err)
		}
	}

	home := as(t, v.e, "test", "x", "", "us-east-1")
	other := as(t, v.e, "111111111111", "x", "", "eu-west-1")
	out := createStack(t, other, "shop-queue", `{"Resources":{"Q":{"Type":"AWS::SQS::Queue"}},"Outputs":{"Arn":{"Value":{"Fn::GetAtt":["Q","Arn"]}}}}`)
	if !strings.HasPrefix(out["Arn"], "arn:aws:sqs:eu-west-1:111111111111:shop-queue-Q-") {
		t.Errorf("queue ARN %s: want one of account 111111111111 in eu-west-1", out["Arn"])
	}
	st, err := cloudformation.NewFromConfig(other).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("shop-queue")})
	if err != nil || !strings.HasPrefix(aws.ToString(st.Stacks[0].StackId), "arn:aws:cloudformation:eu-west-1:111111111111:stack/shop-queue/") {
		t.Fatalf("stack id %v (%v)", st, err)
	}
	if _, err := cloudformation.NewFromConfig(home).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("shop-queue")}); !awserr.StackMissing(err) {
		t.Errorf("the stack is visible at home: %v", err)
	}
	if q, err := sqs.NewFromConfig(home).ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil || len(q.QueueUrls) != 0 {
		t.Errorf("home sees queues %v (%v)", q, err)
	}
	if got := v.e.Places(); strings.Join(got, " ") != "000000000000/eu-west-1 000000000000/us-east-1 111111111111/eu-west-1 111111111111/us-east-1" {
		t.Errorf("places = %v", got)
	}

	// A region that is not one is refused, not made.
	_, err = ssm.NewFromConfig(as(t, v.e, "test", "x", "", "moon-base")).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/where")})
	if err == nil || !strings.Contains(err.Error(), `"moon-base" is not an AWS region name`) {
		t.Errorf("a request for region moon-base: %v", err)
	}
}

// TestPlacesPersistAcrossRestart: an account and region served once comes back with its
// state when the emulator restarts on the same folder.
func TestPlacesPersistAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := awslocal.New(awslocal.Options{Dir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if _, err := ssm.NewFromConfig(as(t, e, "222222222222", "x", "", "ap-southeast-2")).PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String("/kept"), Value: aws.String("yes"), Type: ssmtypes.ParameterTypeString}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	v := start(t, awslocal.Options{Dir: dir, Logger: quiet()})
	if got := v.e.Places(); strings.Join(got, " ") != "000000000000/us-east-1 222222222222/ap-southeast-2" {
		t.Errorf("places after restart = %v", got)
	}
	got, err := ssm.NewFromConfig(as(t, v.e, "222222222222", "x", "", "ap-southeast-2")).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/kept")})
	if err != nil || aws.ToString(got.Parameter.Value) != "yes" {
		t.Fatalf("after restart: %v (%v)", got, err)
	}
}

// roleStack makes a role named name whose trust policy is trust.
func roleStack(name, trust string) string {
	return `{"Resources":{"Role":{"Type":"AWS::IAM::Role","Properties":{"RoleName":"` + name + `","AssumeRolePolicyDocument":` + trust + `}}},
	  "Outputs":{"Arn":{"Value":{"Fn::GetAtt":["Role","Arn"]}}}}`
}

// TestAssumeRole: STS issues credentials of a role a stack made in another account when
// its trust policy admits the caller, and those credentials act in the role's account;
// a trust that does not admit the caller, a missing role or a wrong external id is
// AccessDenied in AWS's words; expired and forged credentials are refused.
func TestAssumeRole(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	v := start(t, awslocal.Options{Logger: quiet(), Clock: clk, CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: time.Nanosecond, ChangeSetDelay: time.Nanosecond}})
	ctx := context.Background()
	target := as(t, v.e, "222222222222", "x", "", "us-west-2")
	trusts := map[string]string{
		"cairn-deploy": `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:root"},"Action":"sts:AssumeRole",
		  "Condition":{"ArnEquals":{"aws:PrincipalArn":"arn:aws:iam::000000000000:role/cairn-deployer-us-east-1"}}}]}`,
		"strangers":   `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"333333333333"},"Action":"sts:AssumeRole"}]}`,
		"with-secret": `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"000000000000"},"Action":"sts:AssumeRole","Condition":{"StringEquals":{"sts:ExternalId":"s3cret"}}}]}`,
		"chained":     `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::222222222222:role/cairn-deploy"},"Action":"sts:AssumeRole"}]}`,
		"services":    `{"Statement":[{"Effect":"Allow","Principal":{"Service":"cloudformation.amazonaws.com"},"Action":"sts:AssumeRole"}]}`,
	}
	for name, trust := range trusts {
		waitStackDone(t, clk, target, "role-"+name, roleStack(name, trust))
	}
	c := func(cfg aws.Config) *sts.Client { return sts.NewFromConfig(cfg) }
	home := as(t, v.e, "test", "x", "", "us-east-1")
	assume := func(cfg aws.Config, role, externalID string) (*sts.AssumeRoleOutput, error) {
		in := &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::222222222222:role/" + role), RoleSessionName: aws.String("cairn-20260501-090000000-abcd1234")}
		if externalID != "" {
			in.ExternalId = aws.String(externalID)
		}
		return c(cfg).AssumeRole(ctx, in)
	}
	denied := func(caller, role string) string {
		return "AccessDenied: User: " + caller + " is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::222222222222:role/" + role
	}
	for _, tc := range []struct {
		name, role, externalID, want string
	}{
		{"trusted by a condition on the principal", "cairn-deploy", "", ""},
		{"trusts another account only", "strangers", "", denied("arn:aws:iam::000000000000:root", "strangers")},
		{"does not exist", "nobody", "", denied("arn:aws:iam::000000000000:root", "nobody")},
		{"external id missing", "with-secret", "", denied("arn:aws:iam::000000000000:root", "with-secret")},
		{"external id wrong", "with-secret", "guess", denied("arn:aws:iam::000000000000:root", "with-secret")},
		{"external id right", "with-secret", "s3cret", ""},
		{"trusts a service only", "services", "", denied("arn:aws:iam::000000000000:root", "services")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := assume(home, tc.role, tc.externalID)
			if tc.want != "" {
				if err == nil || awserr.Message(err) != tc.want || awserr.HTTPStatus(err) != http.StatusForbidden {
					t.Fatalf("err = %v, want %s (403)", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if arn := aws.ToString(out.AssumedRoleUser.Arn); arn != "arn:aws:sts::222222222222:assumed-role/"+tc.role+"/cairn-20260501-090000000-abcd1234" {
				t.Errorf("assumed role %s", arn)
			}
			if exp := aws.ToTime(out.Credentials.Expiration); !exp.Equal(clk.Now().Truncate(time.Second).Add(time.Hour)) {
				t.Errorf("expires %s, want an hour from now", exp)
			}
		})
	}

	// The session's credentials act in the role's account, in the region they sign for.
	out, err := assume(home, "cairn-deploy", "")
	if err != nil {
		t.Fatal(err)
	}
	creds := out.Credentials
	session := as(t, v.e, aws.ToString(creds.AccessKeyId), aws.ToString(creds.SecretAccessKey), aws.ToString(creds.SessionToken), "eu-central-1")
	id, err := c(session).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil || aws.ToString(id.Account) != "222222222222" || aws.ToString(id.Arn) != "arn:aws:sts::222222222222:assumed-role/cairn-deploy/cairn-20260501-090000000-abcd1234" ||
		!strings.HasPrefix(aws.ToString(id.UserId), "AROA") {
		t.Fatalf("caller with the session: %+v (%v)", id, err)
	}
	if _, err := ssm.NewFromConfig(session).PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/by-session"), Value: aws.String("x"), Type: ssmtypes.ParameterTypeString}); err != nil {
		t.Fatal(err)
	}
	if _, err := ssm.NewFromConfig(as(t, v.e, "222222222222", "x", "", "eu-central-1")).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/by-session")}); err != nil {
		t.Errorf("the session's parameter is not in account 222222222222, eu-central-1: %v", err)
	}

	// Sessions are checked exactly: a trust naming cairn-deploy admits its sessions, and
	// the session of another role is refused.
	if _, err := assume(session, "chained", ""); err != nil {
		t.Errorf("cairn-deploy's session assuming chained: %v", err)
	}
	if _, err := assume(session, "strangers", ""); err == nil || awserr.Message(err) != denied("arn:aws:sts::222222222222:assumed-role/cairn-deploy/cairn-20260501-090000000-abcd1234", "strangers") {
		t.Errorf("a session assuming a role not trusting it: %v", err)
	}

	// A forged token is refused; an expired session too, in each protocol's words.
	forged := as(t, v.e, aws.ToString(creds.AccessKeyId), "x", "forged", "eu-central-1")
	if _, err := c(forged).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}); awserr.ErrorCode(err) != "InvalidClientTokenId" {
		t.Errorf("a forged session token: %v", err)
	}
	clk.Advance(time.Hour)
	for name, call := range map[string]func() error{
		"sts (query)": func() error { _, err := c(session).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}); return err },
		"ssm (json)": func() error {
			_, err := ssm.NewFromConfig(session).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/by-session")})
			return err
		},
		"sns (query)": func() error { _, err := sns.NewFromConfig(session).ListTopics(ctx, &sns.ListTopicsInput{}); return err },
	} {
		err := call()
		if code := awserr.ErrorCode(err); code != "ExpiredToken" && code != "ExpiredTokenException" {
			t.Errorf("%s with an expired session: %v", name, err)
		}
	}

	// Validation as STS words it.
	_, err = c(home).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::222222222222:role/cairn-deploy"), RoleSessionName: aws.String("run/1")})
	if awserr.ErrorCode(err) != "ValidationError" || !strings.Contains(err.Error(), "roleSessionName") {
		t.Errorf("a session name with a slash: %v", err)
	}
	_, err = c(home).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::222222222222:role/cairn-deploy"), RoleSessionName: aws.String("long"), DurationSeconds: aws.Int32(7200)})
	if awserr.ErrorCode(err) != "ValidationError" || !strings.Contains(err.Error(), "MaxSessionDuration") {
		t.Errorf("two hours of a one-hour role: %v", err)
	}
}

// waitStackDone creates a stack on a virtual clock: it advances the clock until the stack
// settles complete.
func waitStackDone(t *testing.T, clk *clock.Fake, cfg aws.Config, name, body string) {
	t.Helper()
	cf := cloudformation.NewFromConfig(cfg)
	ctx := context.Background()
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body),
		Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityNamedIam}}); err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		switch st := out.Stacks[0].StackStatus; st {
		case cfntypes.StackStatusCreateComplete:
			return
		case cfntypes.StackStatusCreateInProgress:
		default:
			t.Fatalf("stack %s: %s", name, st)
		}
		clk.Advance(time.Millisecond)
	}
	t.Fatalf("stack %s did not complete", name)
}

// warnings collects the emulator's log messages.
type warnings struct {
	ch chan string
}

func (w *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.Key + "=" + a.Value.String()); return true })
	select {
	case w.ch <- b.String():
	default:
	}
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

// await returns the first log line containing want.
func (w *warnings) await(t *testing.T, want string) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m := <-w.ch:
			if strings.Contains(m, want) {
				return m
			}
		case <-timeout:
			t.Fatalf("no log line with %q", want)
		}
	}
}

// TestEventsForwardToAnotherAccountsBus: a rule of one account and region whose target is
// another account's default bus delivers the events there, with their own account and
// region, once that bus's policy admits the account (and not before), as the forwarding
// rules of cairn's target stacks do.
func TestEventsForwardToAnotherAccountsBus(t *testing.T) {
	logs := &warnings{ch: make(chan string, 1000)}
	v := start(t, awslocal.Options{Logger: slog.New(logs), CloudFormation: fastCFN()})
	url, arn := v.queue(t, "stack-events", nil)
	if err := v.e.PutRule("cfn", awslocal.EventPattern{Source: []string{"aws.cloudformation"}, DetailType: []string{"CloudFormation Stack Status Change"}}, arn); err != nil {
		t.Fatal(err)
	}
	target := as(t, v.e, "111111111111", "x", "", "eu-west-1")
	createStack(t, target, "forward", `{"Resources":{"Forward":{"Type":"AWS::Events::Rule","Properties":{
	  "EventPattern":{"source":["aws.cloudformation"]},
	  "Targets":[{"Id":"cairn","Arn":"arn:aws:events:us-east-1:000000000000:event-bus/default","RoleArn":"arn:aws:iam::111111111111:role/forward"}]}}}}`)
	createStack(t, target, "shop-early", `{"Resources":{"H":{"Type":"AWS::CloudFormation::WaitConditionHandle"}}}`)
	logs.await(t, "account 111111111111 is not authorized to put events on arn:aws:events:us-east-1:000000000000:event-bus/default")

	createStack(t, as(t, v.e, "test", "x", "", "us-east-1"), "admit", `{"Resources":{"Admit":{"Type":"AWS::Events::EventBusPolicy","Properties":{
	  "StatementId":"cairn-target-111111111111","Action":"events:PutEvents","Principal":"111111111111"}}}}`)
	createStack(t, target, "shop-late", `{"Resources":{"H":{"Type":"AWS::CloudFormation::WaitConditionHandle"}}}`)
	for {
		var ev events.CloudWatchEvent
		if err := json.Unmarshal([]byte(aws.ToString(v.receive(t, url).Body)), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.AccountID == "000000000000" {
			continue // the home stack's own events
		}
		if strings.Contains(string(ev.Detail), "shop-early") {
			t.Fatalf("an event from before the bus admitted the account arrived: %s", ev.Detail)
		}
		if ev.AccountID != "111111111111" || ev.Region != "eu-west-1" {
			t.Fatalf("forwarded event of %s %s: %s", ev.AccountID, ev.Region, ev.Detail)
		}
		if strings.Contains(string(ev.Detail), `"stack-id":"arn:aws:cloudformation:eu-west-1:111111111111:stack/shop-late/`) {
			break
		}
	}
}

// TestSubscriptionToATopicOfAnotherRegion: a stack subscribes its queue to a topic of
// another region (AWS::SNS::Subscription with Region), and messages published there
// arrive; custom resource requests of a stack in that region get a ResponseURL that
// completes it.
func TestSubscriptionToATopicOfAnotherRegion(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet(), CloudFormation: fastCFN()})
	ctx := context.Background()
	west := as(t, v.e, "test", "x", "", "us-west-2")
	topic := createStack(t, west, "ports", `{"Resources":{"T":{"Type":"AWS::SNS::Topic","Properties":{"TopicName":"cairn-ports"}}},"Outputs":{"Arn":{"Value":{"Ref":"T"}}}}`)["Arn"]
	if topic != "arn:aws:sns:us-west-2:000000000000:cairn-ports" {
		t.Fatalf("topic %s", topic)
	}
	url, arn := v.queue(t, "ports", nil)
	home := as(t, v.e, "test", "x", "", "us-east-1")
	createStack(t, home, "subscribe", `{"Resources":{"S":{"Type":"AWS::SNS::Subscription","Properties":{
	  "TopicArn":"`+topic+`","Region":"us-west-2","Protocol":"sqs","Endpoint":"`+arn+`"}}}}`)

	cf := cloudformation.NewFromConfig(west)
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("shop-port"), TemplateBody: aws.String(
		`{"Resources":{"P":{"Type":"Custom::PortAllocation","Properties":{"ServiceToken":"` + topic + `","Pool":"default"}}},"Outputs":{"Port":{"Value":{"Fn::GetAtt":["P","Port"]}}}}`)}); err != nil {
		t.Fatal(err)
	}
	var envelope struct{ Message string }
	if err := json.Unmarshal([]byte(aws.ToString(v.receive(t, url).Body)), &envelope); err != nil {
		t.Fatal(err)
	}
	var req struct {
		ResponseURL, StackId, RequestId, LogicalResourceId string
	}
	if err := json.Unmarshal([]byte(envelope.Message), &req); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(req.StackId, "arn:aws:cloudformation:us-west-2:000000000000:stack/shop-port/") || !strings.HasPrefix(req.ResponseURL, v.e.URL()) {
		t.Fatalf("request %+v", req)
	}
	body, _ := json.Marshal(map[string]any{"Status": "SUCCESS", "PhysicalResourceId": "port-1", "StackId": req.StackId, "RequestId": req.RequestId,
		"LogicalResourceId": req.LogicalResourceId, "Data": map[string]string{"Port": "20001"}})
	put, _ := http.NewRequest(http.MethodPut, req.ResponseURL, strings.NewReader(string(body)))
	resp, err := http.DefaultClient.Do(put)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("response PUT: %s %s", resp.Status, b)
	}
	if out := waitStack(t, cf, "shop-port", cfntypes.StackStatusCreateComplete); out["Port"] != "20001" {
		t.Fatalf("outputs %v", out)
	}

	_, err = cloudformation.NewFromConfig(home).CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("wrong-region"), TemplateBody: aws.String(
		`{"Resources":{"S":{"Type":"AWS::SNS::Subscription","Properties":{"TopicArn":"` + topic + `","Region":"eu-west-1","Protocol":"sqs","Endpoint":"` + arn + `"}}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitStack(t, cloudformation.NewFromConfig(home), "wrong-region", cfntypes.StackStatusRollbackComplete)
}

// TestFaultsOfOneRegion: a fault naming a region throttles calls made there and nowhere
// else; the call counts of each account and region are kept apart.
func TestFaultsOfOneRegion(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet()})
	ctx := context.Background()
	postJSON(t, v.e.URL()+"/_local/faults", `{"faults":[{"target":"cloudformation.*","region":"eu-west-1","throttleRate":1}]}`)
	list := func(region string) error {
		_, err := cloudformation.NewFromConfig(as(t, v.e, "test", "x", "", region)).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{})
		return err
	}
	if err := list("eu-west-1"); !awserr.Throttled(err) {
		t.Errorf("eu-west-1: %v, want throttled", err)
	}
	if err := list("us-east-1"); err != nil {
		t.Errorf("us-east-1: %v", err)
	}
	resp, err := http.Get(v.e.URL() + "/_local/calls?region=eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var calls map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&calls); err != nil {
		t.Fatal(err)
	}
	if calls["cloudformation.DescribeStacks"] != 1 {
		t.Errorf("calls in eu-west-1 = %v, want one DescribeStacks", calls)
	}
	if err := v.e.SetFaults(awslocal.Fault{Target: "s3.*", Region: "mars"}); err == nil || !errors.Is(err, err) || !strings.Contains(err.Error(), "not an AWS region") {
		t.Errorf("a fault for region mars: %v", err)
	}
}
