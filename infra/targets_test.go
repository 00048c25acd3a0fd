package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/cairn-dev/cairn/internal/localcairn"
	"github.com/cairn-dev/cairn/internal/target"
)

func TestTargetsContext(t *testing.T) {
	tests := []struct {
		name    string
		home    interface{}
		targets interface{}
		want    string // the targets as ACCOUNT:REGION[+role][+id], or the error
	}{
		{"none", nil, nil, ""},
		{"strings, sorted", "000000000000:us-east-1", []interface{}{"222222222222:eu-west-1", "000000000000:us-west-2"}, "000000000000:us-west-2 222222222222:eu-west-1"},
		{"a -c string", "000000000000:us-east-1", "111111111111:eu-west-1, 111111111111:eu-central-1", "111111111111:eu-central-1 111111111111:eu-west-1"},
		{"objects", "000000000000:us-east-1", []interface{}{map[string]interface{}{"account": "111111111111", "region": "eu-west-1",
			"serviceRole": "arn:aws:iam::111111111111:role/cfn", "externalId": "cairn-shop"}}, "111111111111:eu-west-1+arn:aws:iam::111111111111:role/cfn+cairn-shop"},
		{"home needed", nil, []interface{}{"111111111111:eu-west-1"}, "context cairn:home is needed with cairn:targets"},
		{"home listed", "000000000000:us-east-1", []interface{}{"000000000000:us-east-1"}, "is cairn's own account and region"},
		{"twice", "000000000000:us-east-1", []interface{}{"111111111111:eu-west-1", "111111111111:eu-west-1"}, "111111111111:eu-west-1 is listed twice"},
		{"bad account", "000000000000:us-east-1", []interface{}{"1111:eu-west-1"}, `account "1111" is not 12 digits`},
		{"bad region", "000000000000:us-east-1", []interface{}{"111111111111:europe"}, `region "europe" is not an AWS region name`},
		{"no colon", "000000000000:us-east-1", []interface{}{"111111111111"}, `is not ACCOUNT:REGION`},
		{"service role of another account", "000000000000:us-east-1", []interface{}{map[string]interface{}{"account": "111111111111", "region": "eu-west-1",
			"serviceRole": "arn:aws:iam::999999999999:role/cfn"}}, "is not the ARN of a role in account 111111111111"},
		{"unknown key", "000000000000:us-east-1", []interface{}{map[string]interface{}{"account": "111111111111", "region": "eu-west-1", "role": "x"}}, `unknown key "role"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxMap{ctxNamespaces: "shop"}
			if tt.home != nil {
				ctx[ctxHome] = tt.home
			}
			if tt.targets != nil {
				ctx[ctxTargets] = tt.targets
			}
			cfg, err := LoadConfig(ctx)
			var got []string
			for _, tg := range cfg.Targets {
				s := tg.String()
				if tg.ServiceRole != "" {
					s += "+" + tg.ServiceRole
				}
				if tg.ExternalID != "" {
					s += "+" + tg.ExternalID
				}
				got = append(got, s)
			}
			if err != nil {
				if tt.want == "" || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				return
			}
			if strings.Join(got, " ") != tt.want {
				t.Fatalf("targets = %v, want %s", got, tt.want)
			}
		})
	}
}

// app is a whole synthesized app: cairn's stack and the target stacks, with cdk-nag.
type app struct {
	stacks    map[string]*synthesized // by construct id
	raw       map[string][]byte       // the templates as `cdk synth` writes them
	deps      map[string][]string     // construct id -> ids it depends on
	nagErrors []string
}

// synthApp builds the app as main does, with cdk-nag's AwsSolutions checks on every stack.
func synthApp(t *testing.T, ctx map[string]interface{}) *app {
	t.Helper()
	out, err := os.MkdirTemp(sharedDir, "cdk.out")
	if err != nil {
		t.Fatal(err)
	}
	a := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(out)})
	if err := build(a); err != nil {
		t.Fatalf("build: %v", err)
	}
	awscdk.Aspects_Of(a).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	res := &app{stacks: map[string]*synthesized{}, raw: map[string][]byte{}, deps: map[string][]string{}}
	for _, c := range *a.Node().Children() {
		st, ok := c.(awscdk.Stack)
		if !ok {
			continue
		}
		id := *st.Node().Id()
		s := synthesizedOf(t, st)
		for _, e := range s.nagErrors {
			res.nagErrors = append(res.nagErrors, id+" "+e)
		}
		res.stacks[id] = s
		for _, d := range *st.Dependencies() {
			res.deps[id] = append(res.deps[id], *d.Node().Id())
		}
	}
	a.Synth(nil)
	for id := range res.stacks {
		raw, err := os.ReadFile(filepath.Join(out, id+".template.json"))
		if err != nil {
			t.Fatal(err)
		}
		res.raw[id] = raw
	}
	return res
}

var targetApp struct {
	once sync.Once
	a    *app
}

// targetsCtx is the context of the targets tests: two namespaces, a target in another
// account with a service role and an external id, and one in another region of cairn's
// own account.
func sharedTargetApp(t *testing.T) *app {
	targetApp.once.Do(func() {
		targetApp.a = synthApp(t, map[string]interface{}{
			ctxNamespaces: []interface{}{"shop", "web"},
			ctxHome:       "123456789012:us-east-1",
			ctxTargets: []interface{}{
				map[string]interface{}{"account": "210987654321", "region": "eu-west-1", "serviceRole": "arn:aws:iam::210987654321:role/cairn-cfn", "externalId": "cairn-shop"},
				"123456789012:us-west-2",
			},
			ctxLambdaDir: lambdaDir(t, sharedDir),
		})
	})
	if targetApp.a == nil {
		t.Fatal("the targets synthesis failed in an earlier test")
	}
	return targetApp.a
}

// TestTargetStack checks the target stacks and what cairn's stack gains for them: least
// privilege (CloudFormation on the namespaces' stacks of the target only, iam:PassRole of
// the target's service role only, no wildcard actions), trust of cairn's deployer and drift
// roles only, the forwarding rule to cairn's bus, the regional ports topic and its export,
// and on cairn's side the bus policy, the subscriptions, assuming the deploy roles and the
// rules selecting the targets' stacks. cdk-nag finds nothing unsuppressed.
func TestTargetStack(t *testing.T) {
	a := sharedTargetApp(t)
	foreign := a.stacks["CairnTarget-210987654321-eu-west-1"]
	sameAccount := a.stacks["CairnTarget-123456789012-us-west-2"]
	cairn := a.stacks["Cairn"]
	if foreign == nil || sameAccount == nil || cairn == nil || len(a.stacks) != 3 {
		t.Fatalf("stacks = %v, want Cairn and one target stack per target", mapsKeys(a.stacks))
	}

	t.Run("cdk-nag AwsSolutions: no unsuppressed errors", func(t *testing.T) {
		for _, e := range a.nagErrors {
			t.Error(e)
		}
	})

	t.Run("cairn's stack deploys after the target stacks", func(t *testing.T) {
		deps := a.deps["Cairn"]
		slices.Sort(deps)
		if want := []string{"CairnTarget-123456789012-us-west-2", "CairnTarget-210987654321-eu-west-1"}; !slices.Equal(deps, want) {
			t.Errorf("Cairn depends on %v, want %v", deps, want)
		}
	})

	t.Run("deploy role: trusts cairn's deployer and drift roles, with the external id", func(t *testing.T) {
		assert(t, "trust", func() {
			foreign.tmpl.HasResourceProperties(jsii.String("AWS::IAM::Role"), map[string]interface{}{
				"RoleName": map[string]interface{}{"Fn::Join": []interface{}{"", []interface{}{"cairn-deploy-", map[string]interface{}{"Ref": "AWS::Region"}}}},
				"AssumeRolePolicyDocument": map[string]interface{}{"Statement": []interface{}{map[string]interface{}{
					"Action": "sts:AssumeRole", "Effect": "Allow",
					"Principal": map[string]interface{}{"AWS": map[string]interface{}{"Fn::Join": []interface{}{"", []interface{}{"arn:", map[string]interface{}{"Ref": "AWS::Partition"}, ":iam::123456789012:root"}}}},
					"Condition": map[string]interface{}{
						"ArnEquals": map[string]interface{}{"aws:PrincipalArn": []interface{}{
							map[string]interface{}{"Fn::Join": []interface{}{"", []interface{}{"arn:", map[string]interface{}{"Ref": "AWS::Partition"}, ":iam::123456789012:role/cairn-deployer-us-east-1"}}},
							map[string]interface{}{"Fn::Join": []interface{}{"", []interface{}{"arn:", map[string]interface{}{"Ref": "AWS::Partition"}, ":iam::123456789012:role/cairn-drift-us-east-1"}}},
						}},
						"StringEquals": map[string]interface{}{"sts:ExternalId": "cairn-shop"},
					},
				}}},
			})
		})
		for id, r := range sameAccount.ofType("AWS::IAM::Role") {
			if strings.HasPrefix(id, "DeployRole") && strings.Contains(fmt.Sprint(props(r)["AssumeRolePolicyDocument"]), "ExternalId") {
				t.Errorf("the same-account target's role requires an external id nobody configured")
			}
		}
	})

	t.Run("assets bucket: this account and region's, versioned, encrypted, unreferenced artifacts expire", func(t *testing.T) {
		assert(t, "assets bucket", func() {
			foreign.tmpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]interface{}{
				"BucketName":              map[string]interface{}{"Fn::Join": []interface{}{"", []interface{}{"cairn-assets-", map[string]interface{}{"Ref": "AWS::AccountId"}, "-", map[string]interface{}{"Ref": "AWS::Region"}}}},
				"VersioningConfiguration": map[string]interface{}{"Status": "Enabled"},
				"BucketEncryption": map[string]interface{}{"ServerSideEncryptionConfiguration": []interface{}{
					map[string]interface{}{"ServerSideEncryptionByDefault": map[string]interface{}{"SSEAlgorithm": "AES256"}}}},
				"PublicAccessBlockConfiguration": map[string]interface{}{"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true},
				"LifecycleConfiguration": map[string]interface{}{"Rules": assertions.Match_ArrayWith(&[]interface{}{map[string]interface{}{
					"Id": "expire-unreferenced-assets", "Prefix": "assets/", "ExpirationInDays": 365, "Status": "Enabled",
					"NoncurrentVersionExpiration": map[string]interface{}{"NoncurrentDays": 30}}})},
			})
		})
	})

	t.Run("deploy role: least privilege", func(t *testing.T) {
		for name, s := range map[string]*synthesized{"foreign": foreign, "same account": sameAccount} {
			var passRole, stackWrites, readStar, templates, assets, assetLists int
			assetsBucket := s.id(t, "AWS::S3::Bucket", "AssetsBucket")
			for _, st := range s.statements() {
				if s.resources[st.where]["Type"] != "AWS::IAM::Policy" || st.effect != "Allow" {
					continue
				}
				if !slices.Contains(flatList(props(s.resources[st.where])["Roles"]), "<"+s.id(t, "AWS::IAM::Role", "DeployRole")+">") {
					// The forwarding rule's role: it may put events on cairn's bus only.
					if !slices.Equal(st.actions, []string{"events:PutEvents"}) || !slices.Equal(st.resources, []string{"arn:<AWS::Partition>:events:us-east-1:123456789012:event-bus/default"}) {
						t.Errorf("%s: %s allows %v on %v, want only events:PutEvents on cairn's bus", name, st.where, st.actions, st.resources)
					}
					continue
				}
				for _, act := range st.actions {
					if strings.Contains(act, "*") {
						t.Errorf("%s: statement %s allows the wildcard action %s", name, st.sid, act)
					}
				}
				switch {
				case slices.Contains(st.actions, "iam:PassRole"):
					passRole++
					if name != "foreign" || !slices.Equal(st.resources, []string{"arn:aws:iam::210987654321:role/cairn-cfn"}) ||
						fmt.Sprint(st.condition["StringEquals"]) != "map[iam:PassedToService:cloudformation.amazonaws.com]" {
						t.Errorf("%s: PassRole %v %v: want only the target's service role, to CloudFormation", name, st.resources, st.condition)
					}
				case slices.Contains(st.actions, "cloudformation:ExecuteChangeSet"):
					stackWrites++
					want := []string{
						"arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/shop-*/*",
						"arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/web-*/*",
					}
					if !slices.Equal(st.resources, want) {
						t.Errorf("%s: stack actions on %v, want the namespaces' stacks of the target only", name, st.resources)
					}
				case slices.Equal(st.resources, []string{"*"}):
					readStar++
					for _, act := range st.actions {
						if !slices.Contains(ReadOnlyAccountActions, act) {
							t.Errorf("%s: %s allowed on *, but it is not a read-only account action", name, act)
						}
					}
				case slices.Equal(st.actions, []string{"s3:GetObject", "s3:PutObject"}):
					assets++
					if !slices.Equal(st.resources, []string{"<" + assetsBucket + ".Arn>/assets/*"}) {
						t.Errorf("%s: stores %v, want the target's assets bucket's assets/ only", name, st.resources)
					}
				case slices.Equal(st.actions, []string{"s3:ListBucket"}):
					assetLists++
					if !slices.Equal(st.resources, []string{"<" + assetsBucket + ".Arn>"}) {
						t.Errorf("%s: lists %v, want the target's assets bucket only", name, st.resources)
					}
				case slices.Equal(st.actions, []string{"s3:GetObject"}):
					templates++
					if !slices.Equal(st.resources, []string{"arn:<AWS::Partition>:s3:::cairn-123456789012-us-east-1/templates/*"}) {
						t.Errorf("%s: reads %v, want cairn's templates/ only", name, st.resources)
					}
				default:
					t.Errorf("%s: unexpected statement %s: %v on %v", name, st.sid, st.actions, st.resources)
				}
			}
			if stackWrites != 1 || readStar != 1 || templates != 1 || assets != 1 || assetLists != 1 || passRole != map[string]int{"foreign": 1, "same account": 0}[name] {
				t.Errorf("%s: %d stack, %d read, %d template, %d assets, %d assets list, %d PassRole statements", name, stackWrites, readStar, templates, assets, assetLists, passRole)
			}
		}
	})

	t.Run("events of the target's stacks go to cairn's bus", func(t *testing.T) {
		assert(t, "rule", func() {
			foreign.tmpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]interface{}{
				"EventPattern": map[string]interface{}{
					"source":      []interface{}{"aws.cloudformation"},
					"detail-type": []interface{}{stackStatusChange, driftStatusChange},
					"detail": map[string]interface{}{"stack-id": []interface{}{
						map[string]interface{}{"prefix": map[string]interface{}{"Fn::Join": []interface{}{"", []interface{}{"arn:", map[string]interface{}{"Ref": "AWS::Partition"}, ":cloudformation:", map[string]interface{}{"Ref": "AWS::Region"}, ":", map[string]interface{}{"Ref": "AWS::AccountId"}, ":stack/shop-"}}}},
						map[string]interface{}{"prefix": map[string]interface{}{"Fn::Join": []interface{}{"", []interface{}{"arn:", map[string]interface{}{"Ref": "AWS::Partition"}, ":cloudformation:", map[string]interface{}{"Ref": "AWS::Region"}, ":", map[string]interface{}{"Ref": "AWS::AccountId"}, ":stack/web-"}}}},
					}},
				},
				"Targets": []interface{}{assertions.Match_ObjectLike(&map[string]interface{}{
					"Arn": map[string]interface{}{"Fn::Join": []interface{}{"", []interface{}{"arn:", map[string]interface{}{"Ref": "AWS::Partition"}, ":events:us-east-1:123456789012:event-bus/default"}}},
				})},
			})
		})
	})

	t.Run("the regional ports topic and its export", func(t *testing.T) {
		assert(t, "topic", func() {
			foreign.tmpl.HasResourceProperties(jsii.String("AWS::SNS::Topic"), map[string]interface{}{"TopicName": target.PortsTopicName})
		})
		assert(t, "export", func() {
			foreign.tmpl.HasOutput(jsii.String("PortsServiceToken"), map[string]interface{}{"Export": map[string]interface{}{"Name": target.ExportPortsServiceToken}})
		})
		var subscribe, publish bool
		for _, st := range foreign.statements() {
			if foreign.resources[st.where]["Type"] != "AWS::SNS::TopicPolicy" || st.effect != "Allow" {
				continue
			}
			switch {
			case slices.Equal(st.actions, []string{"sns:Subscribe"}):
				subscribe = flat(st.raw["Principal"].(map[string]interface{})["AWS"]) == "arn:<AWS::Partition>:iam::123456789012:root" &&
					fmt.Sprint(st.condition["StringEquals"]) == "map[sns:Protocol:sqs]"
			case slices.Equal(st.actions, []string{"sns:Publish"}):
				publish = flat(st.raw["Principal"].(map[string]interface{})["Service"]) == "cloudformation.amazonaws.com" &&
					flat(st.condition["StringEquals"].(map[string]interface{})["aws:SourceAccount"]) == "<AWS::AccountId>"
			}
		}
		if !subscribe || !publish {
			t.Errorf("topic policy: cairn's account subscribes %v, CloudFormation of the account publishes %v", subscribe, publish)
		}
	})

	t.Run("cairn's stack: bus policy, subscriptions, assumed roles, rules", func(t *testing.T) {
		policies := cairn.ofType("AWS::Events::EventBusPolicy")
		if len(policies) != 1 || policies["TargetEvents210987654321"] == nil {
			t.Errorf("bus policies %v, want one admitting 210987654321 (its own account needs none)", mapsKeys(policies))
		}
		subs := map[string]string{}
		for id, r := range cairn.ofType("AWS::SNS::Subscription") {
			if strings.HasPrefix(id, "TargetPorts") {
				subs[flat(props(r)["TopicArn"])] = fmt.Sprint(props(r)["Region"])
			}
		}
		want := map[string]string{"arn:<AWS::Partition>:sns:eu-west-1:210987654321:cairn-ports": "eu-west-1", "arn:<AWS::Partition>:sns:us-west-2:123456789012:cairn-ports": "us-west-2"}
		if !reflect.DeepEqual(subs, want) {
			t.Errorf("ports subscriptions %v, want %v", subs, want)
		}
		roles := []string{"arn:<AWS::Partition>:iam::123456789012:role/cairn-deploy-us-west-2", "arn:<AWS::Partition>:iam::210987654321:role/cairn-deploy-eu-west-1"}
		for _, fn := range []string{"DeployerRole", "DriftRole"} {
			var assumes []string
			for _, st := range cairn.roleStatements(t, fn) {
				if slices.Contains(st.actions, "sts:AssumeRole") {
					assumes = append(assumes, st.resources...)
				}
			}
			if !slices.Equal(assumes, roles) {
				t.Errorf("%s assumes %v, want exactly %v", fn, assumes, roles)
			}
		}
		for _, id := range []string{cairn.id(t, "AWS::Events::Rule", "StackEvents"), cairn.id(t, "AWS::Events::Rule", "DriftEvents")} {
			p := props(cairn.resources[id])["EventPattern"].(map[string]interface{})
			if got := flatList(p["account"]); !slices.Equal(got, []string{"210987654321", "<AWS::AccountId>"}) {
				t.Errorf("%s accounts %v", id, got)
			}
			var prefixes []string
			for _, m := range list(p["detail"].(map[string]interface{})["stack-id"]) {
				prefixes = append(prefixes, flat(m.(map[string]interface{})["prefix"]))
			}
			slices.Sort(prefixes)
			want := []string{
				"arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/shop-", "arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/web-",
				"arn:<AWS::Partition>:cloudformation:eu-west-1:210987654321:stack/shop-", "arn:<AWS::Partition>:cloudformation:eu-west-1:210987654321:stack/web-",
				"arn:<AWS::Partition>:cloudformation:us-west-2:123456789012:stack/shop-", "arn:<AWS::Partition>:cloudformation:us-west-2:123456789012:stack/web-",
			}
			if !slices.Equal(prefixes, want) {
				t.Errorf("%s selects %v, want %v", id, prefixes, want)
			}
		}
		var templates []string
		for _, st := range cairn.statements() {
			if st.sid == "TargetTemplates" {
				templates = flatList(st.raw["Principal"].(map[string]interface{})["AWS"])
			}
		}
		if !slices.Equal(templates, []string{"arn:<AWS::Partition>:iam::210987654321:role/cairn-deploy-eu-west-1"}) {
			t.Errorf("the bucket lets %v read templates/, want the other account's deploy role", templates)
		}
	})
}

func mapsKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// canonical re-encodes JSON with sorted keys, so templates compare by content.
func canonical(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(v, "", " ")
	return string(out)
}

// TestLocalModeMatchesSynthesis: what `cairn local up --targets` deploys — cairn's template
// with the wiring of its targets, and the target stack's template — is exactly what the
// CDK synthesizes with that context, for one target and for several, so local and AWS
// wiring cannot diverge. It also keeps the golden target template (make synth rewrites it).
func TestLocalModeMatchesSynthesis(t *testing.T) {
	base, err := cdkJSONContext("cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		targets []target.Target
	}{
		{"one target in another account", []target.Target{{Account: "111111111111", Region: "eu-west-1"}}},
		{"targets in two accounts and another region of cairn's", []target.Target{
			{Account: "222222222222", Region: "ap-southeast-2"}, {Account: "000000000000", Region: "us-west-2"}, {Account: "111111111111", Region: "eu-west-1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := map[string]interface{}{}
			for k, v := range base {
				ctx[k] = v
			}
			var list []interface{}
			for _, tg := range tc.targets {
				list = append(list, tg.String())
			}
			ctx[ctxHome] = "000000000000:us-east-1"
			ctx[ctxTargets] = list
			ctx[ctxLambdaDir] = lambdaDir(t, sharedDir)
			a := synthApp(t, ctx)
			if len(tc.targets) == 1 {
				golden(t, targetGoldenPath, a.raw[TargetStackID(tc.targets[0])])
			}
			// Local mode told the namespaces of the context (cdk.json's), as `cairn local up
			// --namespaces` is; without them it allows every namespace.
			namespaces, err := stringList(base[ctxNamespaces])
			if err != nil {
				t.Fatal(err)
			}
			o := localcairn.Options{Targets: tc.targets, Home: target.Target{Account: "000000000000", Region: "us-east-1"}, Namespaces: namespaces}
			local, err := localcairn.Template(o)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := canonical(t, []byte(local)), canonical(t, a.raw["Cairn"]); got != want {
				t.Errorf("local mode's cairn template differs from the synthesis with targets:\n%s", firstDiff(got, want))
			}
			localTarget, err := localcairn.TargetTemplate(o)
			if err != nil {
				t.Fatal(err)
			}
			for _, tg := range tc.targets {
				if got, want := canonical(t, []byte(localTarget)), canonical(t, a.raw[TargetStackID(tg)]); got != want {
					t.Errorf("local mode's target template differs from the synthesis of %s:\n%s", tg, firstDiff(got, want))
				}
			}
		})
	}
}

const targetGoldenPath = "../internal/localcairn/target.template.json"

// golden compares a synthesized template with its golden file, or rewrites it (-update).
func golden(t *testing.T, path string, raw []byte) {
	t.Helper()
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	got, _ := json.MarshalIndent(doc, "", " ")
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", path, len(got))
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run `make synth` to write it", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the synthesized template differs from %s, which local mode deploys: run `make synth` and commit the result", path)
	}
}

// firstDiff shows the lines around the first difference of two texts.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) && i < len(w); i++ {
		if g[i] != w[i] {
			lo, hi := max(0, i-5), min(len(g), len(w), i+5)
			return fmt.Sprintf("line %d\nlocal:\n%s\nsynthesized:\n%s", i, strings.Join(g[lo:min(hi, len(g))], "\n"), strings.Join(w[lo:min(hi, len(w))], "\n"))
		}
	}
	return fmt.Sprintf("one is a prefix of the other (%d vs %d lines)", len(g), len(w))
}
