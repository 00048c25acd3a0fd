package awslocal_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/artifact"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/template"
)

// sharedTemplates is the folder of real-world templates beside the repository: the first
// shared/templates found walking up from the package's folder (beside a checkout, or
// beside the folder of a worktree's checkout), "" when there is none (a bare clone: the
// test deploys the repository's corpus only, and says so).
var sharedTemplates = func() string {
	dir, err := filepath.Abs(".")
	if err != nil {
		return ""
	}
	for {
		d := filepath.Join(dir, "shared", "templates")
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
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
	dirs := []string{repoCorpus}
	if sharedTemplates == "" {
		wd, _ := os.Getwd()
		t.Logf("no shared/templates folder above %s: only the repository's corpus (%s) is deployed", wd, repoCorpus)
	} else {
		dirs = append(dirs, filepath.Join(sharedTemplates, "aws-samples"), filepath.Join(sharedTemplates, "corpus"))
	}
	var files []string
	for _, dir := range dirs {
		for _, ext := range []string{"*.yaml", "*.yml", "*.json"} {
			m, _ := filepath.Glob(filepath.Join(dir, ext))
			files = append(files, m...)
		}
	}
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "parameters.json" })
	if len(files) == 0 {
		t.Skipf("no templates in %s nor a shared/templates folder", repoCorpus)
	}
	params := map[string]map[string]string{}
	var paramFiles []string
	if sharedTemplates != "" {
		paramFiles = append(paramFiles, filepath.Join(sharedTemplates, "corpus", "parameters.json"))
	}
	paramFiles = append(paramFiles, "cfnlocal/testdata/sample-parameters.json", filepath.Join(repoCorpus, "parameters.json"))
	for _, f := range paramFiles {
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
	if sharedTemplates == "" {
		return nil
	}
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

// caseBundle is a case as a user bundles it: the template under templates/ (the SAM
// harness's placeholders filled, as its harness fills them), stubs of the artifacts it
// names beside it, and a cairn.yaml naming it as the one stack.
type caseBundle struct {
	bundle  *bundle.Bundle
	tplPath string
	body    []byte
	parsed  *template.Template // nil when cairn cannot parse the template (validation says why)
}

func bundleCase(t *testing.T, c corpusCase) *caseBundle {
	t.Helper()
	body, err := os.ReadFile(c.file)
	if err != nil {
		t.Fatal(err)
	}
	body = fillHarnessPlaceholders(body)
	tplPath := "templates/" + filepath.Base(c.file)
	files := fstest.MapFS{}
	tpl, err := template.Parse(body)
	if err != nil {
		tpl = nil
	} else if files, err = artifactStubs(t, tplPath, tpl); err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	files[tplPath] = &fstest.MapFile{Data: body}
	st := map[string]any{"name": "s", "stack_name": c.stack, "template_path": tplPath, "parameters": c.params}
	if tpl != nil && tpl.HasNestedStacks() && len(tpl.NestedStacks()) == 0 {
		// cairn does not fetch nested stacks' templates from S3: their capabilities are named,
		// as its README says to
		st["capabilities"] = []string{"CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"}
	}
	cfg, err := yaml.Marshal(map[string]any{"stacks": []map[string]any{st}})
	if err != nil {
		t.Fatal(err)
	}
	return &caseBundle{bundle: &bundle.Bundle{ConfigFile: "cairn.yaml", Config: cfg, FS: files}, tplPath: tplPath, body: body, parsed: tpl}
}

// validateCase loads the bundle as `cairn validate` does, and returns the capabilities
// granted and the template as cairn's deployer packages it (nil when it names nothing to
// package), or the errors.
func validateCase(cb *caseBundle) ([]string, *template.Tree, error) {
	conf, err := config.Load(cb.bundle)
	if err != nil {
		return nil, nil, err
	}
	return conf.Stacks[0].Capabilities, conf.Stacks[0].Tree, nil
}

// corpusResult is how a shared template fared.
type corpusResult struct {
	validated bool
	verr      string   // every problem validation found, one a line
	blocked   []string // the runtimes of its functions AWS no longer creates functions with
	status    string
	reason    string
	stackID   string
}

// TestSharedTemplatesDeploy deploys every template of the shared folder and of the
// repository's corpus into the emulator as a one-stack bundle holding stubs of the local
// artifacts it names (validated as cairn validates it, packaged and created by a change set
// as cairn's deployer does), deletes what deployed, and reports how many validate and how
// many deploy. Parameter variants deploy in an emulator of their own (they make the same
// named resources as their template).
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
		// the shared folder: AWS fails these the same way
		"awscft-apigw-lambda":         "#/Code/ZipFile: expected type: String, found: JSONObject", // !Rain::Embed: needs rain pkg
		"awscft-elasticache-snapshot": "#/Code/ZipFile: expected type: String, found: JSONObject", // !Rain::Embed: needs rain pkg
		"awscft-macro-count-test":     "No transform named 000000000000::Count found.",            // the macro is not defined
		"awscft-neptune":              "No export named nepvpc-PrivateSubnet1 found.",             // its VPC stack is not in the corpus
		"awscft-simplead":             "Secrets Manager can't find the specified secret.",         // it reads a secret, simple-ad-pw, nothing makes
		"awscft-stacksets-common":     "Every Resources object must contain a Type member.",       // a rain module: needs rain pkg

		// the repository's corpus: AWS fails these the same way
		"sfn-thumbnail":       "Unrecognized resource types: [AWS-Events]", // a typo of the template (Type: AWS-Events)
		"ss-kinesis-consumer": "No export named DasKmsKeyArn found.",       // its key stack is not in the corpus
		// List<String> is no parameter type CloudFormation documents: the emulator refuses
		// it, where cairn validate accepts it as a CommaDelimitedList, as cfn-lint does
		// (issue 32); AWS refuses the template anyway, for its runtime (nodejs14.x)
		"ss-private-api": "Unrecognized parameter type: List<String>",
		// emulator gaps, which AWS would fail too, but elsewhere: the SAM integration
		// templates' functions use nodejs18.x, whose creation AWS blocks since 2026-06-01
		// (cairn validate says so; the emulator does not check runtimes' lifecycle), and
		// their broker and cluster ARNs are parameters the harness fills with brokers it
		// made, here stand-in strings Lambda would refuse as ARNs.
		"samint-function-msk":   "the emulator maps SQS queues and (recorded, never invoked) DynamoDB and Kinesis streams only", // Amazon MSK is not emulated
		"samint-function-mq":    "the emulator maps SQS queues and (recorded, never invoked) DynamoDB and Kinesis streams only", // Amazon MQ is not emulated
		"samint-function-kafka": "self-managed Apache Kafka",                                                                    // a cluster outside AWS, which nothing local runs
		// the emulator's Serverless transform does not expand a function's
		// DeploymentPreference (gradual deployments through CodeDeploy, and the
		// ServerlessDeploymentApplication its hooks' policies name), and says so. AWS
		// would refuse the template too, for its runtime (nodejs16.x, creation blocked).
		"sws-safe-deploy": "DeploymentPreference (a gradual deployment through CodeDeploy, and the ServerlessDeploymentApplication it makes) is not supported by the local emulator's Serverless translator",
	}
	// What cairn validate refuses, besides the functions whose runtime AWS no longer creates
	// functions with (blockedRuntimes: computed for the day the test runs, as validation
	// does; those templates deploy in the emulator, which does not check runtimes'
	// lifecycle, where AWS refuses them).
	notValid := map[string]string{
		"awscft-stacksets-common":     "the Type of resource Storage must be a type name", // !Rain::Module: needs rain pkg
		"awscft-apigw-lambda":         "Rain::Embed is a directive of rain's packager",
		"awscft-elasticache-snapshot": "Rain::Embed is a directive of rain's packager",
		"sfn-thumbnail":               `unknown resource type "AWS-Events"`,
		// placeholders the sample asks its user to replace by their layers' ARNs: Lambda
		// refuses them (the emulator does not check layer ARNs)
		"sws-layers-app": `"<NodeBaseLayer>" does not match the pattern`,
		// its queue policy's Resource is the string "FulfillmentQ.Arn" (a !GetAtt left
		// out), no ARN: cfn-lint refuses it too (E3510)
		"ss-owasp-fulfillment": `Resource "FulfillmentQ.Arn" is neither "*" nor an ARN`,
	}
	// What cairn validate passes though its functions' runtimes are blocked, because it
	// does not check them there: a template with an AWS::Include is checked for its
	// structure only (the snippet is known once included), and a Serverless template
	// cairn's transform does not expand is checked unexpanded, without its functions'
	// runtimes. AWS refuses these.
	unchecked := map[string]string{
		"sfn-synchronous-api": "AWS::Include of api.yaml",
		"sws-http-api-direct": "AWS::Include of ./api.yaml",
		"sws-safe-deploy":     "a function's DeploymentPreference, which cairn's transform does not expand",
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
			lines := strings.Split(r.verr, "\n")
			report.WriteString("    validate: " + lines[0])
			if len(lines) > 1 {
				fmt.Fprintf(&report, " (and %d more)", len(lines)-1)
			}
			report.WriteString("\n")
		}
		if r.status != "CREATE_COMPLETE" {
			report.WriteString("    deploy: " + r.reason + "\n")
		}
		checkValidation(t, c.name, r, notValid, unchecked)
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

// checkValidation checks how the case validated: refused for the reason notValid gives;
// else, when its functions use runtimes AWS no longer creates functions with and their
// check is not known to be skipped (unchecked), refused for each of them and for nothing
// else; else valid.
func checkValidation(t *testing.T, name string, r *corpusResult, notValid, unchecked map[string]string) {
	t.Helper()
	want, listed := notValid[name]
	_, skipped := unchecked[name]
	switch {
	case skipped:
		// valid whatever the day; the entry matters on the days AWS blocks its runtimes
		if !r.validated {
			t.Errorf("%s: refused (%s), runtimes AWS blocks %v: take it off the templates whose runtimes go unchecked", name, r.verr, r.blocked)
		}
	case listed:
		if r.validated || !strings.Contains(r.verr, want) {
			t.Errorf("%s: validated %v (%s), want refused: %s", name, r.validated, r.verr, want)
		}
	case len(r.blocked) > 0:
		if r.validated {
			t.Errorf("%s validates, want its runtimes %v refused", name, r.blocked)
			return
		}
		for _, rt := range r.blocked {
			if !strings.Contains(r.verr, "Lambda runtime "+rt+" is deprecated: AWS blocked creating functions with it") {
				t.Errorf("%s: runtime %s is not refused: %s", name, rt, r.verr)
			}
		}
		for _, line := range strings.Split(r.verr, "\n") {
			if !strings.Contains(line, "is deprecated: AWS blocked creating functions with it") {
				t.Errorf("%s: refused for %s, want only its runtimes %v refused", name, line, r.blocked)
			}
		}
	case !r.validated:
		t.Errorf("%s: %s, want it valid", name, r.verr)
	}
}

// blockedRuntimes are the Lambda runtimes the template's functions use (of
// AWS::Lambda::Function, of Serverless functions and their Globals) that AWS no longer
// creates functions with, today.
func blockedRuntimes(tpl *template.Template) []string {
	var m map[string]any
	if tpl == nil || tpl.Node.Decode(&m) != nil {
		return nil
	}
	var out []string
	add := func(props any) {
		p, _ := props.(map[string]any)
		rt, _ := p["Runtime"].(string)
		if _, warning, ok := template.RuntimeProblem(rt, template.Today()); ok && !warning && !slices.Contains(out, rt) {
			out = append(out, rt)
		}
	}
	resources, _ := m["Resources"].(map[string]any)
	for _, r := range resources {
		if r, _ := r.(map[string]any); r["Type"] == "AWS::Lambda::Function" || r["Type"] == "AWS::Serverless::Function" {
			add(r["Properties"])
		}
	}
	globals, _ := m["Globals"].(map[string]any)
	add(globals["Function"])
	slices.Sort(out)
	return out
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
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(samHarnessBucket)}); err != nil {
		t.Fatal(err)
	}
	for key, body := range harnessObjects(t) {
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(samHarnessBucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
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
			cb := bundleCase(t, c)
			caps, tree, err := validateCase(cb)
			r.validated, r.blocked = err == nil, blockedRuntimes(cb.parsed)
			if err != nil {
				// what cairn refuses is deployed all the same, to see whether AWS (the
				// emulator) refuses it too
				r.verr = err.Error()
				caps = []string{"CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"}
				if cb.parsed != nil && len(cb.parsed.Artifacts()) > 0 {
					tree = &template.Tree{Template: cb.parsed, Path: cb.tplPath, Assets: artifact.NewSet(cb.bundle.FS)}
				}
			}
			body := cb.body
			if tree != nil {
				body = packaged(ctx, t, s3c, c.name, tree)
			}
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

// packaged is the template as cairn's deployer sends it (changeset's packageTree): its
// artifacts built from the bundle and stored at their content addresses in the emulator's
// S3, the template naming them there.
func packaged(ctx context.Context, t *testing.T, s3c *s3.Client, name string, tree *template.Tree) []byte {
	t.Helper()
	p, err := tree.Package(func(sha string) string {
		return "https://" + samHarnessBucket + ".s3.us-east-1.amazonaws.com/" + bucket.TemplateKey(sha)
	}, samHarnessBucket)
	if err != nil {
		t.Fatalf("%s: package: %v", name, err)
	}
	for _, a := range p.Assets {
		o, err := tree.Assets.Build(a.Source, a.Digest)
		if err != nil {
			t.Fatalf("%s: build %s: %v", name, a.Source.Path, err)
		}
		body, err := o.Body()
		if err == nil {
			_, err = s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(samHarnessBucket), Key: aws.String(a.Key), Body: body, ContentLength: aws.Int64(o.Size)})
		}
		o.Close()
		if err != nil {
			t.Fatalf("%s: store %s: %v", name, a.Source.Path, err)
		}
	}
	for _, u := range p.Templates {
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(samHarnessBucket), Key: aws.String(bucket.TemplateKey(u.SHA256)), Body: bytes.NewReader(u.Body)}); err != nil {
			t.Fatal(err)
		}
	}
	return p.Body
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
