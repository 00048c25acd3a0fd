package awslocal_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/aws-cloudformation/rain/cft/parse"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/sam"
	"github.com/cairn-dev/cairn/internal/template"
)

// sharedTemplates is the folder of real-world templates beside the repository (or beside
// the folder of a worktree's checkout, one level up).
var sharedTemplates = func() string {
	for _, d := range []string{"../../../shared/templates", "../../../../shared/templates"} {
		if _, err := os.Stat(d); err == nil {
			return d
		}
	}
	return "../../../shared/templates"
}()

// repoCorpus is the repository's own corpus of public templates (its README says where
// each comes from): Serverless applications and plain templates, kept where their licence
// allows.
const repoCorpus = "../../testdata/corpus"

// corpusCase is one template of the shared folder deployed as a one-stack bundle.
type corpusCase struct {
	file   string // path of the template
	name   string // its name: the file's without extension
	stack  string // the stack name
	params map[string]string
	// variant: a second set of parameters of a template, not counted as a template
	variant bool
	// repo: a template of the repository's corpus (not of the shared folder)
	repo bool
}

// corpusCases lists the shared templates (the AWS samples and the corpus) with the values
// their parameters without a default get: the corpus's parameters.json, keyed by file name
// without extension, and the samples' own fixture.
func corpusCases(t *testing.T) []corpusCase {
	t.Helper()
	var files []string
	for _, dir := range []string{filepath.Join(sharedTemplates, "aws-samples"), filepath.Join(sharedTemplates, "corpus"), repoCorpus} {
		for _, ext := range []string{"*.yaml", "*.yml", "*.json"} {
			m, _ := filepath.Glob(filepath.Join(dir, ext))
			files = append(files, m...)
		}
	}
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "parameters.json" })
	if len(files) == 0 {
		t.Skipf("no templates in %s nor %s", sharedTemplates, repoCorpus)
	}
	params := map[string]map[string]string{}
	for _, f := range []string{filepath.Join(sharedTemplates, "corpus", "parameters.json"), "cfnlocal/testdata/sample-parameters.json",
		filepath.Join(repoCorpus, "parameters.json")} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var m map[string]map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for k, v := range m {
			params[strings.TrimSuffix(k, filepath.Ext(k))] = v
		}
	}
	var out []corpusCase
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		stack := "h-" + strings.ReplaceAll(strings.ReplaceAll(name, "_", "-"), ".", "-")
		p := params[name]
		if p == nil {
			p = map[string]string{}
		}
		if err := fillParameters(f, p); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, corpusCase{file: f, name: name, stack: stack, params: p, repo: strings.HasPrefix(f, repoCorpus)})
	}
	// parameters.json may give a template a second set of values, keyed FILE-VARIANT: each
	// is deployed too, as a stack of its own.
	byName := map[string]corpusCase{}
	for _, c := range out {
		byName[c.name] = c
	}
	for key, p := range params {
		if _, ok := byName[key]; ok {
			continue
		}
		for name, c := range byName {
			if variant, ok := strings.CutPrefix(key, name+"-"); ok {
				vp := map[string]string{}
				for k, v := range p {
					vp[k] = v
				}
				if err := fillParameters(c.file, vp); err != nil {
					t.Fatal(err)
				}
				out = append(out, corpusCase{file: c.file, name: name + " (" + variant + ")", stack: c.stack + "-" + variant, params: vp, variant: true, repo: c.repo})
			}
		}
	}
	// The ECS sample service imports its cluster's exports through its StackName parameter.
	for i := range out {
		if out[i].name == "ECS_FargateLaunchType_services_public-service" {
			out[i].params["StackName"] = "h-ECS-FargateLaunchType-clusters-public-vpc"
		}
	}
	slices.SortFunc(out, func(a, b corpusCase) int { return strings.Compare(a.name, b.name) })
	return out
}

// fillParameters gives parameters that have neither a default nor a value a plausible one
// of their type, as a user deploying the template would: a key pair, VPC, subnet or
// security group of the account, an image, zones; strings a value their constraints accept.
func fillParameters(file string, given map[string]string) error {
	body, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	tpl, err := template.Parse(body)
	if err != nil {
		return nil // the test reports it
	}
	byType := map[string]string{
		"AWS::EC2::KeyPair::KeyName":             "cairn-key",
		"AWS::EC2::VPC::Id":                      "vpc-0a1b2c3d4e5f60718",
		"AWS::EC2::Subnet::Id":                   "subnet-0a1b2c3d4e5f60718",
		"AWS::EC2::SecurityGroup::Id":            "sg-0a1b2c3d4e5f60718",
		"AWS::EC2::Image::Id":                    "ami-0a1b2c3d4e5f60718",
		"AWS::EC2::AvailabilityZone::Name":       "us-east-1a",
		"List<AWS::EC2::Subnet::Id>":             "subnet-0a1b2c3d4e5f60718,subnet-0a1b2c3d4e5f60719",
		"List<AWS::EC2::SecurityGroup::Id>":      "sg-0a1b2c3d4e5f60718",
		"List<AWS::EC2::AvailabilityZone::Name>": "us-east-1a,us-east-1b",
	}
	for name, p := range tpl.Parameters {
		if _, ok := given[name]; ok || p.HasDefault {
			continue
		}
		candidates := []string{byType[p.Type]}
		if len(p.AllowedValues) > 0 {
			candidates = append(candidates, p.AllowedValues[0])
		}
		lower := strings.ToLower(name)
		switch {
		case strings.Contains(lower, "mail"):
			candidates = append(candidates, "ops@example.com")
		case strings.Contains(lower, "cidr"):
			candidates = append(candidates, "10.0.0.0/16")
		case strings.HasSuffix(lower, "ip"):
			candidates = append(candidates, "10.0.0.10")
		}
		candidates = append(candidates, "cairn"+strings.ToLower(strings.Map(keepAlnum, name)), "1")
		for _, v := range candidates {
			if v != "" && p.CheckValue(v) == nil {
				given[name] = v
				break
			}
		}
	}
	return nil
}

func keepAlnum(r rune) rune {
	if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
		return r
	}
	return -1
}

// corpusSources maps each corpus file to the path it has in its source repository
// (MANIFEST.tsv), so nested stacks find their children where their parents look.
func corpusSources(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(sharedTemplates, "corpus", "MANIFEST.tsv"))
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) >= 3 && !strings.HasPrefix(cols[0], "#") {
			out[cols[0]] = cols[2]
		}
	}
	return out
}

// validateCase loads the template as a one-stack bundle, as `cairn validate` does, and
// returns the capabilities granted or the errors.
func validateCase(c corpusCase) ([]string, error) {
	body, err := os.ReadFile(c.file)
	if err != nil {
		return nil, err
	}
	tpl := "templates/" + filepath.Base(c.file)
	st := map[string]any{"name": "s", "stack_name": c.stack, "template_path": tpl, "parameters": c.params}
	if t, err := template.Parse(body); err == nil && t.HasNestedStacks() && len(t.NestedStacks()) == 0 {
		// cairn does not fetch nested stacks' templates from S3: their capabilities are named,
		// as its README says to
		st["capabilities"] = []string{"CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"}
	}
	cfg, err := yaml.Marshal(map[string]any{"stacks": []map[string]any{st}})
	if err != nil {
		return nil, err
	}
	b := &bundle.Bundle{ConfigFile: "cairn.yaml", Config: cfg, FS: fstest.MapFS{tpl: {Data: body}}}
	conf, err := config.Load(b)
	if err != nil {
		return nil, err
	}
	return conf.Stacks[0].Capabilities, nil
}

// corpusResult is how a shared template fared.
type corpusResult struct {
	validated bool
	verr      string
	status    string
	reason    string
	stackID   string
}

// TestSharedTemplatesDeploy deploys every template of the shared folder into the emulator
// as a one-stack bundle (validated as cairn validates it, then created by a change set as
// cairn's deployer creates it), deletes what deployed, and reports how many validate and
// how many deploy. Parameter variants deploy in an emulator of their own (they make the
// same named resources as their template).
func TestSharedTemplatesDeploy(t *testing.T) {
	all := corpusCases(t)
	var cases, variants []corpusCase
	for _, c := range all {
		if c.variant {
			variants = append(variants, c)
		} else {
			cases = append(cases, c)
		}
	}
	results, deleted := deployCases(t, cases)
	vresults, vdeleted := deployCases(t, variants)
	for k, v := range vresults {
		results[k] = v
	}
	deleted += vdeleted

	// What does not deploy, and why: each for a reason AWS would fail it for too, or a
	// limit of the emulator named here. A template listed that deploys fails the test, so
	// the list stays true.
	expected := map[string]string{
		"awscft-apigw-lambda":         "#/Code/ZipFile: expected type: String, found: JSONObject", // !Rain::Embed: needs rain pkg
		"awscft-elasticache-snapshot": "#/Code/ZipFile: expected type: String, found: JSONObject", // !Rain::Embed: needs rain pkg
		"awscft-macro-count-test":     "No transform named 000000000000::Count found.",            // the macro is not defined
		"awscft-neptune":              "No export named nepvpc-PrivateSubnet1 found.",             // its VPC stack is not in the corpus
		"awscft-simplead":             "Secrets Manager can't find the specified secret.",         // it reads a secret, simple-ad-pw, nothing makes
		"awscft-stacksets-common":     "Every Resources object must contain a Type member.",       // a rain module: needs rain pkg

		// the repository's corpus: AWS fails these the same way
		"sfn-thumbnail":       "Unrecognized resource types: [AWS-Events]",           // a typo of the template (Type: AWS-Events)
		"ss-kinesis-consumer": "No export named DasKmsKeyArn found.",                 // its key stack is not in the corpus
		"ss-private-api":      "Unrecognized parameter type: List<String>",           // and nodejs14.x, whose creation AWS disabled
		"ss-fraud-detection":  "Only one of 'InlineCode' or 'CodeUri' can be set.",   // no CodeUri: sam build's default, not the transform's
		"sws-safe-deploy":     "Only one of 'InlineCode' or 'CodeUri' can be set.",   // the same
		"sws-http-api-direct": "TemplateURL must be a supported URL: \"./api.yaml\"", // AWS::Include of a local file: needs packaging
		"sfn-synchronous-api": "TemplateURL must be a supported URL: \"api.yaml\"",   // the same
		// emulator gaps (the service of the event source or bus is not emulated)
		"samint-function-msk":   "the emulator maps SQS queues only", // MSK event source mapping
		"samint-function-mq":    "the emulator maps SQS queues only", // Amazon MQ event source mapping
		"samint-function-kafka": "the emulator maps SQS queues only", // self-managed Kafka event source mapping
		"samint-alias-events":   "the emulator maps SQS queues only", // a DynamoDB stream's event source mapping
		"sfn-checkout":          "the emulator serves the default event bus only",
		"sfn-webhook-provider":  "the emulator serves the default event bus only",
		"ss-apigw-eventbridge":  "the emulator serves the default event bus only",
		"sws-eventbridge":       "the emulator serves the default event bus only",
	}
	notValid := map[string]string{
		"awscft-stacksets-common":     "the Type of resource Storage must be a type name", // !Rain::Module: needs rain pkg
		"awscft-apigw-lambda":         "Rain::Embed is a directive of rain's packager",
		"awscft-elasticache-snapshot": "Rain::Embed is a directive of rain's packager",
		"awscft-config":               "Lambda runtime nodejs20.x is deprecated: AWS blocked creating functions with it", // since 2026-06-01
		"awscft-iot-topicrule":        "Lambda runtime nodejs20.x is deprecated: AWS blocked creating functions with it",
		"awscft-s3-lambda-trigger":    "Lambda runtime python3.9 is deprecated: AWS blocked creating functions with it",
		"sfn-thumbnail":               `unknown resource type "AWS-Events"`,
		"ss-private-api":              `unknown parameter type "List<String>"`,
		"ss-fraud-detection":          "the Serverless transform refuses it: Only one of 'InlineCode' or 'CodeUri' can be set.",
		"sws-safe-deploy":             "the Serverless transform refuses it: Only one of 'InlineCode' or 'CodeUri' can be set.",
		"sfn-synchronous-api":         `Ref names nothing: " RESTApiforSyncWF"`, // ${ X } with spaces: CloudFormation accepts it (issue 32's false positive)
	}

	// figures per corpus: the shared folder's, and the repository's
	var templates, validated, deployed [2]int
	var report strings.Builder
	for _, c := range all {
		r := results[c.name]
		if !c.variant {
			i := 0
			if c.repo {
				i = 1
			}
			templates[i]++
			if r.validated {
				validated[i]++
			}
			if r.status == "CREATE_COMPLETE" {
				deployed[i]++
			}
		}
		fmt.Fprintf(&report, "%-52s validate %-5v %s\n", c.name, r.validated, r.status)
		if r.verr != "" {
			report.WriteString("    validate: " + r.verr + "\n")
		}
		if r.status != "CREATE_COMPLETE" {
			report.WriteString("    deploy: " + r.reason + "\n")
		}
		if want, ok := notValid[c.name]; ok != !r.validated || ok && !strings.Contains(r.verr, want) {
			t.Errorf("%s: validated %v (%s), want %v (%s)", c.name, r.validated, r.verr, !ok, want)
		}
		switch want, ok := expected[c.name]; {
		case !ok && r.status != "CREATE_COMPLETE":
			t.Errorf("%s: %s (%s), want CREATE_COMPLETE", c.name, r.status, r.reason)
		case ok && r.status == "CREATE_COMPLETE":
			t.Errorf("%s deploys now: take it off the expected failures", c.name)
		case ok && !strings.Contains(r.reason, want):
			t.Errorf("%s: %s (%s), want a failure with %q", c.name, r.status, r.reason, want)
		}
	}

	t.Logf("shared templates: %d (aws-samples and corpus), %d validate, %d deploy; repository corpus (testdata/corpus): %d, %d validate, %d deploy (and %d parameter variants); %d stacks deleted\n%s",
		templates[0], validated[0], deployed[0], templates[1], validated[1], deployed[1], len(variants), deleted, report.String())
}

// deployCases deploys the cases into a new emulator, those whose parameters name another
// case's stack after it, then deletes what deployed; it returns the results by case name
// and how many stacks were deleted.
func deployCases(t *testing.T, cases []corpusCase) (map[string]*corpusResult, int) {
	t.Helper()
	results := map[string]*corpusResult{}
	if len(cases) == 0 {
		return results, 0
	}
	e, err := awslocal.New(awslocal.Options{CloudFormation: awslocal.CloudFormationTimings{
		ResourceDelay: time.Microsecond, ChangeSetDelay: time.Microsecond, CustomResourceTimeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cf := cloudformation.NewFromConfig(cfg)
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	// Templates that parents name by S3 URL are where the parents look: the artifacts
	// bucket the corpus's parameters name, under templates/ and the file's own name.
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("htpl-artifacts")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("cairn-packaged")}); err != nil {
		t.Fatal(err)
	}
	// the Lambda-backed custom resource of widdix-memcached picks zones; the stand-in that
	// answers it locally (its inline code is not run) answers what the function would
	standIn := `{"logicalId": "PreferredAvailabilityZonesSelector", "data": {"PreferredAvailabilityZones": "us-east-1a,us-east-1b"}}`
	if resp, err := http.Post(e.URL()+"/_local/cloudformation/custom-resources", "application/json", strings.NewReader(standIn)); err != nil || resp.StatusCode != 200 {
		t.Fatalf("stand-in answer: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	for file, src := range corpusSources(t) {
		b, err := os.ReadFile(filepath.Join(sharedTemplates, "corpus", file))
		if err != nil {
			continue
		}
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("htpl-artifacts"), Key: aws.String("templates/" + path.Base(src)), Body: strings.NewReader(string(b))}); err != nil {
			t.Fatal(err)
		}
	}

	byStack := map[string]bool{}
	for _, c := range cases {
		byStack[c.stack] = true
	}
	// A stack whose parameters name another case's stack deploys in a wave after it.
	level := map[string]int{}
	for range cases {
		for _, c := range cases {
			for _, v := range c.params {
				if byStack[v] && v != c.stack && level[c.stack] <= level[v] {
					level[c.stack] = level[v] + 1
				}
			}
		}
	}
	var waves [][]corpusCase
	for _, c := range cases {
		for len(waves) <= level[c.stack] {
			waves = append(waves, nil)
		}
		waves[level[c.stack]] = append(waves[level[c.stack]], c)
	}
	for _, wave := range waves {
		for _, c := range wave {
			r := &corpusResult{}
			results[c.name] = r
			caps, err := validateCase(c)
			r.validated = err == nil
			if err != nil {
				r.verr = firstLine(err.Error())
				caps = []string{"CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"}
			}
			body, err := os.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			body = packaged(ctx, t, s3c, body)
			in := &cloudformation.CreateChangeSetInput{StackName: aws.String(c.stack), ChangeSetName: aws.String("cairn-1"),
				ChangeSetType: cfntypes.ChangeSetTypeCreate, TemplateBody: aws.String(string(body))}
			for _, k := range slices.Sorted(maps.Keys(c.params)) {
				in.Parameters = append(in.Parameters, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(c.params[k])})
			}
			for _, cp := range caps {
				in.Capabilities = append(in.Capabilities, cfntypes.Capability(cp))
			}
			if _, err := cf.CreateChangeSet(ctx, in); err != nil {
				r.status, r.reason = "NO_STACK", firstLine(err.Error())
				continue
			}
		}
		for _, c := range wave {
			r := results[c.name]
			if r.status != "" {
				continue
			}
			cs := waitChangeSet(t, cf, c.stack)
			if cs.Status != cfntypes.ChangeSetStatusCreateComplete {
				r.status, r.reason = "NO_STACK", "change set "+string(cs.Status)+": "+aws.ToString(cs.StatusReason)
				continue
			}
			if _, err := cf.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{ChangeSetName: cs.ChangeSetId}); err != nil {
				r.status, r.reason = "NO_STACK", firstLine(err.Error())
			}
		}
		for _, c := range wave {
			r := results[c.name]
			if r.status != "" {
				continue
			}
			st := settleStack(t, cf, c.stack)
			r.status, r.reason, r.stackID = string(st.StackStatus), aws.ToString(st.StackStatusReason), aws.ToString(st.StackId)
			uniqueEventIDs(ctx, t, cf, c.stack)
			if st.StackStatus != cfntypes.StackStatusCreateComplete {
				r.reason = firstFailure(ctx, cf, c.stack, r.reason)
			}
		}
	}

	// what deployed deletes, dependents first
	deleted := 0
	for i := len(waves) - 1; i >= 0; i-- {
		for _, c := range waves[i] {
			if results[c.name].status != "CREATE_COMPLETE" {
				continue
			}
			if _, err := cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(c.stack)}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range waves[i] {
			if results[c.name].status != "CREATE_COMPLETE" {
				continue
			}
			id := results[c.name].stackID
			if st := settleStack(t, cf, id); st.StackStatus == cfntypes.StackStatusDeleteComplete {
				deleted++
			} else {
				t.Errorf("%s: delete ended %s (%s)", c.name, st.StackStatus, firstFailure(ctx, cf, id, aws.ToString(st.StackStatusReason)))
			}
		}
	}
	return results, deleted
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func waitChangeSet(t *testing.T, cf *cloudformation.Client, stack string) *cloudformation.DescribeChangeSetOutput {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		out, err := cf.DescribeChangeSet(context.Background(), &cloudformation.DescribeChangeSetInput{StackName: aws.String(stack), ChangeSetName: aws.String("cairn-1")})
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != cfntypes.ChangeSetStatusCreateInProgress && out.Status != cfntypes.ChangeSetStatusCreatePending || time.Now().After(deadline) {
			return out
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func settleStack(t *testing.T, cf *cloudformation.Client, stack string) cfntypes.Stack {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		out, err := cf.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
		if err != nil {
			t.Fatal(err)
		}
		st := out.Stacks[0]
		if !strings.HasSuffix(string(st.StackStatus), "_IN_PROGRESS") || time.Now().After(deadline) {
			return st
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// firstFailure is the reason of the stack's first failed resource, as cairn reports it.
func firstFailure(ctx context.Context, cf *cloudformation.Client, stack, fallback string) string {
	out, err := cf.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(stack)})
	if err != nil {
		return fallback
	}
	for i := len(out.StackEvents) - 1; i >= 0; i-- {
		ev := out.StackEvents[i]
		if strings.HasSuffix(string(ev.ResourceStatus), "_FAILED") && aws.ToString(ev.LogicalResourceId) != stack {
			return aws.ToString(ev.LogicalResourceId) + ": " + aws.ToString(ev.ResourceStatusReason)
		}
	}
	for i := len(out.StackEvents) - 1; i >= 0; i-- {
		if ev := out.StackEvents[i]; ev.ResourceStatus == cfntypes.ResourceStatus("ROLLBACK_IN_PROGRESS") {
			return aws.ToString(ev.ResourceStatusReason)
		}
	}
	return fallback
}

// packaged is a Serverless template as packaging leaves it: its local artifacts' paths
// become S3 locations (an object of the emulator's S3 each, as uploaded), so the transform
// reads them as AWS's does. Other templates are left as they are.
func packaged(ctx context.Context, t *testing.T, s3c *s3.Client, body []byte) []byte {
	if !strings.Contains(string(body), "AWS::Serverless-2016-10-31") {
		return body
	}
	tpl, err := parse.String(string(body))
	if err != nil {
		return body
	}
	m := tpl.Map()
	sam.AssumePackaged(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, uri := range regexp.MustCompile(`s3://cairn-packaged/[^"]+`).FindAllString(string(out), -1) {
		key := strings.TrimPrefix(uri, "s3://cairn-packaged/")
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cairn-packaged"), Key: aws.String(key), Body: strings.NewReader("artifact")}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// uniqueEventIDs fails the test when two of a stack's events share an EventId (a follower
// de-duplicating by id would drop one).
func uniqueEventIDs(ctx context.Context, t *testing.T, cf *cloudformation.Client, stack string) {
	t.Helper()
	seen := map[string]bool{}
	p := cloudformation.NewDescribeStackEventsPaginator(cf, &cloudformation.DescribeStackEventsInput{StackName: aws.String(stack)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range out.StackEvents {
			if id := aws.ToString(ev.EventId); seen[id] {
				t.Errorf("%s: EventId %s twice", stack, id)
			} else {
				seen[id] = true
			}
		}
	}
}
