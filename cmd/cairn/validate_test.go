package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

const testBundles = "../../testdata/bundles"

func TestValidate(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string // a regexp
		wantStderr []string
	}{
		{
			name:       "webshop",
			args:       []string{"validate", filepath.Join(testBundles, "webshop")},
			wantStdout: `^\.\./\.\./testdata/bundles/webshop/cairn\.yaml: ok: 5 stacks in namespace "shop", 6 dependencies, bundle sha256 [0-9a-f]{64}\n$`,
		},
		{
			name:       "large30",
			args:       []string{"validate", "--deployment", "orders-staging", filepath.Join(testBundles, "large30")},
			wantStdout: `: ok: 30 stacks in namespace "orders", 58 dependencies, bundle sha256 [0-9a-f]{64}\n$`,
		},
		{
			name:     "many errors",
			args:     []string{"validate", filepath.Join(testBundles, "invalid", "many-errors")},
			wantCode: 1,
			wantStderr: []string{
				`../../testdata/bundles/invalid/many-errors/cairn.yaml:2:1: regions: unknown key "regions" (did you mean "region"?)`,
				`../../testdata/bundles/invalid/many-errors/cairn.yaml:8:7: stacks[0].parameters.Retention: template templates/queue.yaml declares no parameter "Retention"; it declares QueueName, RetentionSeconds`,
				`../../testdata/bundles/invalid/many-errors/cairn.yaml:10:20: stacks[1].template_path: template file "templates/billing.yaml" not found in the bundle`,
				`../../testdata/bundles/invalid/many-errors/cairn.yaml:11:16: stacks[1].requires[0]: requires unknown stack "order" (did you mean "orders"?)`,
				`../../testdata/bundles/invalid/many-errors/cairn.yaml:12:5: stacks[2]: stack orders: template templates/queue.yaml requires parameter QueueName (no Default): set a value under parameters`,
				`../../testdata/bundles/invalid/many-errors/cairn.yaml:12:11: stacks[2].name: duplicate stack name "orders": stacks[0] (line 4) has it already`,
				`../../testdata/bundles/invalid/many-errors/cairn.yaml:14:13: stacks[2].locked: must be true or false, got 1`,
			},
		},
		{
			// Twelve errors of twelve kinds in one template, the structural ones first: each
			// is reported, none hides another (issue 32).
			name:     "twelve errors at once",
			args:     []string{"validate", filepath.Join(testBundles, "invalid", "twelve-errors")},
			wantCode: 1,
			wantStderr: []string{
				`../../testdata/bundles/invalid/twelve-errors/templates/network.yaml:3:1: Errors: unknown top-level section "Errors": CloudFormation accepts only AWSTemplateFormatVersion, Conditions, Description, Globals, Hooks, Mappings, Metadata, Outputs, Parameters, Resources, Rules, Transform`,
				`../../testdata/bundles/invalid/twelve-errors/templates/network.yaml:9:3: Parameters.Name: parameter Name needs a Type such as String`,
				`../../testdata/bundles/invalid/twelve-errors/templates/network.yaml:18:25: Resources.Vpc.Properties.EnableDnsSupport: must be a boolean (true or false), not "maybe"`,
				`../../testdata/bundles/invalid/twelve-errors/templates/network.yaml:22:14: Resources.Subnet.Properties.VpcId: "vpc-1234567" is not a VPC id: vpc- and 8 or 17 hex digits`,
				`../../testdata/bundles/invalid/twelve-errors/templates/network.yaml:25:7: Resources.Subnet.Properties: AWS::EC2::Subnet: AvailabilityZone and AvailabilityZoneId exclude each other: give one of them`,
				`../../testdata/bundles/invalid/twelve-errors/templates/network.yaml:27:5: Resources.Queue.Type: unknown resource type "AWS::SQS::Queu" (did you mean "AWS::SQS::Queue"?)`,
				`../../testdata/bundles/invalid/twelve-errors/templates/network.yaml:35:53: Resources.Table.Properties.SSESpecification.SSEType: "AES256" is not one of the values it takes: KMS`,
				`../../testdata/bundles/invalid/twelve-errors/templates/network.yaml:38:16: Resources.Reader.DependsOn: DependsOn names Table, which exists only when condition IsProd is true, and it may be false here: CloudFormation refuses the template when Reader exists and Table does not; give Reader the same Condition or drop the dependency`,
				`../../testdata/bundles/invalid/twelve-errors/templates/network.yaml:39:5: Resources.Reader.Properties: AWS::IAM::Policy needs at least one of Users, Groups, Roles`,
				`../../testdata/bundles/invalid/twelve-errors/templates/network.yaml:44:5: Resources.Ready.CreationPolicy: must be a mapping, but parameter Env (String) is not`,
				`../../testdata/bundles/invalid/twelve-errors/templates/network.yaml:49:16: Resources.Handler.Properties.Runtime: Lambda runtime nodejs12.x is deprecated: AWS blocked creating functions with it on 2023-03-31 and updating them on 2023-04-30: move to nodejs24.x`,
				`../../testdata/bundles/invalid/twelve-errors/templates/network.yaml:55:22: Resources.Site.Properties.AccessControl: AccessControl PublicRead needs OwnershipControls that allow ACLs: S3 creates buckets with ACLs disabled (BucketOwnerEnforced) and refuses the ACL; add OwnershipControls: {Rules: [{ObjectOwnership: ObjectWriter}]} (or BucketOwnerPreferred), or drop AccessControl`,
			},
		},
		{
			name:       "allowed namespaces",
			args:       []string{"validate", "--namespaces", "web,shop", filepath.Join(testBundles, "webshop")},
			wantStdout: `: ok: 5 stacks in namespace "shop"`,
		},
		{
			name:       "namespace outside the allowed ones",
			args:       []string{"validate", "--namespaces", "web", filepath.Join(testBundles, "webshop")},
			wantCode:   1,
			wantStderr: []string{`../../testdata/bundles/webshop/cairn.yaml:3:12: namespace: namespace "shop" is not one this cairn may manage (allowed: web): use one of those, or have cairn deployed with it in the CDK context cairn:namespaces`},
		},
		{
			name:       "cycle",
			args:       []string{"validate", filepath.Join(testBundles, "invalid", "cycle")},
			wantCode:   1,
			wantStderr: []string{`../../testdata/bundles/invalid/cycle/cairn.yaml:5:16: stacks[0].requires[0]: dependency cycle: app -> db -> cache -> app: remove one of these dependencies`},
		},
		{
			name:       "missing bundle",
			args:       []string{"validate", filepath.Join(testBundles, "nope")},
			wantCode:   1,
			wantStderr: []string{`open bundle: stat ../../testdata/bundles/nope: no such file or directory`},
		},
		{
			name:     "no path",
			args:     []string{"validate"},
			wantCode: 2,
			wantStderr: []string{
				`cairn: missing PATH: usage: cairn validate PATH [flags]`,
			},
		},
	}
	t.Setenv("CAIRN_NAMESPACES", "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tt.args, &out, &errOut)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.wantCode, errOut.String())
			}
			if tt.wantStdout != "" && !regexp.MustCompile(tt.wantStdout).MatchString(out.String()) {
				t.Errorf("stdout %q does not match %s", out.String(), tt.wantStdout)
			}
			if tt.wantStdout == "" && out.Len() > 0 {
				t.Errorf("unexpected stdout %q", out.String())
			}
			if got := strings.TrimSuffix(errOut.String(), "\n"); got != strings.Join(tt.wantStderr, "\n") {
				t.Errorf("stderr:\n%s\nwant:\n%s", got, strings.Join(tt.wantStderr, "\n"))
			}
		})
	}
}

// TestValidateInvalidBundles runs validate on every invalid bundle: each exits 1 and
// prints only FILE:LINE:COL: lines naming its own cairn.yaml or templates. (The exact texts are
// checked in internal/config.)
func TestValidateInvalidBundles(t *testing.T) {
	dirs, err := os.ReadDir(filepath.Join(testBundles, "invalid"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		t.Run(d.Name(), func(t *testing.T) {
			dir := filepath.Join(testBundles, "invalid", d.Name())
			var out, errOut bytes.Buffer
			if code := run([]string{"validate", dir}, &out, &errOut); code != 1 {
				t.Fatalf("exit code %d, want 1", code)
			}
			line := regexp.MustCompile(`^` + regexp.QuoteMeta(dir+string(filepath.Separator)) + `(cairn\.yaml|templates/\S+):\d+:\d+: \S.*$`)
			for _, l := range strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n") {
				if !line.MatchString(l) {
					t.Errorf("line %q is not FILE:LINE:COL: message", l)
				}
			}
		})
	}
}

func TestValidateZipAndSingleFile(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	// A zip made from the web-shop directory validates with the same digest.
	if code := run([]string{"validate", filepath.Join(testBundles, "webshop")}, &out, &errOut); code != 0 {
		t.Fatal(errOut.String())
	}
	dirSum := out.String()[strings.LastIndex(out.String(), " ")+1:]
	zipPath := filepath.Join(dir, "webshop.zip")
	writeZipOf(t, filepath.Join(testBundles, "webshop"), zipPath)
	out.Reset()
	if code := run([]string{"validate", zipPath}, &out, &errOut); code != 0 {
		t.Fatalf("zip: exit %d: %s", code, errOut.String())
	}
	if !strings.HasSuffix(out.String(), dirSum) {
		t.Errorf("zip summary %q, want digest %s", out.String(), dirSum)
	}

	single := filepath.Join(dir, "shop.yaml")
	if err := os.WriteFile(single, []byte(`namespace: tiny
stacks:
  - name: queue
    template_body: |
      Resources:
        Queue: {Type: AWS::SQS::Queue}
  - name: file
    template_path: templates/queue.yaml
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	if code := run([]string{"validate", single}, &out, &errOut); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	want := single + `:8:20: stacks[1].template_path: template file "templates/queue.yaml": a single-file bundle holds no files: put the template inline with template_body, or bundle a directory` + "\n"
	if errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
}

// TestValidateNamespacesFromTheEnvironment: CAIRN_NAMESPACES, as the deployer reads it, is
// the allow-list validate checks when --namespaces is not given.
func TestValidateNamespacesFromTheEnvironment(t *testing.T) {
	t.Setenv("CAIRN_NAMESPACES", "web")
	var out, errOut bytes.Buffer
	if code := run([]string{"validate", filepath.Join(testBundles, "webshop")}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), `namespace "shop" is not one this cairn may manage (allowed: web)`) {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}

// TestValidateAndPushRefuseWhatNoBundleHolds: a folder bundle whose function's CodeUri is
// a 12 GB sparse file is refused by `cairn validate`, `plan` and `push` by the file's size
// alone (it used to be read through sha256 for a minute first), and one whose CodeUri is
// ../.git/ (a folder the pushed zip never holds, which the deployer then refused) is refused
// by each of them with the one rule the deployer applies (bundle.Excluded); nothing is
// uploaded.
func TestValidateAndPushRefuseWhatNoBundleHolds(t *testing.T) {
	_, s3c := deployEmulator(t)
	tests := []struct {
		name, codeURI string
		setup         func(t *testing.T, dir string)
		want          string
	}{
		{"12 GB sparse file", "dump.bin", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "templates", "dump.bin")
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, 12_000_000_000); err != nil {
				t.Fatal(err)
			}
		}, "templates/dump.bin is 12000000000 bytes, more than the limit of 268435456 for one file of a bundle"},
		{"../.git/", "../.git/", func(t *testing.T, dir string) {
			if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[remote \"origin\"]\n\turl = https://token@example.com/x.git\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, `templates/app.yaml:7:16: Resources.Fn.Properties.CodeUri: CodeUri of Fn: "../.git/" names .git, in a folder no bundle holds`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{
				"cairn.yaml": "namespace: shop\nstacks:\n  - name: app\n    template_path: templates/app.yaml\n",
				"templates/app.yaml": "Transform: AWS::Serverless-2016-10-31\nResources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties:\n" +
					"      Runtime: python3.12\n      CodeUri: " + tt.codeURI + "\n      Handler: app.handler\n",
			}
			for name, body := range files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tt.setup(t, dir)
			for _, args := range [][]string{
				{"validate", dir},
				{"plan", dir, "--deployment", "shop", "--bucket", localBucket},
				{"push", dir, "--deployment", "shop", "--bucket", localBucket},
			} {
				out, code := cairnRun(t, args...)
				if code != 1 || !strings.Contains(out, tt.want) {
					t.Errorf("cairn %s exited %d:\n%s\nwant 1 and %q", args[0], code, out, tt.want)
				}
			}
			out, err := s3c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(localBucket)})
			if err != nil || len(out.Contents) != 0 {
				t.Errorf("the refused bundle left objects in the bucket: %v, %v", out, err)
			}
		})
	}
}

// TestPushRefusesATemplateNamingCairnsBucket: `cairn plan` and `cairn push` with cairn's
// bucket known (--bucket, $CAIRN_BUCKET) refuse a bundle whose function's Code names
// another deployment's bundle in cairn's bucket, or whose AWS::Include names a graph, by
// the rule the deployer applies (bucket.CheckLocation), exit 1 and upload nothing.
func TestPushRefusesATemplateNamingCairnsBucket(t *testing.T) {
	_, s3c := deployEmulator(t)
	tests := []struct{ name, template, want string }{
		{"Code", "Resources:\n  Fn:\n    Type: AWS::Lambda::Function\n    Properties:\n      Runtime: python3.12\n      Handler: app.handler\n" +
			"      Role: arn:aws:iam::123456789012:role/fn\n      Code: {S3Bucket: " + localBucket + ", S3Key: deployments/victim.zip}\n",
			"templates/app.yaml:8:13: Resources.Fn.Properties.Code: stack app: Code of Fn (AWS::Lambda::Function) names s3://" + localBucket + "/deployments/victim.zip, an object of cairn's own bucket"},
		{"AWS::Include", "Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n    Properties:\n      Fn::Transform:\n        Name: AWS::Include\n" +
			"        Parameters: {Location: !Sub 's3://" + localBucket + "/state/victim/victim.json'}\n",
			"AWS::Include's Location names s3://" + localBucket + "/state/victim/victim.json, an object of cairn's own bucket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte("namespace: attacker\nstacks:\n  - name: app\n    template_path: templates/app.yaml\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "templates", "app.yaml"), []byte(tt.template), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range []string{"plan", "push"} {
				out, code := cairnRun(t, cmd, dir, "--deployment", "attacker", "--bucket", localBucket)
				if code != 1 || !strings.Contains(out, tt.want) {
					t.Errorf("cairn %s exited %d:\n%s\nwant 1 and %q", cmd, code, out, tt.want)
				}
			}
			out, err := s3c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(localBucket)})
			if err != nil || len(out.Contents) != 0 {
				t.Errorf("the refused bundle left objects in the bucket: %v, %v", out, err)
			}
		})
	}
}

// TestValidateChecksReadsAgainstTheDeployersLists: with --ssm-paths (or $CAIRN_SSM_PATHS)
// and --bucket (or $CAIRN_BUCKET), as the deployer has them, `cairn validate` refuses a
// template whose dynamic reference reads another namespace's parameter and one whose
// function's code is another deployment's bundle in cairn's bucket; without them it
// cannot tell, and passes.
func TestValidateChecksReadsAgainstTheDeployersLists(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"cairn.yaml": "namespace: shop\nstacks:\n  - name: app\n    template_path: templates/app.yaml\n",
		"templates/app.yaml": "Resources:\n  P:\n    Type: AWS::SSM::Parameter\n    Properties:\n      Type: String\n      Value: '{{resolve:ssm:/web/db/user}}'\n" +
			"  Fn:\n    Type: AWS::Lambda::Function\n    Properties:\n      Runtime: python3.12\n      Handler: app.handler\n      Role: arn:aws:iam::123456789012:role/fn\n" +
			"      Code: {S3Bucket: cairn-state, S3Key: deployments/web.zip}\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantSSM := "templates/app.yaml:6:14: Resources.P.Properties.Value: stack app: SSM parameter /web/db/user (dynamic reference {{resolve:ssm:/web/db/user}}) is outside the Parameter Store paths namespace shop may read (/shop/*)"
	wantCode := "templates/app.yaml:13:13: Resources.Fn.Properties.Code: stack app: Code of Fn (AWS::Lambda::Function) names s3://cairn-state/deployments/web.zip, an object of cairn's own bucket"
	t.Setenv("CAIRN_BUCKET", "")
	t.Setenv("CAIRN_SSM_PATHS", "")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		code int
		want []string
	}{
		{"flags", []string{"--ssm-paths", `{"shop": ["/shop/*"]}`, "--bucket", "cairn-state"}, nil, 1, []string{wantSSM, wantCode}},
		{"environment", nil, map[string]string{"CAIRN_SSM_PATHS": `{"shop": ["/shop/*"], "web": ["/web/*"]}`, "CAIRN_BUCKET": "cairn-state"}, 1, []string{wantSSM, wantCode}},
		{"neither", nil, nil, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			out, code := cairnRun(t, append([]string{"validate", dir}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tt.code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output:\n%s\nwant a line containing %q", out, w)
				}
			}
		})
	}
}
