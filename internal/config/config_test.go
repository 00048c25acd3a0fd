package config

import (
	"archive/zip"
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/bundle"
)

const bundles = "../../testdata/bundles"

// runtimeDay is the day the tests judge Lambda runtimes on (LoadOptions.Today) where the
// runtime is not what they test, so a fixture's runtime does not expire with the calendar.
const runtimeDay = "2026-12-01"

// load loads the bundle in dir, its runtimes judged on runtimeDay unless o says a day.
func load(t testing.TB, dir string, o LoadOptions) *Config {
	t.Helper()
	b, err := bundle.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.Today == "" {
		o.Today = runtimeDay
	}
	c, err := o.Load(b)
	if err != nil {
		t.Fatalf("Load(%s):\n%v", dir, err)
	}
	return c
}

func TestLoadWebshop(t *testing.T) {
	c := load(t, filepath.Join(bundles, "webshop"), LoadOptions{Deployment: "webshop-prod"})
	if c.Namespace != "shop" || c.NamespaceDelimiter != "-" || c.PersistentGraphKey != "webshop-prod" ||
		c.MaxConcurrency != 4 || c.DeletionPolicy.MaxDeletions != 1 {
		t.Errorf("config = %+v", c)
	}
	if !c.Drift.Enabled || !slices.Equal(c.Drift.Ignore, []string{"edge"}) {
		t.Errorf("drift = %+v", c.Drift)
	}
	var names, stackNames []string
	for _, s := range c.Stacks {
		names = append(names, s.Name)
		stackNames = append(stackNames, s.StackName)
	}
	if !slices.Equal(names, []string{"network", "database", "cache", "service", "edge"}) {
		t.Errorf("names = %v", names)
	}
	if !slices.Equal(stackNames, []string{"shop-network", "shop-database", "shop-cache", "shop-service", "shop-edge"}) {
		t.Errorf("stack names = %v", stackNames)
	}
	db := c.Stack("database")
	if !db.TerminationProtection || !db.Protected || !db.Enabled || db.Locked || db.Template == nil || db.TemplatePath != "templates/database.yaml" {
		t.Errorf("database = %+v", db)
	}
	svc := c.Stack("service")
	if !slices.Equal(svc.Capabilities, []string{"CAPABILITY_IAM"}) {
		t.Errorf("capabilities = %v", svc.Capabilities)
	}
	if want := map[string]string{"team": "web", "cost-center": "4711", "service": "shop"}; !maps.Equal(svc.Tags, want) {
		t.Errorf("service tags = %v, want %v", svc.Tags, want)
	}
	if svc.Parameters["DatabaseEndpoint"] != "${output database::Endpoint}" || svc.Parameters["Image"] != "public.ecr.aws/nginx/nginx:1.27" {
		t.Errorf("service parameters = %v", svc.Parameters)
	}
	wantLookups := []Lookup{
		{Kind: "output", Stack: "cache", StackName: "shop-cache", Output: "Endpoint", Param: "CacheEndpoint"},
		{Kind: "output", Stack: "database", StackName: "shop-database", Output: "Endpoint", Param: "DatabaseEndpoint"},
		{Kind: "output", Stack: "database", StackName: "shop-database", Output: "SecretArn", Param: "DatabaseSecretArn"},
		{Kind: "output", Stack: "network", StackName: "shop-network", Output: "PrivateSubnetIds", Param: "PrivateSubnetIds"},
		{Kind: "output", Stack: "network", StackName: "shop-network", Output: "PublicSubnetIds", Param: "PublicSubnetIds"},
		{Kind: "output", Stack: "network", StackName: "shop-network", Output: "VpcId", Param: "VpcId"},
	}
	if !slices.Equal(svc.Lookups, wantLookups) {
		t.Errorf("lookups = %+v", svc.Lookups)
	}
	// The dot form of an output lookup is the same lookup; the node type is a variable.
	if l := c.Stack("cache").Lookups; len(l) != 3 || l[2] != (Lookup{Kind: "output", Stack: "network", StackName: "shop-network", Output: "VpcId", Param: "VpcId"}) ||
		l[0] != (Lookup{Kind: "var", Name: "cache_node_type", Arg: "cache_node_type", Value: "cache.t4g.micro", Param: "NodeType"}) {
		t.Errorf("cache lookups = %+v", l)
	}
	g, err := c.Graph()
	if err != nil {
		t.Fatal(err)
	}
	order, err := g.Order()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []string{"network", "cache", "database", "service", "edge"}) {
		t.Errorf("order = %v", order)
	}
	if deps := g.Dependencies("service"); !slices.Equal(deps, []string{"cache", "database", "network"}) {
		t.Errorf("service depends on %v", deps)
	}
}

func TestLoadLarge30(t *testing.T) {
	c := load(t, filepath.Join(bundles, "large30"), LoadOptions{})
	if len(c.Stacks) != 30 || c.PersistentGraphKey != "orders" {
		t.Fatalf("%d stacks, graph key %q", len(c.Stacks), c.PersistentGraphKey)
	}
	g, err := c.Graph()
	if err != nil {
		t.Fatal(err)
	}
	order, err := g.Order()
	if err != nil || len(order) != 30 {
		t.Fatalf("order = %v, %v", order, err)
	}
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	for _, s := range c.Stacks {
		for _, d := range g.Dependencies(s.Name) {
			if pos[d] >= pos[s.Name] {
				t.Errorf("%s deploys before its dependency %s", s.Name, d)
			}
		}
	}
	if deps := g.Dependencies("payments-worker"); !slices.Equal(deps, []string{"artifacts", "network", "payments-queue", "payments-sg", "payments-table"}) {
		t.Errorf("payments-worker depends on %v", deps)
	}
}

func TestLoadZipEqualsDirectory(t *testing.T) {
	dir := filepath.Join(bundles, "webshop")
	z, err := bundle.Zip(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.FromZip(z)
	if err != nil {
		t.Fatal(err)
	}
	fromZip, err := Load(b)
	if err != nil {
		t.Fatal(err)
	}
	fromDir := load(t, dir, LoadOptions{})
	if len(fromZip.Stacks) != len(fromDir.Stacks) {
		t.Fatal("stack counts differ")
	}
	for i, s := range fromZip.Stacks {
		d := fromDir.Stacks[i]
		if s.StackName != d.StackName || s.Template.SHA256 != d.Template.SHA256 || !maps.Equal(s.Parameters, d.Parameters) {
			t.Errorf("stack %s differs between zip and directory", s.Name)
		}
	}
}

func TestLoadSingleFile(t *testing.T) {
	cfg, err := os.ReadFile("../../testdata/fuzz/FuzzLoadConfig/inline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(bundle.FromYAML("inline.yaml", cfg))
	if err != nil {
		t.Fatal(err)
	}
	q, topic := c.Stack("queue"), c.Stack("topic")
	if q.Template == nil || !q.Template.HasOutput("Url") || q.StackName != "inline-queue" {
		t.Errorf("queue = %+v", q)
	}
	// template_body given as a mapping keeps its short-form tags through re-encoding.
	if topic.Template == nil || topic.Template.Resources != 1 || !bytes.Contains(topic.TemplateBody, []byte("!Ref")) {
		t.Errorf("topic template = %s", topic.TemplateBody)
	}
	if topic.Parameters["QueueUrl"] != "${output queue.Url}" {
		t.Errorf("variables were not read as parameters: %v", topic.Parameters)
	}
	if c.Drift.Enabled || !slices.Equal(c.Drift.Ignore, []string{"legacy-*"}) {
		t.Errorf("drift = %+v", c.Drift)
	}
	g, err := c.Graph()
	if err != nil {
		t.Fatal(err)
	}
	if order, _ := g.Order(); !slices.Equal(order, []string{"audit", "queue", "topic"}) {
		t.Errorf("order = %v, want audit (required_by queue), queue, topic (reads queue)", order)
	}
}

func TestDefaults(t *testing.T) {
	const cfg = `
namespace: web
stacks:
  - name: app
    template_body: "Resources: {Q: {Type: AWS::SQS::Queue}}"
  - name: legacy
    stack_name: LegacyApp
    template_url: https://example.com/legacy.json
    parameters: {Anything: goes}
    enabled: false
    locked: true
`
	c, err := LoadOptions{Deployment: "web-staging"}.Load(bundle.FromYAML("cairn.yaml", []byte(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	if c.NamespaceDelimiter != "-" || c.MaxConcurrency != 10 || c.PersistentGraphKey != "web-staging" || !c.Drift.Enabled || c.DeletionPolicy.MaxDeletions != 0 {
		t.Errorf("defaults = %+v", c)
	}
	app, legacy := c.Stack("app"), c.Stack("legacy")
	if app.StackName != "web-app" || !app.Enabled || app.Locked {
		t.Errorf("app = %+v", app)
	}
	if legacy.StackName != "LegacyApp" || legacy.Enabled || !legacy.Locked || legacy.Template != nil || legacy.TemplateURL != "https://example.com/legacy.json" {
		t.Errorf("legacy = %+v", legacy)
	}
	if c.Stack("nope") != nil {
		t.Error("Stack of an unknown name is not nil")
	}

	c, err = Load(bundle.FromYAML("cairn.yaml", []byte("namespace: web\nnamespace_delimiter: \"\"\npersistent_graph_key: web.main\nstacks:\n  - name: App\n    template_body: \"Resources: {Q: {Type: AWS::SQS::Queue}}\"\n")))
	if err != nil {
		t.Fatal(err)
	}
	if c.Stacks[0].StackName != "webApp" || c.PersistentGraphKey != "web.main" {
		t.Errorf("stack name %q, graph key %q", c.Stacks[0].StackName, c.PersistentGraphKey)
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	cfg, err := os.ReadFile("../../testdata/fuzz/FuzzLoadConfig/anchors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(fuzzBundle(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	app, db := c.Stack("app"), c.Stack("db")
	if db.TemplatePath != "templates/app.yaml" || db.Parameters["Name"] != "${xref legacy-db::Url}" || db.Parameters["Size"] != "2" {
		t.Errorf("db = %+v", db)
	}
	if db.Tags["team"] != "web" || app.Tags["team"] != "web" {
		t.Errorf("tags: app %v, db %v", app.Tags, db.Tags)
	}
	if app.Parameters["Size"] != "${output db::Url}" || app.Parameters["Name"] != "app" {
		t.Errorf("app = %+v", app)
	}
	if want := []Lookup{{Kind: "xref", Stack: "legacy-db", StackName: "legacy-db", Output: "Url", Param: "Name"}}; !slices.Equal(db.Lookups, want) {
		t.Errorf("db lookups = %+v", db.Lookups)
	}
	// An xref adds no dependency; an output lookup does.
	g, err := c.Graph()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.Dependencies("app"), []string{"db"}) || len(g.Dependencies("db")) != 0 {
		t.Errorf("dependencies: app %v, db %v", g.Dependencies("app"), g.Dependencies("db"))
	}
}

// TestLoadErrors checks each rule on the invalid bundles in testdata: every error, its
// exact text and its position.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		bundle string
		want   []string
	}{
		{"unknown-key", []string{
			`7:5: stacks[0].termination_protect: unknown key "termination_protect" (did you mean "termination_protection"?)`,
		}},
		{"wrong-type", []string{
			`2:18: max_concurrency: must be an integer, got the string "many"`,
			`8:14: stacks[0].enabled: must be true or false, got the string "yes"`,
		}},
		{"duplicate-stack", []string{
			`7:11: stacks[1].name: duplicate stack name "orders": stacks[0] (line 3) has it already`,
		}},
		{"duplicate-stack-name", []string{
			`8:17: stacks[1].stack_name: stack legacy-orders has the CloudFormation stack name "shop-orders" of stack orders (line 3) in the same account and region (cairn's account, cairn's region): set a distinct stack_name, or another region or role_arn`,
		}},
		{"unknown-requires", []string{
			`9:16: stacks[1].requires[0]: requires unknown stack "order" (did you mean "orders"?)`,
		}},
		{"unknown-required-by", []string{
			`6:9: stacks[0].required_by[0]: required_by names unknown stack "shipping"`,
		}},
		{"unknown-lookup-stack", []string{
			`10:18: stacks[1].parameters.QueueName: ${output payments::QueueUrl} names unknown stack "payments"`,
		}},
		{"unknown-output", []string{
			`10:18: stacks[1].parameters.QueueName: stack orders has no output "QueueURL": its template declares QueueArn, QueueUrl`,
		}},
		{"missing-template", []string{
			`4:20: stacks[0].template_path: template file "templates/orders.yaml" not found in the bundle`,
		}},
		{"template-outside-bundle", []string{
			`4:20: stacks[0].template_path: template path "../unknown-key/templates/queue.yaml" leaves the bundle: give a path relative to the bundle root, such as templates/app.yaml`,
		}},
		{"invalid-stack-name", []string{
			`3:11: stacks[0].name: CloudFormation stack name "shop-order_events" (namespace, delimiter and name joined) is invalid: it must start with a letter, hold only letters, digits and hyphens, and have at most 128 characters`,
		}},
		{"undeclared-parameter", []string{
			`7:7: stacks[0].parameters.RetentionSecond: template templates/queue.yaml declares no parameter "RetentionSecond" (did you mean "RetentionSeconds"?); it declares QueueName, RetentionSeconds`,
		}},
		{"missing-required-parameter", []string{
			`5:5: stacks[0].parameters: stack orders: template templates/queue.yaml requires parameter QueueName (no Default): set a value under parameters`,
		}},
		{"cycle", []string{
			`5:16: stacks[0].requires[0]: dependency cycle: app -> db -> cache -> app: remove one of these dependencies`,
		}},
		{"not-a-template", []string{
			`templates/notes.yaml:2:1: QueueName: unknown top-level section "QueueName": CloudFormation accepts only AWSTemplateFormatVersion, Conditions, Description, Globals, Hooks, Mappings, Metadata, Outputs, Parameters, Resources, Rules, Transform`,
			`templates/notes.yaml:2:1: Resources: not a complete CloudFormation template: no Resources section (a template needs at least one resource)`,
			`templates/notes.yaml:3:1: RetentionSeconds: unknown top-level section "RetentionSeconds": CloudFormation accepts only AWSTemplateFormatVersion, Conditions, Description, Globals, Hooks, Mappings, Metadata, Outputs, Parameters, Resources, Rules, Transform`,
		}},
		{"invalid-yaml", []string{
			`6:1: invalid YAML: mapping values are not allowed in this context`,
		}},
		{"template-spec", []string{
			`7:12: stacks[0].parameters.Env: parameter Env: value "test" is not one of its AllowedValues dev, prod (template templates/queue.yaml)`,
			`10:5: stacks[1].capabilities: stack service: capabilities [CAPABILITY_IAM] do not cover CAPABILITY_NAMED_IAM, which resource Role (AWS::IAM::Role) with RoleName (` + filepath.Join(bundles, "invalid", "template-spec", "templates", "service.yaml") + `:9:7) needs: add CAPABILITY_NAMED_IAM, or leave capabilities out to grant what the template needs`,
			`templates/queue.yaml:11:7: Resources.Queue.Properties.VisibiltyTimeout: unknown property "VisibiltyTimeout" of AWS::SQS::Queue (did you mean "VisibilityTimeout"?)`,
			`templates/queue.yaml:13:5: Resources.Dlq.Type: unknown resource type "AWS::SQS::Queu" (did you mean "AWS::SQS::Queue"?)`,
			`templates/queue.yaml:16:5: Resources.Setting.Properties: AWS::SSM::Parameter requires property Type`,
			`templates/queue.yaml:22:26: Outputs.Url.Value: AWS::SQS::Queue Queue has no attribute "Url" for Fn::GetAtt (did you mean "Arn"?); it has Arn, ContentBasedDeduplication, DeduplicationScope, DelaySeconds, FifoQueue, FifoThroughputLimit, KmsDataKeyReusePeriodSeconds, KmsMasterKeyId, MaximumMessageSize, MessageRetentionPeriod, QueueName, QueueUrl, ReceiveMessageWaitTimeSeconds, RedrivePolicy.deadLetterTargetArn, RedrivePolicy.maxReceiveCount, SqsManagedSseEnabled, Tags, VisibilityTimeout`,
		}},
		{"capabilities-explicit", []string{
			`5:5: stacks[0].capabilities: stack worker names no capabilities, and capabilities: explicit requires every stack to name its own; its template needs CAPABILITY_IAM for resource Role (AWS::IAM::Role) (` + filepath.Join(bundles, "invalid", "capabilities-explicit", "templates", "role.yaml") + `:3:3): add capabilities: [CAPABILITY_IAM]`,
			`10:5: stacks[2].capabilities: stack other names no capabilities, and capabilities: explicit requires every stack to name its own: add capabilities: []`,
		}},
		{"twelve-errors", []string{
			`templates/network.yaml:3:1: Errors: unknown top-level section "Errors": CloudFormation accepts only AWSTemplateFormatVersion, Conditions, Description, Globals, Hooks, Mappings, Metadata, Outputs, Parameters, Resources, Rules, Transform`,
			`templates/network.yaml:9:3: Parameters.Name: parameter Name needs a Type such as String`,
			`templates/network.yaml:18:25: Resources.Vpc.Properties.EnableDnsSupport: must be a boolean (true or false), not "maybe"`,
			`templates/network.yaml:22:14: Resources.Subnet.Properties.VpcId: "vpc-1234567" is not a VPC id: vpc- and 8 or 17 hex digits`,
			`templates/network.yaml:25:7: Resources.Subnet.Properties: AWS::EC2::Subnet: AvailabilityZone and AvailabilityZoneId exclude each other: give one of them`,
			`templates/network.yaml:27:5: Resources.Queue.Type: unknown resource type "AWS::SQS::Queu" (did you mean "AWS::SQS::Queue"?)`,
			`templates/network.yaml:35:53: Resources.Table.Properties.SSESpecification.SSEType: "AES256" is not one of the values it takes: KMS`,
			`templates/network.yaml:38:16: Resources.Reader.DependsOn: DependsOn names Table, which exists only when condition IsProd is true, and it may be false here: CloudFormation refuses the template when Reader exists and Table does not; give Reader the same Condition or drop the dependency`,
			`templates/network.yaml:39:5: Resources.Reader.Properties: AWS::IAM::Policy needs at least one of Users, Groups, Roles`,
			`templates/network.yaml:44:5: Resources.Ready.CreationPolicy: must be a mapping, but parameter Env (String) is not`,
			`templates/network.yaml:49:16: Resources.Handler.Properties.Runtime: Lambda runtime nodejs12.x is deprecated: AWS blocked creating functions with it on 2023-03-31 and updating them on 2023-04-30: move to nodejs24.x`,
			`templates/network.yaml:55:22: Resources.Site.Properties.AccessControl: AccessControl PublicRead needs OwnershipControls that allow ACLs: S3 creates buckets with ACLs disabled (BucketOwnerEnforced) and refuses the ACL; add OwnershipControls: {Rules: [{ObjectOwnership: ObjectWriter}]} (or BucketOwnerPreferred), or drop AccessControl`,
		}},
		{"many-errors", []string{
			`2:1: regions: unknown key "regions" (did you mean "region"?)`,
			`8:7: stacks[0].parameters.Retention: template templates/queue.yaml declares no parameter "Retention"; it declares QueueName, RetentionSeconds`,
			`10:20: stacks[1].template_path: template file "templates/billing.yaml" not found in the bundle`,
			`11:16: stacks[1].requires[0]: requires unknown stack "order" (did you mean "orders"?)`,
			`12:5: stacks[2]: stack orders: template templates/queue.yaml requires parameter QueueName (no Default): set a value under parameters`,
			`12:11: stacks[2].name: duplicate stack name "orders": stacks[0] (line 4) has it already`,
			`14:13: stacks[2].locked: must be true or false, got 1`,
		}},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.bundle] = true
		t.Run(tt.bundle, func(t *testing.T) {
			dir := filepath.Join(bundles, "invalid", tt.bundle)
			b, err := bundle.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			c, err := LoadOptions{Today: runtimeDay}.Load(b)
			if c != nil {
				t.Error("Load returned a config with errors")
			}
			checkErrors(t, err, filepath.Join(dir, "cairn.yaml"), tt.want)
		})
	}
	dirs, _ := os.ReadDir(filepath.Join(bundles, "invalid"))
	for _, d := range dirs {
		if !seen[d.Name()] {
			t.Errorf("testdata/bundles/invalid/%s has no test case", d.Name())
		}
	}
}

// checkErrors asserts err is Errors with exactly the wanted lines, each "LINE:COL: ..."
// after the file name.
func checkErrors(t *testing.T, err error, file string, want []string) {
	t.Helper()
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Load = %v, want config.Errors", err)
	}
	var got []string
	for _, e := range errs {
		switch {
		case e.File == file:
			got = append(got, strings.TrimPrefix(e.Error(), file+":"))
		case strings.HasPrefix(e.File, filepath.Dir(file)+string(filepath.Separator)):
			// a template's own problem, located in the template file
			got = append(got, strings.TrimPrefix(e.Error(), filepath.Dir(file)+string(filepath.Separator)))
		default:
			t.Errorf("error file %q, want %q or a file beside it", e.File, file)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLoadRules checks the rules not covered by a bundle in testdata, on configs inline.
// Templates: templates/app.yaml declares Name (required) and Size (default).
func TestLoadRules(t *testing.T) {
	tests := []struct {
		name, cfg string
		want      []string
	}{
		{"empty config", "", []string{`1:1: config must be a mapping with namespace and stacks, got an empty document`}},
		{"config a list", "- a\n", []string{`1:1: config must be a mapping with namespace and stacks, got a list`}},
		{"no stacks", "namespace: x\n", []string{`1:1: stacks: missing: a config needs a list of stacks`}},
		{"stacks a mapping", "stacks: {a: 1}\n", []string{`1:9: stacks: must be a list of stacks, got a mapping`}},
		{"stack a string", "stacks: [app]\n", []string{`1:10: stacks[0]: a stack must be a mapping with name and template_path, got the string "app"`}},
		{"no name, no template", "stacks:\n  - tags: {}\n", []string{
			`2:5: stacks[0].name: missing: every stack needs a name`,
			`2:5: stacks[0]: no template: set template_path, template_url or template_body`,
		}},
		{"duplicate key", "namespace: a\nnamespace: b\nstacks: []\n", []string{`2:1: namespace: duplicate key (first at line 1)`}},
		// A stack's parameters merged from another stack are checked where they are written
		// (this crashed the loader).
		{"parameters merged into a stack", "stacks:\n  - &base\n    name: a\n    template_path: templates/app.yaml\n    parameters: {Name: n, Size: big}\n  - <<: *base\n    name: b\n", []string{
			`5:33: stacks[0].parameters.Size: parameter Size: value "big" is not a number (the parameter is a Number) (template templates/app.yaml)`,
			`5:33: stacks[1].parameters.Size: parameter Size: value "big" is not a number (the parameter is a Number) (template templates/app.yaml)`,
		}},
		{"wrong types", `namespace: [x]
namespace_delimiter: {a: b}
persistent_graph_key: a/b
tags: [x]
deletion_policy: {max_deletions: -1, dry: true}
max_concurrency: 0
drift: {enabled: yes please, ignore: x}
stacks:
  - name: app
    template_path: templates/app.yaml
    parameters: {Name: {nested: map}}
    requires: db
    termination_protection: 1
    capabilities: [CAPABILITY_IAM, CAPABILITY_EVERYTHING]
`, []string{
			`1:12: namespace: must be a string, got a list`,
			`2:22: namespace_delimiter: must be a string, got a mapping`,
			`3:23: persistent_graph_key: "a/b" is not a valid key: use letters, digits, '-', '_' and '.'`,
			`4:7: tags: must be a mapping, got a list`,
			`5:34: deletion_policy.max_deletions: must be 0 or more, got -1`,
			`5:38: deletion_policy.dry: unknown key "dry": allowed keys are max_deletions`,
			`6:18: max_concurrency: must be at least 1, got 0`,
			`7:18: drift.enabled: must be true or false, got the string "yes please"`,
			`7:38: drift.ignore: must be a list of strings, got the string "x"`,
			`11:24: stacks[0].parameters.Name: must be a string, got a mapping`,
			`12:15: stacks[0].requires: must be a list of strings, got the string "db"`,
			`13:29: stacks[0].termination_protection: must be true or false, got 1`,
			`14:36: stacks[0].capabilities[1]: unknown capability "CAPABILITY_EVERYTHING": use CAPABILITY_AUTO_EXPAND, CAPABILITY_IAM, CAPABILITY_NAMED_IAM`,
		}},
		{"bad namespace reported once", "namespace: 1shop\nstacks:\n  - {name: a, template_body: \"Resources: {Q: {Type: AWS::SQS::Queue}}\"}\n  - {name: b, template_body: \"Resources: {Q: {Type: AWS::SQS::Queue}}\"}\n", []string{
			`1:12: namespace: "1shop" cannot start CloudFormation stack names: use letters, digits and hyphens, starting with a letter`,
		}},
		{"stack name too long", "stacks:\n  - name: a\n    stack_name: " + strings.Repeat("x", 129) + "\n    template_body: \"Resources: {Q: {Type: AWS::SQS::Queue}}\"\n", []string{
			`3:17: stacks[0].stack_name: CloudFormation stack name "` + strings.Repeat("x", 129) + `" is invalid: it must start with a letter, hold only letters, digits and hyphens, and have at most 128 characters`,
		}},
		{"two templates", "stacks:\n  - name: a\n    template_path: templates/app.yaml\n    template_url: https://x/y.json\n    parameters: {Name: a}\n", []string{
			`4:5: stacks[0].template_url: a stack takes one of template_path, template_url and template_body`,
		}},
		{"parameters and variables", "stacks:\n  - name: a\n    template_path: templates/app.yaml\n    parameters: {Name: a}\n    variables: {Name: b}\n", []string{
			`5:5: stacks[0].variables: parameters and variables are the same key: use one`,
		}},
		{"template url scheme", "stacks:\n  - {name: a, template_url: ftp://x/y.json}\n", []string{
			`2:29: stacks[0].template_url: "ftp://x/y.json" is not an https:// or s3:// URL`,
		}},
		{"absolute template path", "stacks:\n  - {name: a, template_path: /etc/app.yaml}\n", []string{
			`2:30: stacks[0].template_path: template path "/etc/app.yaml" leaves the bundle: give a path relative to the bundle root, such as templates/app.yaml`,
		}},
		{"inline template invalid", "stacks:\n  - name: a\n    template_body: |\n      Description: no resources\n", []string{
			`4:7: Resources: not a complete CloudFormation template: no Resources section (a template needs at least one resource)`,
		}},
		{"lookups", `namespace: s
stacks:
  - name: app
    template_path: templates/app.yaml
    parameters:
      Name: ${output db}
      Size: ${secret db/password}
  - name: db
    template_path: templates/app.yaml
    parameters:
      Name: ${xref nothing}
`, []string{
			`6:13: stacks[0].parameters.Name: malformed lookup ${output db}: write ${output STACK::Output}`,
			`7:13: stacks[0].parameters.Size: unknown lookup ${secret db/password}: cairn supports ${output}, ${xref}, ${rxref}, ${cfn}, ${ssm}, ${var}, ${file}, ${split}, ${join}`,
			`11:13: stacks[1].parameters.Name: malformed lookup ${xref nothing}: write ${xref FULL-STACK-NAME::Output}`,
		}},
		{"reserved tags", "tags: {aws:owner: me, cairn:name: x, team: a}\nstacks: []\n", []string{
			`1:8: tags.aws:owner: tag keys starting with aws: are reserved (cairn sets its own cairn: tags)`,
			`1:23: tags.cairn:name: tag keys starting with cairn: are reserved (cairn sets its own cairn: tags)`,
		}},
		{"bad drift pattern", "drift: {ignore: [\"[bad\"]}\nstacks: []\n", []string{
			`1:18: drift.ignore[0]: bad pattern "[bad": syntax error in pattern`,
		}},
		{"self dependency through a lookup", "stacks:\n  - name: app\n    template_path: templates/app.yaml\n    parameters: {Name: \"${output app::Url}\"}\n", []string{
			`4:24: stacks[0].parameters.Name: dependency cycle: app -> app: remove one of these dependencies`,
		}},
		{"cycle through required_by", "stacks:\n  - {name: a, template_path: templates/app.yaml, parameters: {Name: a}, requires: [b]}\n  - {name: b, template_path: templates/app.yaml, parameters: {Name: b}, required_by: [a]}\n  - {name: c, template_path: templates/app.yaml, parameters: {Name: c}, required_by: [b], requires: [a]}\n", []string{
			`2:84: stacks[0].requires[0]: dependency cycle: a -> b -> c -> a: remove one of these dependencies`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(fuzzBundle(t, []byte(tt.cfg)))
			checkErrors(t, err, "cairn.yaml", tt.want)
		})
	}
}

const appTemplate = `Parameters:
  Name: {Type: String}
  Size: {Type: Number, Default: 1}
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties: {QueueName: !Ref Name}
Outputs:
  Url: {Value: !Ref Queue}
`

// fataler is what fuzzBundle needs of a *testing.T or *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

// fuzzBundle zips cfg as cairn.yaml with templates/app.yaml beside it, so tests go
// through the same zip reader as a pushed bundle.
func fuzzBundle(t fataler, cfg []byte) *bundle.Bundle {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range map[string][]byte{"cairn.yaml": cfg, "templates/app.yaml": []byte(appTemplate)} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.FromZip(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestResolveParameters(t *testing.T) {
	c := load(t, filepath.Join(bundles, "webshop"), LoadOptions{})
	outputs := map[[2]string]string{
		{"shop-network", "VpcId"}:            "vpc-1",
		{"shop-network", "PublicSubnetIds"}:  "subnet-a,subnet-b",
		{"shop-network", "PrivateSubnetIds"}: "subnet-c,subnet-d",
		{"shop-database", "Endpoint"}:        "db.internal",
		{"shop-cache", "Endpoint"}:           "cache.internal",
	}
	lookup := func(stack, output string) (string, bool) {
		v, ok := outputs[[2]string{stack, output}]
		return v, ok
	}
	_, err := ResolveParameters(c.Stack("service"), Values{Outputs: lookup})
	want := "stack service: parameter DatabaseSecretArn: ${output database::SecretArn}: stack shop-database has no output SecretArn yet: deploy database first"
	if err == nil || err.Error() != want {
		t.Fatalf("ResolveParameters = %v, want %q", err, want)
	}
	outputs[[2]string{"shop-database", "SecretArn"}] = "arn:aws:secretsmanager:eu-west-1:1:secret:db"
	got, err := ResolveParameters(c.Stack("service"), Values{Outputs: lookup})
	if err != nil {
		t.Fatal(err)
	}
	wantParams := map[string]string{
		"VpcId": "vpc-1", "PublicSubnetIds": "subnet-a,subnet-b", "PrivateSubnetIds": "subnet-c,subnet-d",
		"DatabaseEndpoint": "db.internal", "DatabaseSecretArn": "arn:aws:secretsmanager:eu-west-1:1:secret:db",
		"CacheEndpoint": "cache.internal", "Image": "public.ecr.aws/nginx/nginx:1.27",
	}
	if !maps.Equal(got, wantParams) {
		t.Errorf("resolved = %v", got)
	}

	// xref names the CloudFormation stack directly; text around lookups is kept.
	s := &Stack{Name: "app", Parameters: map[string]string{"Url": "https://${xref legacy-api::Host}/v1 (${output db::Port})", "Plain": "${AWS::Region}"},
		Lookups: []Lookup{{Kind: "xref", Stack: "legacy-api", StackName: "legacy-api", Output: "Host", Param: "Url"}, {Kind: "output", Stack: "db", StackName: "x-db", Output: "Port", Param: "Url"}}}
	got, err = ResolveParameters(s, Values{Outputs: func(stack, output string) (string, bool) {
		return map[string]string{"legacy-api/Host": "api.example.com", "x-db/Port": "5432"}[stack+"/"+output], true
	}})
	if err != nil || got["Url"] != "https://api.example.com/v1 (5432)" || got["Plain"] != "${AWS::Region}" {
		t.Errorf("resolved = %v, %v", got, err)
	}
}

// TestAWSSamplesBundle builds a bundle from the ECS cluster and service samples (read
// from the shared folder, never copied into the repository) and checks it validates.
func TestAWSSamplesBundle(t *testing.T) {
	const samples = "../../../shared/templates/aws-samples"
	cluster, err := os.ReadFile(filepath.Join(samples, "ECS_FargateLaunchType_clusters_public-vpc.yaml"))
	if err != nil {
		t.Skipf("AWS sample templates absent (%v); skipping", err)
	}
	service, err := os.ReadFile(filepath.Join(samples, "ECS_FargateLaunchType_services_public-service.yaml"))
	if err != nil {
		t.Skipf("AWS sample templates absent (%v); skipping", err)
	}
	dir := t.TempDir()
	files := map[string][]byte{
		"templates/cluster.yaml": cluster,
		"templates/service.yaml": service,
		"cairn.yaml": []byte(`namespace: samples
stacks:
  - name: cluster
    template_path: templates/cluster.yaml
    capabilities: [CAPABILITY_IAM]
  - name: service
    template_path: templates/service.yaml
    requires: [cluster]
    parameters:
      StackName: samples-cluster
      ServiceName: web
      ContainerPort: 8080
`),
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := load(t, dir, LoadOptions{Deployment: "samples"})
	g, err := c.Graph()
	if err != nil {
		t.Fatal(err)
	}
	if order, _ := g.Order(); !slices.Equal(order, []string{"cluster", "service"}) {
		t.Errorf("order = %v", order)
	}
	if !c.Stack("cluster").Template.HasOutput("PublicListener") || c.Stack("service").Template.Parameters["ContainerPort"].Type != "Number" {
		t.Error("sample templates were not read")
	}
}

// FuzzLoadConfig loads arbitrary YAML as cairn.yaml (with templates/app.yaml beside it):
// no panic, and either a config whose graph builds or a non-empty Errors. Seeds come from
// testdata/fuzz/FuzzLoadConfig at the repository root.
func FuzzLoadConfig(f *testing.F) {
	seeds, err := filepath.Glob("../../testdata/fuzz/FuzzLoadConfig/*")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata/fuzz/FuzzLoadConfig (%v)", err)
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, cfg []byte) {
		if len(cfg) > 64<<10 {
			return // a config is small; the zip reader's limits cover larger inputs
		}
		c, err := Load(fuzzBundle(t, cfg))
		if err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("Load error is not config.Errors: %v", err)
			}
			for _, e := range errs {
				if e.Line < 1 || e.Col < 1 || e.Msg == "" {
					t.Fatalf("error without a position or message: %+v", e)
				}
			}
			return
		}
		if _, err := c.Graph(); err != nil {
			t.Fatalf("Graph of a loaded config: %v", err)
		}
	})
}

func TestParseValue(t *testing.T) {
	tests := []struct {
		in   string
		want []string // kind|raw of each top-level lookup
		err  string
	}{
		{"plain", nil, ""},
		{"${AWS::Region}", nil, ""},
		{"${output a::B}", []string{"output|${output a::B}"}, ""},
		{"x-${output  a.B }-${xref c-d::E}", []string{"output|${output  a.B }", "xref|${xref c-d::E}"}, ""},
		{"${${output a::B}", []string{"output|${output a::B}"}, ""},
		{"${output}", nil, ""},
		{"${out_put\ta}", []string{"out_put|${out_put\ta}"}, ""},
		{"${split ,::${output a::B}}", []string{"split|${split ,::${output a::B}}"}, ""},
		{"${join ,::${AWS::Region}::b}", []string{"join|${join ,::${AWS::Region}::b}"}, ""},
		{"${output a::B", nil, `lookup "${output a::B" is not closed: add }`},
		{"${join ,::${AWS::Region", nil, `"${AWS::Region" is not closed: add }`},
		{strings.Repeat("${join ,::", 9) + strings.Repeat("}", 9), nil, "lookups are nested more than 8 deep"},
	}
	for _, tt := range tests {
		parts, err := parseValue(tt.in)
		if tt.err != "" || err != nil {
			if err == nil || err.Error() != tt.err {
				t.Errorf("parseValue(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		var got []string
		for _, p := range parts {
			if p.lookup {
				got = append(got, string(p.kind)+"|"+p.raw)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("parseValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestMergeKeyCycleIsAnError: a merge key (<<:) naming an anchor of a mapping that contains
// it is an alias cycle: an error at its place, not endless recursion (found by
// FuzzLoadConfig; testdata/fuzz/FuzzLoadConfig/merge-cycle.yaml).
func TestMergeKeyCycleIsAnError(t *testing.T) {
	for _, cfg := range []string{
		"namespace: shop\nstacks:\n  - name: app\n    template_path: templates/app.yaml\n    parameters: &p\n      <<: *p\n      Size: small\n",
		"namespace: shop\nstacks:\n  - &s\n    name: app\n    template_path: templates/app.yaml\n    <<: [*s]\n",
	} {
		_, err := Load(fuzzBundle(t, []byte(cfg)))
		var errs Errors
		if !errors.As(err, &errs) || !strings.Contains(err.Error(), "alias cycle") {
			t.Errorf("%s: err %v, want the alias cycle named", cfg, err)
		}
	}
	// The same anchor merged in two places is no cycle.
	ok := "namespace: shop\nbase: &base {template_path: templates/app.yaml}\nstacks:\n  - {<<: *base, name: a}\n  - {<<: *base, name: b}\n"
	if _, err := Load(fuzzBundle(t, []byte(ok))); err != nil && strings.Contains(err.Error(), "alias cycle") {
		t.Errorf("an anchor merged twice is called a cycle: %v", err)
	}
}

// TestPlainScalarsAsDecode checks the loader's reading of true, false and decimal
// integers gives what yaml.v3's Decode gives, and leaves every other spelling to it.
func TestPlainScalarsAsDecode(t *testing.T) {
	for _, v := range []string{"true", "True", "TRUE", "false", "False", "FALSE", "tRue", "yes", "on", "1",
		"0", "-0", "7", "-7", "42", "007", "010", "08", "0x1F", "0o17", "1_000", "+5", "123456789012345678", "9223372036854775807", "99999999999999999999", "1.5", "1e3", "~"} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte("v: "+v+"\n"), &doc); err != nil {
			t.Fatal(err)
		}
		n := doc.Content[0].Content[1]
		if b, ok := plainBool(n); ok {
			var want bool
			if err := n.Decode(&want); err != nil || b != want {
				t.Errorf("plainBool(%q) = %v, Decode %v, %v", v, b, want, err)
			}
		}
		if i, ok := plainInt(n); ok {
			var want int
			if err := n.Decode(&want); err != nil || i != want {
				t.Errorf("plainInt(%q) = %v, Decode %v, %v", v, i, want, err)
			}
		}
		if _, ok := plainBool(n); ok != (n.Tag == "!!bool" && strings.EqualFold(v, "true") || n.Tag == "!!bool" && strings.EqualFold(v, "false")) {
			t.Errorf("plainBool(%q) read it: %v (tag %s)", v, ok, n.Tag)
		}
	}
}
