package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/installation"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/verdict"
)

// policyWorld is cairn in the emulator with its bucket policy, the policy role's ARN (from
// the export, as the CLI finds it) and a stand-in of the GitHub plan role: a role of the
// account the local user may assume, as a pull request's job assumes the plan role.
func policyWorld(t *testing.T) (s3c *s3.Client, policyRole, planRole string) {
	t.Helper()
	_, s3c = deployEmulator(t)
	ctx := context.Background()
	cfg, err := awsclient.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfn := cloudformation.NewFromConfig(cfg)
	out, err := cfn.ListExports(ctx, &cloudformation.ListExportsInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range out.Exports {
		if aws.ToString(e.Name) == installation.PolicyRoleExport {
			policyRole = aws.ToString(e.Value)
		}
	}
	if policyRole == "" {
		t.Fatalf("no export %s", installation.PolicyRoleExport)
	}
	if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("github-plan"), Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityNamedIam},
		TemplateBody: aws.String(`{"Resources":{"Role":{"Type":"AWS::IAM::Role","Properties":{"RoleName":"cairn-github-plan",
		  "AssumeRolePolicyDocument":{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:root"},"Action":"sts:AssumeRole"}]}}}}}`)}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("github-plan")})
		if err == nil && st.Stacks[0].StackStatus == cfntypes.StackStatusCreateComplete {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plan role's stack: %v %v", st, err)
		}
	}
	return s3c, policyRole, "arn:aws:iam::000000000000:role/cairn-github-plan"
}

// policyKeys lists the keys under prefix.
func policyKeys(t *testing.T, s3c *s3.Client, prefix string) []string {
	t.Helper()
	out, err := s3c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(localBucket), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// copyDir copies the files of a testdata folder into a fresh folder.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(to, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// TestPolicyPublishOnlyAsThePolicyRole: `cairn policy publish DIR` through the path an
// attacker takes, against the emulator with cairn's bucket policy: a set that does not
// compile or whose tests fail is refused with nothing written; the local user's own
// credentials and a GitHub plan role's session are refused by S3 (the bucket policy), and
// the CLI says who they are and which role to assume; as the policy role it uploads the
// set, then publishes changes and removals, and says so.
func TestPolicyPublishOnlyAsThePolicyRole(t *testing.T) {
	s3c, policyRole, planRole := policyWorld(t)
	ctx := context.Background()
	team := copyDir(t, "testdata/policies/team")
	empty := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"a folder without a policy", []string{empty, "--role", policyRole}, "holds no policy (.rego files other than _test.rego): nothing to publish"},
		{"a set that does not compile", []string{"testdata/policies/broken", "--role", policyRole}, "testdata/policies/broken does not compile, nothing published: "},
		{"a set whose tests fail", []string{"testdata/policies/failing", "--role", policyRole}, "testdata/policies/failing: 1 of its 1 tests fail, nothing published: data.p_test.test_denies_without_input"},
		{"a role the caller may not assume", []string{team, "--role", "arn:aws:iam::000000000000:role/nobody"},
			"cairn: --role arn:aws:iam::000000000000:role/nobody: you may not assume it (User: arn:aws:iam::000000000000:root is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::000000000000:role/nobody): the role's trust (cairn:policyAdmins) names who may; ask the platform team\n"},
		{"the local user's credentials", []string{team},
			"cairn: policies/: only the policy role may write team policies (you are arn:aws:iam::000000000000:root): assume " + policyRole + " or ask the platform team\n"},
		{"the GitHub plan role", []string{team, "--role", planRole},
			"cairn: policies/: only the policy role may write team policies (you are arn:aws:sts::000000000000:assumed-role/cairn-github-plan/root): assume " + policyRole + " or ask the platform team\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"policy", "publish", "--bucket", localBucket}, tc.args...), &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exit %d\nstderr: %s\nwant exit 1 and %q", code, stderr.String(), tc.stderr)
			}
			if keys := policyKeys(t, s3c, bucket.PoliciesPrefix); len(keys) != 0 {
				t.Errorf("written: %v", keys)
			}
		})
	}
	// The same writes with the SDK, as an attacker would, are refused too.
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(localBucket), Key: aws.String("policies/evil.rego"), Body: strings.NewReader("package evil")}); !awserr.AccessDenied(err) {
		t.Errorf("PutObject policies/evil.rego with the local user's credentials: %v, want AccessDenied", err)
	}

	dryRun := false
	publish := func(want ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run([]string{"policy", "publish", team, "--bucket", localBucket, "--role", policyRole, "--dry-run=" + strconv.FormatBool(dryRun)}, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
		}
		for _, w := range want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
			}
		}
		return stdout.String()
	}
	dryRun = true
	publish("added   policies/buckets.rego\n", "would publish (--dry-run: nothing written) ", ": 3 added, 0 changed, 0 removed\n")
	if keys := policyKeys(t, s3c, bucket.PoliciesPrefix); len(keys) != 0 {
		t.Errorf("--dry-run wrote %v", keys)
	}
	dryRun = false
	publish("added   policies/buckets.rego\n", "added   policies/buckets_test.rego\n", "added   policies/iam/regions.json\n",
		"as arn:aws:sts::000000000000:assumed-role/", "/root: 3 added, 0 changed, 0 removed\n")
	if keys := policyKeys(t, s3c, bucket.PoliciesPrefix); !slices.Equal(keys, []string{"policies/buckets.rego", "policies/buckets_test.rego", "policies/iam/regions.json"}) {
		t.Errorf("policies/ holds %v", keys)
	}
	writeFiles(t, team, map[string]string{"iam/regions.json": `{"allowed_regions": ["us-east-1"]}`})
	if err := os.Remove(filepath.Join(team, "buckets_test.rego")); err != nil {
		t.Fatal(err)
	}
	publish("removed policies/buckets_test.rego\n", "changed policies/iam/regions.json\n", ": 0 added, 1 changed, 1 removed\n")
	got, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(localBucket), Key: aws.String("policies/iam/regions.json")})
	if err != nil {
		t.Fatal(err)
	}
	var data map[string][]string
	if err := json.NewDecoder(got.Body).Decode(&data); err != nil || !slices.Equal(data["allowed_regions"], []string{"us-east-1"}) {
		t.Errorf("policies/iam/regions.json: %v %v", data, err)
	}
	if out := publish(); !strings.Contains(out, "s3://"+localBucket+"/policies/ is up to date with") {
		t.Errorf("a second publish: %s", out)
	}
}

// TestPolicyOverrideOnlyAsThePolicyRole: `cairn policy override NAME PLAN_ID RULE --reason`
// writes policy-overrides/NAME/PLAN_ID/RULE.json with the reason, the caller's ARN (sts
// GetCallerIdentity) and the time, as the policy role only; the local user is refused by
// S3, an unknown plan and a malformed rule or missing reason before anything is written.
func TestPolicyOverrideOnlyAsThePolicyRole(t *testing.T) {
	s3c, policyRole, _ := policyWorld(t)
	ctx := context.Background()
	_, planFile := policyPlan(t)
	body, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	id, unjudged := "20261207-100000-aaaaaaaa", "20261207-100000-cccccccc"
	// The plan as the deployer records it once judged: the starter library's public-bucket
	// rule denies its bucket; the other plan was never judged.
	doc, err := plan.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	doc.Policy = &verdict.Verdict{Kind: verdict.Plan, At: time.Now().UTC(), Denied: true, Results: []verdict.Result{
		{Level: verdict.Deny, Rule: "cairn.s3_public", Origin: "team", Stack: "web", Resource: "Site", Msg: "bucket Site is public"},
		{Level: verdict.Warn, Rule: "cairn.encryption", Origin: "team", Stack: "web", Resource: "Site", Msg: "a warning only"}}}
	judged, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	for planID, b := range map[string][]byte{id: judged, unjudged: body} {
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(localBucket), Key: aws.String(bucket.PlanKey("shop", planID)), Body: bytes.NewReader(b)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"the local user's credentials", []string{"shop", id, "cairn.s3_public", "--reason", "INC-42"}, 1,
			"cairn: policy-overrides/: only the policy role may write policy overrides (you are arn:aws:iam::000000000000:root): assume " + policyRole + " or ask the platform team\n"},
		{"an unknown plan", []string{"shop", "20261207-100000-bbbbbbbb", "cairn.s3_public", "--reason", "INC-42", "--role", policyRole}, 1,
			"cairn: plan 20261207-100000-bbbbbbbb of deployment shop does not exist: `cairn plans shop` lists its plans\n"},
		{"a rule the plan does not deny", []string{"shop", id, "cairn.iam_wildcard", "--reason", "INC-42", "--role", policyRole}, 1,
			"cairn: plan " + id + " of shop: no override of cairn.iam_wildcard written: the plan has no denial of rule cairn.iam_wildcard: it denies cairn.s3_public\n"},
		{"a rule the plan only warns of", []string{"shop", id, "cairn.encryption", "--reason", "INC-42", "--role", policyRole}, 1,
			"the plan has no denial of rule cairn.encryption"},
		{"an evaluation error", []string{"shop", id, "cairn.policy_error", "--reason", "INC-42", "--role", policyRole}, 1,
			"cairn.policy_error is an evaluation error, which no override lifts"},
		{"a plan no policy judged", []string{"shop", unjudged, "cairn.s3_public", "--reason", "INC-42", "--role", policyRole}, 1,
			"the plan has not been judged by policies"},
		{"a rule that is no policy's id", []string{"shop", id, "../cairn.s3_public", "--reason", "INC-42", "--role", policyRole}, 2,
			`rule "../cairn.s3_public" is not a policy's id`},
		{"no reason", []string{"shop", id, "cairn.s3_public", "--role", policyRole}, 2, "--reason is needed"},
		{"a plan id no plan has", []string{"shop", "../x", "cairn.s3_public", "--reason", "r", "--role", policyRole}, 2, `plan id "../x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"policy", "override", "--bucket", localBucket}, tc.args...), &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exit %d\nstderr: %s\nwant exit %d and %q", code, stderr.String(), tc.code, tc.stderr)
			}
			if keys := policyKeys(t, s3c, bucket.PolicyOverridesPrefix); len(keys) != 0 {
				t.Errorf("written: %v", keys)
			}
		})
	}

	var stdout, stderr bytes.Buffer
	before := time.Now().UTC().Truncate(time.Second)
	if code := run([]string{"policy", "override", "shop", id, "cairn.s3_public", "--reason", "INC-42: a public landing page, reviewed", "--role", policyRole, "--bucket", localBucket}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	key := bucket.PolicyOverrideKey("shop", id, "cairn.s3_public")
	if !strings.Contains(stdout.String(), "override written to s3://"+localBucket+"/"+key+" by arn:aws:sts::000000000000:assumed-role/") {
		t.Errorf("stdout: %s", stdout.String())
	}
	got, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(localBucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	var o struct {
		Reason, By string
		At         time.Time
	}
	if err := json.NewDecoder(got.Body).Decode(&o); err != nil {
		t.Fatal(err)
	}
	roleName := policyRole[strings.LastIndex(policyRole, "/")+1:]
	if o.Reason != "INC-42: a public landing page, reviewed" || o.By != "arn:aws:sts::000000000000:assumed-role/"+roleName+"/root" ||
		o.At.Before(before) || o.At.After(time.Now().Add(time.Second)) {
		t.Errorf("override %+v", o)
	}
}
