package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/cairn-dev/cairn/internal/awsclient"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/installation"
	"github.com/cairn-dev/cairn/internal/policy"
)

// policyBundle is bundleDir with a stack site whose template is testdata/policy/TEMPLATE.
func policyBundle(t *testing.T, template string) string {
	t.Helper()
	dir := bundleDir(t, "  - name: site\n    template_path: site.yaml\n")
	body, err := os.ReadFile(filepath.Join("testdata", "policy", template))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "site.yaml"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// policyRole is the ARN of the policy role cairn's stack exports, which alone may write
// policies/ and policy-overrides/ (cairn's bucket policy refuses everyone else).
func policyRole(t *testing.T) string {
	t.Helper()
	cfg, err := awsclient.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out, err := cloudformation.NewFromConfig(cfg).ListExports(context.Background(), &cloudformation.ListExportsInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range out.Exports {
		if aws.ToString(e.Name) == installation.PolicyRoleExport {
			return aws.ToString(e.Value)
		}
	}
	t.Fatalf("no export %s", installation.PolicyRoleExport)
	return ""
}

// publishTeamPolicy publishes the starter library's cairn.s3_public as the team's
// policies/security/s3_public.rego, as the platform team does: `cairn policy publish` as
// the policy role.
func publishTeamPolicy(t *testing.T, role string) {
	t.Helper()
	body, err := fs.ReadFile(policy.Library(), "s3_public.rego")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"security/s3_public.rego": string(body)})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"policy", "publish", dir, "--role", role, "--bucket", localBucket}, &stdout, &stderr); code != 0 {
		t.Fatalf("policy publish exited %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// putAsPolicyRole writes key as the policy role with the SDK: an override the CLI would
// refuse to write (another rule's, another plan's), which the deployer must not be fooled
// by either.
func putAsPolicyRole(t *testing.T, role, key string, body []byte) {
	t.Helper()
	ctx := context.Background()
	cfg, err := awsclient.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := sts.NewFromConfig(cfg).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("by-hand")})
	if err != nil {
		t.Fatal(err)
	}
	cr := out.Credentials
	cfg.Credentials = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(aws.ToString(cr.AccessKeyId), aws.ToString(cr.SecretAccessKey), aws.ToString(cr.SessionToken)))
	if _, err := awsclient.S3(cfg).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(localBucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

func put(t *testing.T, s3c *s3.Client, key string, body []byte) {
	t.Helper()
	if _, err := s3c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(localBucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, s3c *s3.Client, key string) string {
	t.Helper()
	out, err := s3c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(localBucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	defer out.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(out.Body); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// siteResources lists the logical ids of the resources of stack cli-site.
func siteResources(t *testing.T) []string {
	t.Helper()
	cfg, err := awsclient.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out, err := cloudformation.NewFromConfig(cfg).DescribeStackResources(context.Background(), &cloudformation.DescribeStackResourcesInput{StackName: aws.String("cli-site")})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range out.StackResources {
		ids = append(ids, aws.ToString(r.LogicalResourceId))
	}
	return ids
}

// TestPolicyEnforcedThroughTheCLI: with the team's cairn.s3_public in the bucket, a pull
// request's plan making a bucket public is denied in its comment and `cairn approve`
// refuses it (exit 1, nothing written, naming the rule, stack, resource and the override
// command); the policy role's override of that rule for that plan lets it apply, and the
// run report names the override; an approval written by hand for a denied plan executes
// nothing; and the same kind of change pushed without a plan executes nothing, its report
// saying which rule and how to proceed.
func TestPolicyEnforcedThroughTheCLI(t *testing.T) {
	s3c := deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	waitArgs := []string{"--wait", "--poll", "20ms", "--timeout", "1m"}
	var stdout, stderr bytes.Buffer
	cli := func(args ...string) int {
		stdout.Reset()
		stderr.Reset()
		return run(args, &stdout, &stderr)
	}
	// Without team or bundle policies nothing is judged (the function is not invoked: a
	// verdict, and the report's Policy section, come only from an invocation).
	if code := cli(append([]string{"push", policyBundle(t, "site.yaml"), "--deployment", "cli"}, waitArgs...)...); code != 0 {
		t.Fatalf("push of a private bucket exited %d:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if first := regexp.MustCompile(`(?m)^report: s3://\S+/(runs/cli/\S+\.md)$`).FindStringSubmatch(stdout.String()); first == nil || strings.Contains(read(t, s3c, first[1]), "## Policy") {
		t.Fatalf("a push without policies was judged, or reported no report:\n%s", stdout.String())
	}
	role := policyRole(t)
	publishTeamPolicy(t, role)

	// The pull request's plan: denied in its comment.
	public := policyBundle(t, "site-public.yaml")
	if code := cli(append([]string{"plan", public, "--deployment", "cli", "--format", "md"}, waitArgs...)...); code != 0 {
		t.Fatalf("plan exited %d:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	id := regexp.MustCompile(`plan id: (\S+)`).FindStringSubmatch(stderr.String())
	if id == nil {
		t.Fatalf("no plan id in:\n%s", stderr.String())
	}
	comment := read(t, s3c, layout.PlanMarkdownKey("cli", id[1]))
	for _, want := range []string{
		"## Policy: **denied** (1 denied, 0 overridden, 0 warnings)",
		"| deny | `cairn.s3_public` | team | site | Site | bucket Site has the public ACL PublicRead: drop AccessControl",
		"`cairn policy override cli " + id[1] + " cairn.s3_public --reason TEXT`",
		"team policies from s3://" + localBucket + "/policies/: 1 file(s): policies/security/s3_public.rego (version ",
	} {
		if !strings.Contains(comment, want) || !strings.Contains(stdout.String(), want) {
			t.Errorf("the plan's comment (and `cairn plan --format md`) lacks %q:\n%s", want, comment)
		}
	}

	// cairn approve refuses it: exit 1, nothing written.
	before := approvals(t)
	if code := cli("approve", "cli", id[1]); code != 1 || stdout.Len() != 0 {
		t.Fatalf("approve of a denied plan exited %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{
		"plan " + id[1] + " of cli is denied by policy:",
		"deny cairn.s3_public (team policy) stack site, resource Site: bucket Site has the public ACL PublicRead",
		"cairn policy override cli " + id[1] + " cairn.s3_public --reason TEXT",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("approve's refusal lacks %q:\n%s", want, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), `\n`) || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("approve's refusal is not one readable line (the printer escapes a message's own newlines):\n%s", stderr.String())
	}
	if after := approvals(t); after != before {
		t.Errorf("a refused approval wrote an approval object: %d before, %d after", before, after)
	}
	// cairn apply of the same content refuses too, uploading nothing.
	if code := cli("apply", public, "--deployment", "cli"); code != 1 || !strings.Contains(stderr.String(), "plan "+id[1]+" of cli is denied by policy:") {
		t.Fatalf("apply of denied content exited %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
	if after := approvals(t); after != before {
		t.Errorf("a refused apply uploaded its content: %d objects under approvals/ before, %d after", before, after)
	}

	// `cairn plans` says so, and --latest (scripts approve what it prints) refuses it.
	if code := cli("plans", "cli"); code != 0 || !strings.Contains(stdout.String(), "denied by policy (cairn.s3_public): `cairn plans cli "+id[1]+"` says how to proceed") {
		t.Errorf("cairn plans exited %d; its row of the denied plan does not say so:\n%s%s", code, stdout.String(), stderr.String())
	}
	if code := cli("plans", "cli", "--latest"); code != 1 || stdout.Len() != 0 ||
		!strings.Contains(stderr.String(), "deployment cli has no plan that can be approved: its newest, "+id[1]+", is denied by policy (cairn.s3_public)") {
		t.Errorf("plans --latest with only a denied plan exited %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}

	// The policy role's override of another rule, or of this rule for another plan,
	// lifts nothing; the override of this rule for this plan does.
	// (Written by hand as the policy role: `cairn policy override` refuses both.)
	override := []byte(`{"reason": "a public website, reviewed by security (SEC-12)", "by": "arn:aws:sts::000000000000:assumed-role/cairn-policy/alice", "at": "2026-12-07T09:00:00Z"}`)
	putAsPolicyRole(t, role, layout.PolicyOverrideKey("cli", id[1], "cairn.iam_wildcard"), override)
	putAsPolicyRole(t, role, layout.PolicyOverrideKey("cli", "20000101-000000000-00000000", "cairn.s3_public"), override)
	if code := cli("approve", "cli", id[1]); code != 1 {
		t.Fatalf("approve with only unrelated overrides exited %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if code := cli("policy", "override", "cli", id[1], "cairn.s3_public", "--reason", "a public website, reviewed by security (SEC-12)", "--role", role); code != 0 {
		t.Fatalf("policy override exited %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if code := cli("plans", "cli", "--latest"); code != 0 || stdout.String() != id[1]+"\n" {
		t.Errorf("plans --latest once the denial was overridden exited %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
	if code := cli(append([]string{"approve", "cli", id[1]}, waitArgs...)...); code != 0 {
		t.Fatalf("approve with the override exited %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	applyRun := regexp.MustCompile(`(?m)^run (\S+) of deployment cli: apply`).FindStringSubmatch(stdout.String())
	if applyRun == nil {
		t.Fatalf("no apply run in:\n%s", stdout.String())
	}
	report := read(t, s3c, layout.RunReportKey("cli", applyRun[1]))
	for _, want := range []string{
		"## Policy: passed (0 denied, 1 overridden, 0 warnings)",
		"| deny (overridden) | `cairn.s3_public` | team | site | Site |",
		"- Override of `cairn.s3_public` by arn:aws:sts::000000000000:assumed-role/" + role[strings.LastIndex(role, "/")+1:] + "/root at ",
		"a public website, reviewed by security (SEC-12)",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the apply run's report lacks %q:\n%s", want, report)
		}
	}

	// A denied plan approved by hand (an approval object written without the CLI)
	// executes nothing: the deployer checks the verdict again.
	if code := cli(append([]string{"plan", policyBundle(t, "site-public-logs.yaml"), "--deployment", "cli", "--format", "text"}, waitArgs...)...); code != 0 {
		t.Fatalf("second plan exited %d:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	second := regexp.MustCompile(`plan id: (\S+)`).FindStringSubmatch(stdout.String())
	if second == nil || !strings.Contains(stdout.String(), "policy deny cairn.s3_public (team policy) stack site, resource Logs: bucket Logs turns BlockPublicAcls off") ||
		!strings.Contains(stdout.String(), "policy: DENIED (2 denied, 0 overridden, 0 warnings)") {
		t.Fatalf("`cairn plan` does not print the denial:\n%s", stdout.String())
	}
	put(t, s3c, layout.ApprovalKey("cli", second[1]), nil)
	refused := waitForRun(t, s3c, "cli", func(report string) bool {
		return strings.Contains(report, "apply of plan "+second[1]) || strings.Contains(report, second[1]+" of cli is denied")
	})
	for _, want := range []string{"denied by policy", "plan " + second[1] + " of cli is denied by policy", "resource Logs"} {
		if !strings.Contains(refused, want) {
			t.Errorf("the hand-approved denied plan's report lacks %q:\n%s", want, refused)
		}
	}
	if ids := strings.Join(siteResources(t), ","); strings.Contains(ids, "Logs") {
		t.Errorf("a denied plan approved by hand created Logs: stack cli-site holds %s", ids)
	}

	// The same change pushed without a plan executes nothing.
	if code := cli(append([]string{"push", policyBundle(t, "site-public-logs.yaml"), "--deployment", "cli"}, waitArgs...)...); code != 1 {
		t.Fatalf("push of a denied change exited %d:\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "have the policy owner override each denied rule for that plan (`cairn policy override cli PLAN_ID RULE --reason TEXT`), then approve it") {
		t.Errorf("the denied push's next step does not say how to proceed:\n%s", stdout.String())
	}
	pushRun := regexp.MustCompile(`(?m)^report: s3://\S+/(runs/cli/\S+\.md)$`).FindStringSubmatch(stdout.String())
	if pushRun == nil {
		t.Fatalf("no report in:\n%s", stdout.String())
	}
	pushed := read(t, s3c, pushRun[1])
	for _, want := range []string{
		"denied by policy: deny cairn.s3_public (team policy) stack site, resource Logs",
		"nothing executed: fix the change and push again, or plan it",
		"and have the policy owner override the rule for that plan",
		"cairn policy override cli PLAN_ID RULE --reason TEXT",
		"| deny | `cairn.s3_public` | team | site | Logs |",
	} {
		if !strings.Contains(pushed, want) {
			t.Errorf("the denied push's report lacks %q:\n%s", want, pushed)
		}
	}
	if ids := strings.Join(siteResources(t), ","); strings.Contains(ids, "Logs") {
		t.Errorf("a denied push created Logs: stack cli-site holds %s", ids)
	}
}

// waitForRun waits for a run report of deployment that match says is the one awaited.
func waitForRun(t *testing.T, s3c *s3.Client, deployment string, match func(report string) bool) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		out, err := s3c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(localBucket), Prefix: aws.String(layout.RunsOf(deployment))})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			if k := aws.ToString(o.Key); strings.HasSuffix(k, ".md") {
				if r := read(t, s3c, k); match(r) {
					return r
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no run report of %s came within a minute", deployment)
	return ""
}
