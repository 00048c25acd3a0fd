package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/plan"
	runstate "github.com/cairn-dev/cairn/internal/run"
)

// TestPolicyTestRunsTheRegoTests: `cairn policy test DIR` prints each test and exits 0 when
// all pass, 1 when one fails.
func TestPolicyTestRunsTheRegoTests(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"policy", "test", "../../internal/policy/library"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "PASS data.cairn.s3_public_test.test_public_acl_denied (../../internal/policy/library/s3_public_test.rego:") ||
		!strings.Contains(stdout.String(), " passed, 0 failed\n") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"p.rego":      "package p\n\ndeny contains \"x\" if input.bad\n",
		"p_test.rego": "package p_test\n\nimport data.p\n\ntest_denies_nothing if { count(p.deny) == 1 with input as {} }\n",
	})
	stdout.Reset()
	if code := run([]string{"policy", "test", dir}, &stdout, &stderr); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(stdout.String(), "FAIL data.p_test.test_denies_nothing") || !strings.Contains(stdout.String(), "0 passed, 1 failed") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}

// policyPlan writes a bundle whose stack web has a public bucket, and the plan document of
// an update of it with a secret parameter; it returns the bundle and the plan file.
func policyPlan(t *testing.T) (bundleDir, planFile string) {
	t.Helper()
	dir := t.TempDir()
	bundleDir = filepath.Join(dir, "bundle")
	writeFiles(t, bundleDir, map[string]string{
		"cairn.yaml": "namespace: shop\nstacks:\n  - name: web\n    template_path: web.yaml\n",
		"web.yaml":   "Resources:\n  Site:\n    Type: AWS::S3::Bucket\n    Properties:\n      AccessControl: PublicRead\n      OwnershipControls:\n        Rules:\n          - ObjectOwnership: ObjectWriter\n",
	})
	doc := plan.Document{ID: "20261207-100000-aaaaaaaa", Deployment: "shop", Namespace: "shop", GraphKey: "shop", Status: plan.Planned,
		Stacks: []plan.Stack{{Name: "web", StackName: "shop-web", Action: plan.Update,
			Parameters: map[string]string{"Token": "{{cairn:noecho@" + strings.Repeat("0", 64) + "}}"},
			Changes:    []plan.Change{{LogicalID: "Site", Type: "AWS::S3::Bucket", Action: "Modify", Replacement: "False"}}}},
		Run: &runstate.Run{ID: "20261207-100000-aaaaaaaa", Deployment: "shop", Mode: runstate.ModePlan, Stacks: map[string]*runstate.Stack{"web": {Name: "web", StackName: "shop-web"}}}}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	planFile = filepath.Join(dir, "plan.json")
	if err := os.WriteFile(planFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return bundleDir, planFile
}

// TestPolicyEvalDeniesAPublicBucket: the starter library denies the plan's public bucket
// (exit 1), naming rule, stack and resource; JSON says the same.
func TestPolicyEvalDeniesAPublicBucket(t *testing.T) {
	bundle, planFile := policyPlan(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{"policy", "eval", planFile, "--bundle", bundle}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{
		"deny cairn.s3_public (team policy) stack web, resource Site: bucket Site has the public ACL PublicRead",
		"plan 20261207-100000-aaaaaaaa of shop: 1 denial, 0 warnings\n",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	if code := run([]string{"policy", "eval", planFile, "--bundle", bundle, "--format", "json"}, &stdout, &stderr); code != 1 {
		t.Errorf("json: exit %d", code)
	}
	var got struct {
		Denied  bool
		Results []struct{ Level, Rule, Origin, Stack, Resource string }
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil || !got.Denied || len(got.Results) != 1 || got.Results[0].Rule != "cairn.s3_public" {
		t.Errorf("json (%v):\n%s", err, stdout.String())
	}
	// Without the bundle, policies see only the plan: no properties, no denial.
	stdout.Reset()
	if code := run([]string{"policy", "eval", planFile}, &stdout, &stderr); code != 0 {
		t.Errorf("without --bundle: exit %d\n%s", code, stdout.String())
	}
}

// TestPolicyEvalTeamAndBundlePolicies: --policies replaces the library, --bundle-policies
// adds the bundle's results, which cannot lift the team's denial; --print-input masks
// secrets.
func TestPolicyEvalTeamAndBundlePolicies(t *testing.T) {
	bundle, planFile := policyPlan(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"team/web.rego":   "package team.web\n\ndeny contains {\"msg\": \"web is frozen\", \"stack\": s.name} if { some s in input.stacks; s.name == \"web\" }\n",
		"bundle/web.rego": "package team.web\n\ndeny := set()\n\nwarn contains \"from the bundle\"\n",
	})
	var stdout, stderr bytes.Buffer
	code := run([]string{"policy", "eval", planFile, "--policies", filepath.Join(dir, "team"), "--bundle-policies", filepath.Join(dir, "bundle")}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stdout.String(), "deny team.web (team policy) stack web: web is frozen") ||
		!strings.Contains(stdout.String(), "warn team.web (bundle policy): from the bundle") {
		t.Errorf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"policy", "eval", planFile, "--bundle", bundle, "--print-input"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"Token": "****"`) || strings.Contains(stdout.String(), "noecho@") || !strings.Contains(stdout.String(), `"AccessControl": "PublicRead"`) {
		t.Errorf("input:\n%s", stdout.String())
	}
}

// TestPolicyEvalRefusals: a file that is no plan, and a policy that does not compile, say
// what and where.
func TestPolicyEvalRefusals(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"not-a-plan.json": `{"x": 1}`, "bad/p.rego": "package p\n\ndeny contains x if {\n"})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"policy", "eval", filepath.Join(dir, "not-a-plan.json")}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "is not a plan document (it has no id)") {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
	_, planFile := policyPlan(t)
	stderr.Reset()
	if code := run([]string{"policy", "eval", planFile, "--policies", filepath.Join(dir, "bad")}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "team policy "+filepath.Join(dir, "bad", "p.rego")+":4") {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}

// TestPolicyEvalReadsThePlanFromTheBucket: with --deployment, PLAN is a plan id read from
// cairn's bucket as `cairn plans` reads it; an unknown id is refused.
func TestPolicyEvalReadsThePlanFromTheBucket(t *testing.T) {
	_, s3c := deployEmulator(t)
	bundle, planFile := policyPlan(t)
	body, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	id := "20261207-100000-aaaaaaaa"
	if _, err := s3c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(localBucket),
		Key: aws.String(bucket.PlanKey("shop", id)), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"policy", "eval", id, "--deployment", "shop", "--bucket", localBucket, "--bundle", bundle}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stdout.String(), "deny cairn.s3_public (team policy) stack web, resource Site") {
		t.Errorf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"policy", "eval", "20261207-100000-bbbbbbbb", "--deployment", "shop", "--bucket", localBucket}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "20261207-100000-bbbbbbbb") {
		t.Errorf("unknown plan: exit %d: %s", code, stderr.String())
	}
}
