package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/cairn-dev/cairn/internal/customresource"
	"github.com/cairn-dev/cairn/internal/ports"
	"github.com/cairn-dev/cairn/internal/sweeper"
)

const testRole = "arn:aws:iam::123456789012:role/cairn-cfn"

// synthesized is one synthesized stack with cdk-nag applied: the assertions
// template, its JSON, and every unsuppressed AwsSolutions error.
type synthesized struct {
	tmpl      assertions.Template
	body      []byte // the template as JSON, as `cdk synth` writes it
	resources map[string]map[string]interface{}
	outputs   map[string]interface{}
	nagErrors []string
}

// lambdaDir writes placeholder bootstrap files where `make build` would put
// the real ones, in a new folder under parent.
func lambdaDir(t *testing.T, parent string) string {
	dir, err := os.MkdirTemp(parent, "lambda")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Functions {
		if err := os.MkdirAll(filepath.Join(dir, f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f, "bootstrap"), []byte("placeholder "+f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// sharedDir holds the shared synthesis's assets; TestMain removes it.
var sharedDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cairn-infra-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sharedDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var shared struct {
	once sync.Once
	s    *synthesized
}

// sharedStack synthesizes, once per test binary, the stack with every
// context value set: a cold CDK synthesis costs tens of seconds, and
// TestStack and TestEmulatorDeploy check the same template.
func sharedStack(t *testing.T) *synthesized {
	t.Helper()
	shared.once.Do(func() {
		shared.s = synth(t, map[string]interface{}{
			ctxNamespaces:     []interface{}{"shop", "web"},
			ctxPortPools:      "default=20000-29999,web=30000-30099",
			ctxDriftSchedule:  "rate(6 hours)",
			ctxCfnServiceRole: testRole,
			ctxLambdaDir:      lambdaDir(t, sharedDir),
		}, sharedDir)
	})
	if shared.s == nil {
		t.Fatal("the shared synthesis failed in an earlier test; see its error")
	}
	return shared.s
}

// synth builds the stack the way main does, from context, with cdk-nag's
// AwsSolutions checks applied to the whole app, writing the cloud assembly
// under dir.
func synth(t *testing.T, ctx map[string]interface{}, dir string) *synthesized {
	t.Helper()
	out, err := os.MkdirTemp(dir, "cdk.out")
	if err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(out)})
	stack, err := NewCairnStack(app, "Cairn", &CairnStackProps{StackProps: awscdk.StackProps{StackName: jsii.String(stackName)}})
	if err != nil {
		t.Fatalf("NewCairnStack: %v", err)
	}
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	return synthesizedOf(t, stack)
}

// synthesizedOf reads one stack of an app with cdk-nag applied.
func synthesizedOf(t *testing.T, stack awscdk.Stack) *synthesized {
	t.Helper()
	s := &synthesized{tmpl: assertions.Template_FromStack(stack, nil)}
	for _, m := range *assertions.Annotations_FromStack(stack).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))) {
		s.nagErrors = append(s.nagErrors, fmt.Sprintf("%s: %v", *m.Id, m.Entry.Data))
	}
	// Round-trip through JSON so the template is plain Go maps.
	b, err := json.Marshal(*s.tmpl.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resources map[string]map[string]interface{}
		Outputs   map[string]interface{}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	s.body, s.resources, s.outputs = b, doc.Resources, doc.Outputs
	return s
}

// assert runs one CDK assertion, turning the jsii panic it raises on a
// mismatch into a test error.
func assert(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	f()
}

// id finds the logical id of the one resource of a type whose id starts with prefix.
func (s *synthesized) id(t *testing.T, typ, prefix string) string {
	t.Helper()
	var found []string
	for id, r := range s.resources {
		if r["Type"] == typ && regexp.MustCompile("^"+prefix+"[0-9A-F]{8}$").MatchString(id) {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s named %s*, found %v", typ, prefix, found)
	}
	return found[0]
}

func (s *synthesized) ofType(typ string) map[string]map[string]interface{} {
	out := map[string]map[string]interface{}{}
	for id, r := range s.resources {
		if r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

func props(r map[string]interface{}) map[string]interface{} {
	p, _ := r["Properties"].(map[string]interface{})
	return p
}

// flat renders an intrinsic the way cdk-nag does: Ref X -> <X>,
// GetAtt X.Y -> <X.Y>, Fn::Join concatenated.
func flat(v interface{}) string {
	switch t := v.(type) {
	case string:
		return t
	case map[string]interface{}:
		if r, ok := t["Ref"]; ok {
			return "<" + flat(r) + ">"
		}
		if g, ok := t["Fn::GetAtt"].([]interface{}); ok {
			return "<" + flat(g[0]) + "." + flat(g[1]) + ">"
		}
		if j, ok := t["Fn::Join"].([]interface{}); ok {
			var parts []string
			for _, p := range j[1].([]interface{}) {
				parts = append(parts, flat(p))
			}
			return strings.Join(parts, j[0].(string))
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func list(v interface{}) []interface{} {
	if l, ok := v.([]interface{}); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []interface{}{v}
}

func flatList(v interface{}) []string {
	var out []string
	for _, e := range list(v) {
		out = append(out, flat(e))
	}
	sort.Strings(out)
	return out
}

// statement is one IAM statement found in the template, with where it is.
type statement struct {
	where     string
	sid       string
	effect    string
	actions   []string
	resources []string
	condition map[string]interface{}
	raw       map[string]interface{}
}

// statements walks every policy document in the template: inline role
// policies, AWS::IAM::Policy, and the bucket, queue and topic policies.
func (s *synthesized) statements() []statement {
	var out []statement
	add := func(where string, doc interface{}) {
		d, _ := doc.(map[string]interface{})
		for _, st := range list(d["Statement"]) {
			m := st.(map[string]interface{})
			var acts []string
			for _, a := range list(m["Action"]) {
				acts = append(acts, a.(string))
			}
			cond, _ := m["Condition"].(map[string]interface{})
			sid, _ := m["Sid"].(string)
			out = append(out, statement{where: where, sid: sid, effect: m["Effect"].(string), actions: acts, resources: flatList(m["Resource"]), condition: cond, raw: m})
		}
	}
	for id, r := range s.resources {
		p := props(r)
		switch r["Type"] {
		case "AWS::IAM::Role":
			for _, pol := range list(p["Policies"]) {
				add(id, pol.(map[string]interface{})["PolicyDocument"])
			}
		case "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::S3::BucketPolicy", "AWS::SQS::QueuePolicy", "AWS::SNS::TopicPolicy":
			add(id, p["PolicyDocument"])
		}
	}
	return out
}

// roleStatements are the Allow statements of the policies attached to a role.
func (s *synthesized) roleStatements(t *testing.T, rolePrefix string) []statement {
	role := s.id(t, "AWS::IAM::Role", rolePrefix)
	var out []statement
	for _, st := range s.statements() {
		p := props(s.resources[st.where])
		if s.resources[st.where]["Type"] == "AWS::IAM::Policy" && slices.Contains(flatList(p["Roles"]), "<"+role+">") && st.effect == "Allow" {
			out = append(out, st)
		}
	}
	return out
}

func stackARNFlat(ns string) string {
	return "arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/" + ns + "-*/*"
}

func TestMissingLambdaBinary(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]interface{}{ctxNamespaces: "shop", ctxLambdaDir: t.TempDir()}})
	_, err := NewCairnStack(app, "Cairn", nil)
	if err == nil || !strings.Contains(err.Error(), "deployer/bootstrap is missing: run `make build`") {
		t.Fatalf("NewCairnStack without binaries: err = %v, want one naming deployer/bootstrap and `make build`", err)
	}
}

// TestStack synthesizes the stack once, with every context value set, and
// checks each resource, permission and output the issue names.
func TestStack(t *testing.T) {
	s := sharedStack(t)
	bucket := s.id(t, "AWS::S3::Bucket", "Bucket")
	deployQueue := s.id(t, "AWS::SQS::Queue", "DeployQueue")
	deployDLQ := s.id(t, "AWS::SQS::Queue", "DeployDLQ")
	portsQueue := s.id(t, "AWS::SQS::Queue", "PortsQueue")
	portsDLQ := s.id(t, "AWS::SQS::Queue", "PortsDLQ")
	driftQueue := s.id(t, "AWS::SQS::Queue", "DriftQueue")
	driftDLQ := s.id(t, "AWS::SQS::Queue", "DriftDLQ")
	portsTopic := s.id(t, "AWS::SNS::Topic", "PortsTopic")
	notifications := s.id(t, "AWS::SNS::Topic", "NotificationsTopic")
	sealKey := s.id(t, "AWS::KMS::Key", "SealKey")

	t.Run("cdk-nag AwsSolutions: no unsuppressed errors", func(t *testing.T) {
		for _, e := range s.nagErrors {
			t.Error(e)
		}
	})

	t.Run("every suppression has a reason", func(t *testing.T) {
		n := 0
		for id, r := range s.resources {
			md, _ := r["Metadata"].(map[string]interface{})
			nag, _ := md["cdk_nag"].(map[string]interface{})
			for _, sup := range list(nag["rules_to_suppress"]) {
				m := sup.(map[string]interface{})
				n++
				if reason, _ := m["reason"].(string); len(reason) < 40 {
					t.Errorf("%s: suppression of %v has no real reason: %q", id, m["id"], reason)
				}
				if m["id"] == "AwsSolutions-IAM5" && len(list(m["applies_to"])) == 0 {
					t.Errorf("%s: IAM5 suppressed for every wildcard; list the ones meant in appliesTo", id)
				}
			}
		}
		if n == 0 {
			t.Error("no suppressions found in resource metadata; the walk looks in the wrong place")
		}
	})

	t.Run("bucket", func(t *testing.T) {
		assert(t, "bucket properties", func() {
			s.tmpl.HasResource(jsii.String("AWS::S3::Bucket"), map[string]interface{}{
				"DeletionPolicy": "Retain",
				"Properties": map[string]interface{}{
					"VersioningConfiguration": map[string]interface{}{"Status": "Enabled"},
					"BucketEncryption": map[string]interface{}{"ServerSideEncryptionConfiguration": []interface{}{
						map[string]interface{}{"ServerSideEncryptionByDefault": map[string]interface{}{"SSEAlgorithm": "AES256"}},
					}},
					"PublicAccessBlockConfiguration": map[string]interface{}{
						"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
					},
					"LifecycleConfiguration": map[string]interface{}{"Rules": assertions.Match_ArrayWith(&[]interface{}{
						assertions.Match_ObjectLike(&map[string]interface{}{"NoncurrentVersionExpiration": map[string]interface{}{"NoncurrentDays": 90, "NewerNoncurrentVersions": 20}, "Status": "Enabled"}),
						assertions.Match_ObjectLike(&map[string]interface{}{"Prefix": "runs/", "ExpirationInDays": 180, "Status": "Enabled"}),
						assertions.Match_ObjectLike(&map[string]interface{}{"Prefix": "drift/", "ExpirationInDays": 90, "Status": "Enabled"}),
					})},
				},
			})
		})
		tlsDeny := false
		for _, st := range s.statements() {
			if s.resources[st.where]["Type"] == "AWS::S3::BucketPolicy" && st.effect == "Deny" &&
				fmt.Sprint(st.condition["Bool"]) == "map[aws:SecureTransport:false]" && slices.Contains(st.actions, "s3:*") {
				tlsDeny = true
			}
		}
		if !tlsDeny {
			t.Error("bucket policy has no Deny s3:* when aws:SecureTransport is false")
		}
	})

	t.Run("upload notifications go to the deploy queue", func(t *testing.T) {
		nc := props(s.resources[bucket])["NotificationConfiguration"].(map[string]interface{})
		var filters []string
		for _, qc := range list(nc["QueueConfigurations"]) {
			m := qc.(map[string]interface{})
			if m["Event"] != "s3:ObjectCreated:*" || flat(m["Queue"]) != "<"+deployQueue+".Arn>" {
				t.Errorf("queue configuration %v: want s3:ObjectCreated:* to the deploy queue", m)
			}
			var rules []string
			for _, r := range list(m["Filter"].(map[string]interface{})["S3Key"].(map[string]interface{})["Rules"]) {
				rule := r.(map[string]interface{})
				rules = append(rules, rule["Name"].(string)+"="+rule["Value"].(string))
			}
			sort.Strings(rules)
			filters = append(filters, strings.Join(rules, " "))
		}
		sort.Strings(filters)
		// Users upload deployments/NAME.zip and plans/NAME.zip; the deployer
		// writes plans/NAME/PLAN_ID.json itself, which must not trigger it.
		want := []string{"prefix=approvals/", "prefix=deployments/ suffix=.zip", "prefix=plans/ suffix=.zip"}
		if !slices.Equal(filters, want) {
			t.Errorf("notification filters = %v, want %v", filters, want)
		}
		for key, fires := range map[string]bool{
			"deployments/shop.zip": true, "plans/shop.zip": true, "approvals/shop/plan-1.json": true,
			"plans/shop/plan-1.json": false, "deployments/shop.json": false, "runs/shop/1.json": false,
		} {
			if got := notifies(nc, key); got != fires {
				t.Errorf("upload of %s notifies the deploy queue: %v, want %v", key, got, fires)
			}
		}
		// S3 validates the destination when the configuration is created, so
		// the queue policy allowing it must exist first.
		policy := ""
		for id, r := range s.ofType("AWS::SQS::QueuePolicy") {
			if slices.Contains(flatList(props(r)["Queues"]), "<"+deployQueue+">") {
				policy = id
			}
		}
		if deps := flatList(s.resources[bucket]["DependsOn"]); !slices.Contains(deps, policy) {
			t.Errorf("bucket DependsOn %v, want the deploy queue policy %s", deps, policy)
		}
		found := false
		for _, st := range s.statements() {
			if st.where == policy && st.effect == "Allow" && flat(st.raw["Principal"].(map[string]interface{})["Service"]) == "s3.amazonaws.com" {
				found = true
				if got := flat(st.condition["ArnEquals"].(map[string]interface{})["aws:SourceArn"]); got != "arn:<AWS::Partition>:s3:::cairn-<AWS::AccountId>-<AWS::Region>" {
					t.Errorf("S3 may send from %s, want only cairn's bucket", got)
				}
			}
		}
		if !found {
			t.Error("deploy queue policy does not allow s3.amazonaws.com")
		}
		if got := flat(props(s.resources[bucket])["BucketName"]); got != "cairn-<AWS::AccountId>-<AWS::Region>" {
			t.Errorf("bucket name = %s", got)
		}
	})

	t.Run("queues: encrypted, TLS only, DLQs with alarms", func(t *testing.T) {
		queues := s.ofType("AWS::SQS::Queue")
		if len(queues) != 6 {
			t.Errorf("%d queues, want 6 (deploy, ports, drift and their DLQs)", len(queues))
		}
		tlsOnly := map[string]bool{}
		for _, st := range s.statements() {
			if s.resources[st.where]["Type"] == "AWS::SQS::QueuePolicy" && st.effect == "Deny" && fmt.Sprint(st.condition["Bool"]) == "map[aws:SecureTransport:false]" {
				for _, q := range flatList(props(s.resources[st.where])["Queues"]) {
					tlsOnly[q] = true
				}
			}
		}
		for id, q := range queues {
			if props(q)["SqsManagedSseEnabled"] != true {
				t.Errorf("queue %s is not encrypted", id)
			}
			if !tlsOnly["<"+id+">"] {
				t.Errorf("queue %s does not deny requests without TLS", id)
			}
		}
		for q, dlq := range map[string]string{deployQueue: deployDLQ, portsQueue: portsDLQ, driftQueue: driftDLQ} {
			rp, _ := props(s.resources[q])["RedrivePolicy"].(map[string]interface{})
			if flat(rp["deadLetterTargetArn"]) != "<"+dlq+".Arn>" {
				t.Errorf("queue %s redrives to %v, want %s", q, rp, dlq)
			}
			assert(t, "alarm on "+dlq, func() {
				s.tmpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]interface{}{
					"MetricName":         "ApproximateNumberOfMessagesVisible",
					"Namespace":          "AWS/SQS",
					"Dimensions":         []interface{}{map[string]interface{}{"Name": "QueueName", "Value": map[string]interface{}{"Fn::GetAtt": []interface{}{dlq, "QueueName"}}}},
					"Threshold":          1,
					"ComparisonOperator": "GreaterThanOrEqualToThreshold",
					"AlarmActions":       []interface{}{map[string]interface{}{"Ref": notifications}},
				})
			})
		}
	})

	t.Run("stack status events rule", func(t *testing.T) {
		_, pattern := s.eventRule(t, "CloudFormation Stack Status Change", deployQueue)
		if got := flatList(pattern["source"]); !slices.Equal(got, []string{"aws.cloudformation"}) {
			t.Errorf("source = %v", got)
		}
		if got := flatList(pattern["detail-type"]); !slices.Equal(got, []string{"CloudFormation Stack Status Change"}) {
			t.Errorf("detail-type = %v", got)
		}
		var prefixes []string
		for _, p := range list(pattern["detail"].(map[string]interface{})["stack-id"]) {
			prefixes = append(prefixes, flat(p.(map[string]interface{})["prefix"]))
		}
		sort.Strings(prefixes)
		want := []string{
			"arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/shop-",
			"arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/web-",
		}
		if !slices.Equal(prefixes, want) {
			t.Errorf("stack-id prefixes = %v, want %v", prefixes, want)
		}
		if got := flatList(pattern["account"]); !slices.Equal(got, []string{"<AWS::AccountId>"}) {
			t.Errorf("account = %v", got)
		}
		// EventBridge may send to the deploy queue, only from this rule.
		found := false
		for _, st := range s.statements() {
			if svc, _ := st.raw["Principal"].(map[string]interface{}); st.effect == "Allow" && svc["Service"] == "events.amazonaws.com" && slices.Equal(st.resources, []string{"<" + deployQueue + ".Arn>"}) {
				found = st.condition != nil
			}
		}
		if !found {
			t.Error("deploy queue policy does not allow events.amazonaws.com with a source condition")
		}
	})

	t.Run("ports topic to ports queue to ports Lambda", func(t *testing.T) {
		assert(t, "subscription", func() {
			s.tmpl.HasResourceProperties(jsii.String("AWS::SNS::Subscription"), map[string]interface{}{
				"Protocol": "sqs",
				"TopicArn": map[string]interface{}{"Ref": portsTopic},
				"Endpoint": map[string]interface{}{"Fn::GetAtt": []interface{}{portsQueue, "Arn"}},
			})
		})
		scoped := false
		for _, st := range s.statements() {
			if svc, _ := st.raw["Principal"].(map[string]interface{}); st.effect == "Allow" && svc["Service"] == "sns.amazonaws.com" {
				arnEq, _ := st.condition["ArnEquals"].(map[string]interface{})
				if !slices.Equal(st.resources, []string{"<" + portsQueue + ".Arn>"}) || flat(arnEq["aws:SourceArn"]) != "<"+portsTopic+">" {
					t.Errorf("SNS may send to %v from %v, want the ports queue from the ports topic only", st.resources, st.condition)
				}
				scoped = true
			}
		}
		if !scoped {
			t.Error("no queue policy statement for the ports topic")
		}
		ports := s.id(t, "AWS::Lambda::Function", "Ports")
		assert(t, "ports event source", func() {
			s.tmpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]interface{}{
				"EventSourceArn":        map[string]interface{}{"Fn::GetAtt": []interface{}{portsQueue, "Arn"}},
				"FunctionName":          map[string]interface{}{"Ref": ports},
				"FunctionResponseTypes": []interface{}{"ReportBatchItemFailures"},
				// At most two instances write a pool at once, batches of ten: what
				// BenchmarkAllocate's deployed case (instances=2) measures.
				"BatchSize":     10,
				"ScalingConfig": map[string]interface{}{"MaximumConcurrency": 2},
			})
		})
		deployer := s.id(t, "AWS::Lambda::Function", "Deployer")
		assert(t, "deployer event source", func() {
			s.tmpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]interface{}{
				"EventSourceArn":        map[string]interface{}{"Fn::GetAtt": []interface{}{deployQueue, "Arn"}},
				"FunctionName":          map[string]interface{}{"Ref": deployer},
				"FunctionResponseTypes": []interface{}{"ReportBatchItemFailures"},
			})
		})
	})

	t.Run("drift schedule from context", func(t *testing.T) {
		drift := s.id(t, "AWS::Lambda::Function", "Drift")
		assert(t, "schedule rule", func() {
			s.tmpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]interface{}{
				"ScheduleExpression": "rate(6 hours)",
				"Targets": []interface{}{assertions.Match_ObjectLike(&map[string]interface{}{
					"Arn": map[string]interface{}{"Fn::GetAtt": []interface{}{drift, "Arn"}},
				})},
			})
		})
		assert(t, "invoke permission", func() {
			s.tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), map[string]interface{}{
				"Action": "lambda:InvokeFunction", "Principal": "events.amazonaws.com",
				"FunctionName": map[string]interface{}{"Fn::GetAtt": []interface{}{drift, "Arn"}},
			})
		})
	})

	t.Run("functions", func(t *testing.T) {
		fns := s.ofType("AWS::Lambda::Function")
		if len(fns) != 4 {
			t.Fatalf("%d functions, want 4", len(fns))
		}
		policyFn := s.id(t, "AWS::Lambda::Function", "PolicyFunction")
		want := map[string]struct {
			memory, timeout float64
			env             map[string]string
		}{
			"Deployer": {512, 120, map[string]string{
				"CAIRN_BUCKET": "<" + bucket + ">", "CAIRN_NOTIFICATIONS_TOPIC": "<" + notifications + ">",
				"CAIRN_DEPLOY_QUEUE_URL": "<" + deployQueue + ">", "CAIRN_NAMESPACES": "shop,web",
				"CAIRN_PORT_POOLS": "default=20000-29999,web=30000-30099", "CAIRN_CFN_ROLE_ARN": testRole,
				"CAIRN_SEAL_KEY_ID": "<" + sealKey + ".Arn>", "CAIRN_SSM_PATHS": `{"shop":["/shop/*"],"web":["/web/*"]}`,
				"CAIRN_POLICY_FUNCTION": "<" + policyFn + ">",
			}},
			"PolicyFunction": {1024, 60, map[string]string{
				"CAIRN_BUCKET": "<" + bucket + ">", "CAIRN_NOTIFICATIONS_TOPIC": "<" + notifications + ">",
				"CAIRN_NAMESPACES": "shop,web", "CAIRN_PORT_POOLS": "default=20000-29999,web=30000-30099", "CAIRN_CFN_ROLE_ARN": testRole,
			}},
			"Ports": {256, 30, map[string]string{
				"CAIRN_BUCKET": "<" + bucket + ">", "CAIRN_NOTIFICATIONS_TOPIC": "<" + notifications + ">",
				"CAIRN_NAMESPACES": "shop,web", "CAIRN_PORT_POOLS": "default=20000-29999,web=30000-30099", "CAIRN_CFN_ROLE_ARN": testRole,
			}},
			"Drift": {512, 300, map[string]string{
				"CAIRN_BUCKET": "<" + bucket + ">", "CAIRN_NOTIFICATIONS_TOPIC": "<" + notifications + ">",
				"CAIRN_DRIFT_QUEUE_URL": "<" + driftQueue + ">", "CAIRN_NAMESPACES": "shop,web", "CAIRN_PORT_POOLS": "default=20000-29999,web=30000-30099", "CAIRN_CFN_ROLE_ARN": testRole,
			}},
		}
		for name, w := range want {
			p := props(s.resources[s.id(t, "AWS::Lambda::Function", name)])
			logs := s.id(t, "AWS::Logs::LogGroup", name+"Logs")
			if p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" || flat(p["Architectures"]) != `["arm64"]` {
				t.Errorf("%s: runtime %v, handler %v, architectures %v; want provided.al2023, bootstrap, [arm64]", name, p["Runtime"], p["Handler"], p["Architectures"])
			}
			lc, _ := p["LoggingConfig"].(map[string]interface{})
			if lc["LogFormat"] != "JSON" || flat(lc["LogGroup"]) != "<"+logs+">" {
				t.Errorf("%s: logging %v, want JSON to its own log group %s", name, lc, logs)
			}
			if p["MemorySize"] != w.memory || p["Timeout"] != w.timeout {
				t.Errorf("%s: memory %v timeout %v, want %v and %v", name, p["MemorySize"], p["Timeout"], w.memory, w.timeout)
			}
			got := map[string]string{}
			for k, v := range p["Environment"].(map[string]interface{})["Variables"].(map[string]interface{}) {
				got[k] = flat(v)
			}
			if fmt.Sprint(got) != fmt.Sprint(w.env) {
				t.Errorf("%s: environment\n got %v\nwant %v", name, got, w.env)
			}
		}
		// Roles carry no managed policy (no AWSLambdaBasicExecutionRole on "*" logs).
		for id, r := range s.ofType("AWS::IAM::Role") {
			if mp := props(r)["ManagedPolicyArns"]; mp != nil {
				t.Errorf("role %s has managed policies %v", id, mp)
			}
		}
	})

	t.Run("IAM: nothing allows every action on every resource", func(t *testing.T) {
		sts := s.statements()
		if len(sts) < 20 {
			t.Fatalf("only %d statements found; the walk misses policies", len(sts))
		}
		for _, st := range sts {
			if st.effect != "Allow" {
				continue
			}
			for _, a := range st.actions {
				if a == "*" || strings.HasSuffix(a, ":*") {
					t.Errorf("%s %s allows %s", st.where, st.sid, a)
				}
			}
			if _, hasNotAction := st.raw["NotAction"]; hasNotAction {
				t.Errorf("%s %s uses NotAction", st.where, st.sid)
			}
			if slices.Contains(st.resources, "*") {
				for _, a := range st.actions {
					if !slices.Contains(ReadOnlyAccountActions, a) {
						t.Errorf("%s %s allows %s on every resource", st.where, st.sid, a)
					}
				}
			}
		}
	})

	t.Run("IAM: CloudFormation limited to the namespaces", func(t *testing.T) {
		wantStacks := []string{stackARNFlat("shop"), stackARNFlat("web")}
		for _, role := range []string{"DeployerRole", "DriftRole", "PortsRole"} {
			scoped := 0
			for _, st := range s.roleStatements(t, role) {
				var cfn []string
				for _, a := range st.actions {
					if strings.HasPrefix(a, "cloudformation:") {
						cfn = append(cfn, a)
					}
				}
				if len(cfn) == 0 {
					continue
				}
				if role == "PortsRole" {
					t.Errorf("ports role may call %v; it needs no CloudFormation API", cfn)
				}
				switch {
				case slices.Equal(st.resources, []string{"*"}):
				case slices.Equal(st.resources, wantStacks):
					scoped++
				default:
					t.Errorf("%s %s: %v on %v, want stacks %v or only read-only actions on *", role, st.sid, cfn, st.resources, wantStacks)
				}
			}
			if role != "PortsRole" && scoped != 1 {
				t.Errorf("%s: %d statements scoped to the namespace stacks, want 1", role, scoped)
			}
		}
	})

	t.Run("IAM: the deployer reads the namespaces' parameters, decrypting them through SSM only", func(t *testing.T) {
		checkParameterGrants(t, s, []string{"/shop/*", "/web/*"})
	})

	t.Run("IAM: PassRole only for the configured role", func(t *testing.T) {
		n := 0
		for _, st := range s.statements() {
			if !slices.Contains(st.actions, "iam:PassRole") {
				continue
			}
			n++
			if !slices.Equal(st.resources, []string{testRole}) || len(st.actions) != 1 {
				t.Errorf("%s: %v on %v, want only iam:PassRole on %s", st.where, st.actions, st.resources, testRole)
			}
			if fmt.Sprint(st.condition) != "map[StringEquals:map[iam:PassedToService:cloudformation.amazonaws.com]]" {
				t.Errorf("PassRole condition = %v, want iam:PassedToService cloudformation.amazonaws.com", st.condition)
			}
			if !strings.HasPrefix(st.where, "DeployerRole") {
				t.Errorf("PassRole granted in %s, want only the deployer's role", st.where)
			}
		}
		if n != 1 {
			t.Errorf("%d PassRole statements, want 1", n)
		}
	})

	t.Run("IAM: S3 limited to each function's prefixes", func(t *testing.T) {
		want := map[string][]string{
			"DeployerRole":       {"approvals/", "assets/", "deployments/", "locks/", "plans/", "policies/", "policy-overrides/", "runs/", "state/", "templates/"},
			"PortsRole":          {"ports/"},
			"DriftRole":          {"deployments/", "drift/", "locks/", "state/"},
			"PolicyFunctionRole": {"approvals/", "deployments/", "plans/", "policies/"}, // writes nothing
		}
		writable := map[string][]string{
			"DeployerRole": {"assets/", "locks/", "plans/", "runs/", "state/", "templates/"},
			"PortsRole":    {"ports/"},
			"DriftRole":    {"drift/"},
		}
		objRe := regexp.MustCompile("^<" + bucket + `\.Arn>/([a-z-]+/)\*$`)
		for role, prefixes := range want {
			var objects, writes, listed []string
			lists := false
			for _, st := range s.roleStatements(t, role) {
				for _, a := range st.actions {
					if !strings.HasPrefix(a, "s3:") {
						continue
					}
					for _, r := range st.resources {
						if r == "<"+bucket+".Arn>" {
							switch {
							case a == "s3:ListBucket":
								// Unconditioned, so that a missing key is a 404, not a 403.
								if st.condition != nil {
									t.Errorf("%s: s3:ListBucket with condition %v: S3 would answer reads of missing keys with 403", role, st.condition)
								}
								lists = true
							case a == "s3:ListBucketVersions":
								like, _ := st.condition["StringLike"].(map[string]interface{})
								listed = flatList(like["s3:prefix"])
							case a == "s3:GetBucketVersioning" && role == "DeployerRole":
								// Bucket-level and read-only: the state store's versioning warning.
							default:
								t.Errorf("%s: %s on the whole bucket", role, a)
							}
							continue
						}
						m := objRe.FindStringSubmatch(r)
						if m == nil {
							t.Errorf("%s: %s on %s, outside cairn's prefixes", role, a, r)
							continue
						}
						objects = appendNew(objects, m[1])
						if a == "s3:PutObject" || a == "s3:DeleteObject" {
							writes = appendNew(writes, m[1])
						}
					}
				}
			}
			sort.Strings(objects)
			sort.Strings(writes)
			if !slices.Equal(objects, prefixes) {
				t.Errorf("%s reads %v, want %v", role, objects, prefixes)
			}
			if !slices.Equal(writes, writable[role]) {
				t.Errorf("%s writes %v, want %v", role, writes, writable[role])
			}
			if !lists {
				t.Errorf("%s may not list the bucket: reads of missing keys would be 403, not 404", role)
			}
			var wantList []string
			if role != "PortsRole" { // ports keeps no versions
				for _, p := range prefixes {
					wantList = append(wantList, p+"*")
				}
			}
			if !slices.Equal(listed, wantList) {
				t.Errorf("%s lists versions under %v, want %v", role, listed, wantList)
			}
		}
	})

	t.Run("IAM: SNS and SQS on their own topics and queues", func(t *testing.T) {
		for role, want := range map[string][]string{
			"DeployerRole": {"sns:Publish <" + notifications + ">", "sqs:SendMessage <" + deployQueue + ".Arn>"},
			"DriftRole":    {"sns:Publish <" + notifications + ">", "sqs:SendMessage <" + driftQueue + ".Arn>"},
			"PortsRole":    nil,
		} {
			var got []string
			for _, st := range s.roleStatements(t, role) {
				for _, a := range st.actions {
					if a == "sns:Publish" || a == "sqs:SendMessage" {
						for _, r := range st.resources {
							got = append(got, a+" "+r)
						}
					}
				}
			}
			sort.Strings(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: %v, want %v", role, got, want)
			}
		}
	})

	t.Run("drift: own queue, drift status events, continuations", func(t *testing.T) {
		drift := s.id(t, "AWS::Lambda::Function", "Drift")
		rp, _ := props(s.resources[driftQueue])["RedrivePolicy"].(map[string]interface{})
		if rp["maxReceiveCount"] != float64(5) {
			t.Errorf("drift queue redrive policy %v, want 5 receives before the DLQ", rp)
		}
		// The handler waits at most 2 minutes and stops 15 s before its
		// deadline; a shorter timeout would cut sweeps off before they hand off.
		timeout, _ := props(s.resources[drift])["Timeout"].(float64)
		if timeout <= 135 {
			t.Errorf("drift timeout %vs, want more than 2m15s", timeout)
		}
		if vis, _ := props(s.resources[driftQueue])["VisibilityTimeout"].(float64); vis < timeout {
			t.Errorf("drift queue visibility %vs is shorter than the drift timeout %vs: a message would be delivered twice at once", vis, timeout)
		}
		assert(t, "drift event source", func() {
			s.tmpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]interface{}{
				"EventSourceArn":        map[string]interface{}{"Fn::GetAtt": []interface{}{driftQueue, "Arn"}},
				"FunctionName":          map[string]interface{}{"Ref": drift},
				"FunctionResponseTypes": []interface{}{"ReportBatchItemFailures"},
			})
		})
		rule, pattern := s.eventRule(t, "CloudFormation Drift Detection Status Change", driftQueue)
		if got := flatList(pattern["source"]); !slices.Equal(got, []string{"aws.cloudformation"}) {
			t.Errorf("drift events rule: source = %v", got)
		}
		if got := flatList(pattern["account"]); !slices.Equal(got, []string{"<AWS::AccountId>"}) {
			t.Errorf("drift events rule: account = %v", got)
		}
		var prefixes []string
		for _, p := range list(pattern["detail"].(map[string]interface{})["stack-id"]) {
			prefixes = append(prefixes, flat(p.(map[string]interface{})["prefix"]))
		}
		sort.Strings(prefixes)
		if want := []string{
			"arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/shop-",
			"arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/web-",
		}; !slices.Equal(prefixes, want) {
			t.Errorf("drift events rule: stack-id prefixes = %v, want %v", prefixes, want)
		}
		allowed := false
		for _, st := range s.statements() {
			if svc, _ := st.raw["Principal"].(map[string]interface{}); st.effect == "Allow" && svc["Service"] == "events.amazonaws.com" && slices.Equal(st.resources, []string{"<" + driftQueue + ".Arn>"}) {
				arnEq, _ := st.condition["ArnEquals"].(map[string]interface{})
				allowed = flat(arnEq["aws:SourceArn"]) == "<"+rule+".Arn>"
			}
		}
		if !allowed {
			t.Errorf("drift queue policy does not allow events.amazonaws.com from rule %s only", rule)
		}
		if _, ok := s.outputs["DriftRoleArn"]; !ok {
			t.Error("no DriftRoleArn output: users attach read policies for drift detection to that role")
		}
		// The drift function starts with exactly the environment the stack sets.
		setEnv(t, s.env(t, "Drift"))
		c, err := sweeper.ConfigFromEnv()
		if err != nil {
			t.Fatalf("sweeper.ConfigFromEnv with the stack's environment: %v", err)
		}
		if c.QueueURL != "<"+driftQueue+">" {
			t.Errorf("drift continuations go to %q, want the drift queue %s", c.QueueURL, driftQueue)
		}
	})

	t.Run("state and lock: versions, versioning, lock releases, lock version expiry", func(t *testing.T) {
		got := s.grants(t, "DeployerRole")
		b := "<" + bucket + ".Arn>"
		for _, want := range []string{
			"s3:GetBucketVersioning " + b,
			"s3:ListBucketVersions " + b + " state/*", "s3:ListBucketVersions " + b + " locks/*",
			"s3:GetObjectVersion " + b + "/state/*", "s3:GetObjectVersion " + b + "/locks/*",
			"s3:DeleteObject " + b + "/locks/*",
		} {
			if !slices.Contains(got, want) {
				t.Errorf("deployer role lacks %s", want)
			}
		}
		var lockRules []map[string]interface{}
		lc := props(s.resources[bucket])["LifecycleConfiguration"].(map[string]interface{})
		for _, r := range list(lc["Rules"]) {
			if m := r.(map[string]interface{}); m["Prefix"] == "locks/" {
				lockRules = append(lockRules, m)
			}
		}
		if len(lockRules) != 1 {
			t.Fatalf("%d lifecycle rules for locks/, want 1", len(lockRules))
		}
		r := lockRules[0]
		if nve := fmt.Sprint(r["NoncurrentVersionExpiration"]); r["Status"] != "Enabled" || nve != "map[NoncurrentDays:1]" || r["ExpiredObjectDeleteMarker"] != true {
			t.Errorf("locks/ lifecycle rule %v: want noncurrent versions expired after 1 day (no newest kept) and expired delete markers removed", r)
		}
	})

	t.Run("ports: no response host override, pool documents only", func(t *testing.T) {
		env := s.env(t, "Ports")
		if v, ok := env[customresource.HostsEnv]; ok {
			t.Errorf("ports function has %s=%q; in AWS it must be unset (ResponseURLs are https on amazonaws.com)", customresource.HostsEnv, v)
		}
		setEnv(t, env)
		c, err := ports.ConfigFromEnv()
		if err != nil {
			t.Fatalf("ports.ConfigFromEnv with the stack's environment: %v", err)
		}
		if len(c.Handler.AllowedHosts) != 0 || len(c.Pools) != 2 {
			t.Errorf("ports config: allowed hosts %v, pools %v; want none and the 2 pools of the context", c.Handler.AllowedHosts, c.Pools)
		}
		b := "<" + bucket + ".Arn>"
		var got []string
		for _, g := range s.grants(t, "PortsRole") {
			if strings.HasPrefix(g, "s3:") {
				got = append(got, g)
			}
		}
		sort.Strings(got)
		if want := []string{"s3:GetObject " + b + "/ports/*", "s3:ListBucket " + b, "s3:PutObject " + b + "/ports/*"}; !slices.Equal(got, want) {
			t.Errorf("ports role S3 grants\n got %v\nwant %v", got, want)
		}
	})

	t.Run("seal key: an HMAC key only the deployer's role may use", func(t *testing.T) {
		r := s.resources[sealKey]
		p := props(r)
		if p["KeySpec"] != "HMAC_256" || p["KeyUsage"] != "GENERATE_VERIFY_MAC" || r["DeletionPolicy"] != "Retain" {
			t.Errorf("seal key: spec %v, usage %v, deletion policy %v; want HMAC_256, GENERATE_VERIFY_MAC, Retain", p["KeySpec"], p["KeyUsage"], r["DeletionPolicy"])
		}
		deployerRole := s.id(t, "AWS::IAM::Role", "DeployerRole")
		users := map[string][]string{}
		for _, st := range list(p["KeyPolicy"].(map[string]interface{})["Statement"]) {
			m := st.(map[string]interface{})
			if m["Effect"] != "Allow" {
				continue
			}
			who := flat(m["Principal"].(map[string]interface{})["AWS"])
			for _, a := range list(m["Action"]) {
				a := a.(string)
				switch {
				case strings.Contains(a, "*"):
					t.Errorf("key policy: %s may %s", who, a)
				case a == "kms:GenerateMac" || a == "kms:VerifyMac" || a == "kms:CreateGrant":
					users[who] = append(users[who], a)
				}
			}
		}
		if want := map[string][]string{"<" + deployerRole + ".Arn>": {"kms:GenerateMac"}}; fmt.Sprint(users) != fmt.Sprint(want) {
			t.Errorf("who may use or grant the seal key: %v, want only %v", users, want)
		}
		for _, st := range s.statements() {
			for _, a := range st.actions {
				if strings.HasPrefix(a, "kms:") && a != "kms:Decrypt" {
					t.Errorf("%s %s: identity policy allows %s (the key policy alone grants the seal key)", st.where, st.sid, a)
				}
			}
		}
	})

	t.Run("outputs and exports", func(t *testing.T) {
		for export, value := range map[string]interface{}{
			ExportBucketName:         map[string]interface{}{"Ref": bucket},
			ExportPortsServiceToken:  map[string]interface{}{"Ref": portsTopic},
			ExportNotificationsTopic: map[string]interface{}{"Ref": notifications},
		} {
			assert(t, "export "+export, func() {
				s.tmpl.HasOutput(jsii.String("*"), map[string]interface{}{
					"Value": value, "Export": map[string]interface{}{"Name": export},
				})
			})
		}
	})

	t.Run("no dependency cycle", func(t *testing.T) {
		// CloudFormation refuses a cycle only at deploy time; the bucket's
		// notification configuration and the queue policy are the risk.
		deps := map[string][]string{}
		for id, r := range s.resources {
			deps[id] = append(refsIn(r["Properties"], s.resources), flatList(r["DependsOn"])...)
		}
		done := map[string]bool{}
		for len(done) < len(deps) {
			progress := false
			for id, ds := range deps {
				if done[id] {
					continue
				}
				ready := true
				for _, d := range ds {
					ready = ready && done[d]
				}
				if ready {
					done[id], progress = true, true
				}
			}
			if !progress {
				var left []string
				for id := range deps {
					if !done[id] {
						left = append(left, id)
					}
				}
				sort.Strings(left)
				t.Fatalf("dependency cycle among %v", left)
			}
		}
	})

	t.Run("resource types", func(t *testing.T) {
		types := map[string]int{}
		for _, r := range s.resources {
			types[r["Type"].(string)]++
		}
		t.Logf("resource types in the template: %v", types)
		for _, typ := range []string{"Custom::S3BucketNotifications", "Custom::AWS", "AWS::CloudFormation::CustomResource"} {
			if types[typ] > 0 {
				t.Errorf("template contains %s: cairn's stack must be plain CloudFormation", typ)
			}
		}
	})
}

// eventRule returns the one EventBridge rule routing detailType and its
// pattern, failing unless its only target is queue: each kind of event must
// reach exactly the queue whose consumer understands it.
func (s *synthesized) eventRule(t *testing.T, detailType, queue string) (string, map[string]interface{}) {
	t.Helper()
	var id string
	var pattern map[string]interface{}
	for rid, r := range s.ofType("AWS::Events::Rule") {
		p, ok := props(r)["EventPattern"].(map[string]interface{})
		if !ok || !slices.Contains(flatList(p["detail-type"]), detailType) {
			continue
		}
		if id != "" {
			t.Errorf("rules %s and %s both route %q", id, rid, detailType)
		}
		id, pattern = rid, p
		targets := list(props(r)["Targets"])
		if len(targets) != 1 || flat(targets[0].(map[string]interface{})["Arn"]) != "<"+queue+".Arn>" {
			t.Errorf("%q events go to %v, want only %s", detailType, targets, queue)
		}
	}
	if id == "" {
		t.Fatalf("no rule routes %q", detailType)
	}
	return id, pattern
}

// grants lists what a role's policies allow, one "ACTION RESOURCE" per pair,
// with " PREFIX" appended for each s3:prefix a list action is limited to.
func (s *synthesized) grants(t *testing.T, rolePrefix string) []string {
	var out []string
	for _, st := range s.roleStatements(t, rolePrefix) {
		like, _ := st.condition["StringLike"].(map[string]interface{})
		prefixes := flatList(like["s3:prefix"])
		for _, a := range st.actions {
			for _, r := range st.resources {
				if len(prefixes) == 0 {
					out = append(out, a+" "+r)
				}
				for _, p := range prefixes {
					out = append(out, a+" "+r+" "+p)
				}
			}
		}
	}
	return out
}

// env is a function's environment as the template sets it, intrinsics
// rendered by flat (a Ref to the drift queue is "<DriftQueue...>").
func (s *synthesized) env(t *testing.T, function string) map[string]string {
	t.Helper()
	p := props(s.resources[s.id(t, "AWS::Lambda::Function", function)])
	out := map[string]string{}
	for k, v := range p["Environment"].(map[string]interface{})["Variables"].(map[string]interface{}) {
		out[k] = flat(v)
	}
	return out
}

// setEnv makes env the process environment of cairn's variables for the rest
// of the test: every CAIRN_ variable not in env is unset.
func setEnv(t *testing.T, env map[string]string) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "CAIRN_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	for _, k := range []string{customresource.HostsEnv, "CAIRN_DRIFT_QUEUE_URL", "CAIRN_DRIFT_CONCURRENCY"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// notifies reports whether an upload of key matches one of the bucket's queue
// configurations: every filter rule of it must match.
func notifies(nc map[string]interface{}, key string) bool {
	for _, qc := range list(nc["QueueConfigurations"]) {
		match := true
		for _, r := range list(qc.(map[string]interface{})["Filter"].(map[string]interface{})["S3Key"].(map[string]interface{})["Rules"]) {
			rule := r.(map[string]interface{})
			v, _ := rule["Value"].(string)
			switch rule["Name"] {
			case "prefix":
				match = match && strings.HasPrefix(key, v)
			case "suffix":
				match = match && strings.HasSuffix(key, v)
			default:
				match = false
			}
		}
		if match {
			return true
		}
	}
	return false
}

// refsIn lists the resources an intrinsic-bearing value refers to with Ref or Fn::GetAtt.
func refsIn(v interface{}, resources map[string]map[string]interface{}) []string {
	var out []string
	switch t := v.(type) {
	case map[string]interface{}:
		for k, x := range t {
			switch {
			case k == "Ref":
				if id, ok := x.(string); ok && resources[id] != nil {
					out = append(out, id)
				}
			case k == "Fn::GetAtt":
				out = append(out, list(x)[0].(string))
			default:
				out = append(out, refsIn(x, resources)...)
			}
		}
	case []interface{}:
		for _, x := range t {
			out = append(out, refsIn(x, resources)...)
		}
	}
	return out
}

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func parameterARNFlat(path string) string {
	return "arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:parameter" + path
}

// checkParameterGrants: SSM and KMS appear only in the deployer's two statements:
// ssm:GetParameters on exactly the paths' parameters, and kms:Decrypt on keys
// only through Parameter Store in the stack's region and for those parameters.
func checkParameterGrants(t *testing.T, s *synthesized, paths []string) {
	t.Helper()
	var want []string
	for _, p := range paths {
		want = append(want, parameterARNFlat(p))
	}
	sort.Strings(want)
	reads, decrypts := 0, 0
	for _, st := range s.statements() {
		for _, a := range st.actions {
			if !strings.HasPrefix(a, "ssm:") && !strings.HasPrefix(a, "kms:") {
				continue
			}
			if !strings.HasPrefix(st.where, "DeployerRole") || len(st.actions) != 1 {
				t.Errorf("%s %s: %v, want SSM and KMS only for the deployer, one action a statement", st.where, st.sid, st.actions)
				continue
			}
			switch a {
			case "ssm:GetParameters":
				reads++
				if !slices.Equal(st.resources, want) || st.condition != nil {
					t.Errorf("ssm:GetParameters on %v (condition %v), want exactly %v", st.resources, st.condition, want)
				}
			case "kms:Decrypt":
				decrypts++
				if !slices.Equal(st.resources, []string{"arn:<AWS::Partition>:kms:<AWS::Region>:<AWS::AccountId>:key/*"}) {
					t.Errorf("kms:Decrypt on %v, want the account's keys in the region", st.resources)
				}
				eq, _ := st.condition["StringEquals"].(map[string]interface{})
				like, _ := st.condition["StringLike"].(map[string]interface{})
				if via := flat(eq["kms:ViaService"]); via != "ssm.<AWS::Region>.<AWS::URLSuffix>" || len(st.condition) != 2 || len(eq) != 1 || len(like) != 1 {
					t.Errorf("kms:Decrypt condition %v, want kms:ViaService ssm in the stack's region and the parameters' encryption context", st.condition)
				}
				if got := flatList(like["kms:EncryptionContext:PARAMETER_ARN"]); !slices.Equal(got, want) {
					t.Errorf("kms:Decrypt for the parameters %v, want %v", got, want)
				}
			default:
				t.Errorf("%s %s allows %s, want only ssm:GetParameters and kms:Decrypt", st.where, st.sid, a)
			}
		}
	}
	if n := min(len(paths), 1); reads != n || decrypts != n {
		t.Errorf("%d ssm:GetParameters and %d kms:Decrypt statements, want %d of each", reads, decrypts, n)
	}
}

// TestContextChangesTemplate synthesizes with other context values and checks
// the template follows them: no service role means no PassRole at all, and
// cairn:ssmPaths names the parameters the deployer reads.
func TestContextChangesTemplate(t *testing.T) {
	dir := t.TempDir()
	s := synth(t, map[string]interface{}{
		ctxNamespaces: "ops",
		ctxSSMPaths:   []interface{}{"/shared/*", "/ops/db/password"},
		ctxLambdaDir:  lambdaDir(t, dir),
	}, dir)
	checkParameterGrants(t, s, []string{"/ops/db/password", "/shared/*"})
	if env := props(s.resources[s.id(t, "AWS::Lambda::Function", "Deployer")])["Environment"].(map[string]interface{})["Variables"].(map[string]interface{}); env["CAIRN_SSM_PATHS"] != `{"*":["/ops/db/password","/shared/*"]}` {
		t.Errorf("CAIRN_SSM_PATHS = %v, want the list for every namespace", env["CAIRN_SSM_PATHS"])
	}
	for _, e := range s.nagErrors {
		t.Errorf("cdk-nag: %s", e)
	}
	for _, st := range s.statements() {
		if slices.Contains(st.actions, "iam:PassRole") {
			t.Errorf("%s grants iam:PassRole with no service role configured", st.where)
		}
		for _, r := range st.resources {
			if strings.Contains(r, ":stack/") && r != stackARNFlat("ops") {
				t.Errorf("%s %s: stack resource %s, want only %s", st.where, st.sid, r, stackARNFlat("ops"))
			}
		}
	}
	assert(t, "default schedule", func() {
		s.tmpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]interface{}{"ScheduleExpression": "rate(1 day)"})
	})
	for id, r := range s.ofType("AWS::Lambda::Function") {
		env := props(r)["Environment"].(map[string]interface{})["Variables"].(map[string]interface{})
		if _, ok := env["CAIRN_CFN_ROLE_ARN"]; ok {
			t.Errorf("%s has CAIRN_CFN_ROLE_ARN with no service role configured", id)
		}
		if env["CAIRN_NAMESPACES"] != "ops" || env["CAIRN_PORT_POOLS"] != "default=20000-29999" {
			t.Errorf("%s: CAIRN_NAMESPACES=%v CAIRN_PORT_POOLS=%v, want ops and the default pool", id, env["CAIRN_NAMESPACES"], env["CAIRN_PORT_POOLS"])
		}
	}
}

// TestNoParameterStoreAccess: an empty cairn:ssmPaths grants no Parameter Store
// or KMS access at all, and needs no suppression.
func TestNoParameterStoreAccess(t *testing.T) {
	dir := t.TempDir()
	s := synth(t, map[string]interface{}{ctxNamespaces: "ops", ctxSSMPaths: "", ctxLambdaDir: lambdaDir(t, dir)}, dir)
	for _, e := range s.nagErrors {
		t.Errorf("cdk-nag: %s", e)
	}
	checkParameterGrants(t, s, nil)
	if strings.Contains(string(s.body), "PARAMETER_ARN") || strings.Contains(string(s.body), ":parameter/") {
		t.Errorf("the template mentions parameters with cairn:ssmPaths empty")
	}
}

// TestSSMPathsPerNamespace: cairn:ssmPaths as an object gives each namespace its own
// paths: the deployer checks them in code (CAIRN_SSM_PATHS), and its role's policy, which
// cannot tell namespaces apart, allows their union.
func TestSSMPathsPerNamespace(t *testing.T) {
	dir := t.TempDir()
	s := synth(t, map[string]interface{}{
		ctxNamespaces: "shop,web",
		ctxSSMPaths:   map[string]interface{}{"shop": []interface{}{"/shop/*"}, "web": []interface{}{"/web/*", "/shared/zones"}},
		ctxLambdaDir:  lambdaDir(t, dir),
	}, dir)
	checkParameterGrants(t, s, []string{"/shared/zones", "/shop/*", "/web/*"})
	env := props(s.resources[s.id(t, "AWS::Lambda::Function", "Deployer")])["Environment"].(map[string]interface{})["Variables"].(map[string]interface{})
	if env["CAIRN_SSM_PATHS"] != `{"shop":["/shop/*"],"web":["/shared/zones","/web/*"]}` {
		t.Errorf("CAIRN_SSM_PATHS = %v", env["CAIRN_SSM_PATHS"])
	}
	for _, e := range s.nagErrors {
		t.Errorf("cdk-nag: %s", e)
	}
}
