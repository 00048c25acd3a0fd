package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/plan"
)

// The review flow of a team with several open pull requests, through the CLI as CI and
// people type it, against the emulator: plans of different pull requests coexist, and
// `cairn apply` of the merged content runs exactly the reviewed change sets made for it.

var reviewWait = []string{"--wait", "--poll", "20ms", "--timeout", "2m"}

// cli runs cairn with args and returns its exit code, stdout and stderr.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// mustCLI runs cairn with args, which must exit 0, and returns its stdout.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := cli(t, args...)
	if code != 0 {
		t.Fatalf("cairn %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// planPR plans dir for deployment as pull request pr and returns the plan.
func planPR(t *testing.T, deployment, dir, pr string) *plan.Document {
	t.Helper()
	out := mustCLI(t, append([]string{"plan", dir, "--deployment", deployment, "--pr", pr, "--format", "json"}, reviewWait...)...)
	var p plan.Document
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan of #%s: %v\n%s", pr, err, out)
	}
	if p.Status != plan.Planned {
		t.Fatalf("plan of #%s: %s (%s) %v", pr, p.Status, p.Reason, p.Refusals)
	}
	return &p
}

func changeSetIDs(p *plan.Document) []string {
	var ids []string
	for _, s := range p.Changing() {
		if s.ChangeSetID != "" {
			ids = append(ids, s.ChangeSetID)
		}
	}
	slices.Sort(ids)
	return ids
}

// applied runs `cairn apply dir` and returns its exit code and output with the change
// sets it created and executed.
func applied(t *testing.T, deployment, dir string) (code int, out string, created int, executed []string) {
	t.Helper()
	c0, e0 := changeSetsCreated(t), executedChangeSets(t)
	code, out, errOut := cli(t, append([]string{"apply", dir, "--deployment", deployment}, reviewWait...)...)
	executed = slices.Clone(executedChangeSets(t)[len(e0):])
	slices.Sort(executed)
	return code, out + errOut, changeSetsCreated(t) - c0, executed
}

// planStatus is the status `cairn plans` shows for plan id.
func planStatus(t *testing.T, deployment, id string) string {
	t.Helper()
	out := mustCLI(t, "plans", deployment)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + ` +(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("cairn plans %s does not list %s:\n%s", deployment, id, out)
	}
	return m[1]
}

// jobsBundle is the two-stack bundle with a third, independent stack jobs.
func jobsBundle(t *testing.T, topicName, jobsValue string) string {
	t.Helper()
	dir := bundleDir(t, "  - name: jobs\n    template_path: param.yaml\n    parameters:\n      Value: "+jobsValue+"\n")
	if topicName != "" {
		topic := "Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n    Properties:\n      DisplayName: " + topicName + "\nOutputs:\n  Arn:\n    Value: !Ref Topic\n"
		if err := os.WriteFile(filepath.Join(dir, "topic.yaml"), []byte(topic), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestTwoPullRequestsOnDifferentStacksBothApply: pull request #21 changes topic, #22
// changes jobs; both are planned before either merges, and both plans stay open. Each
// merge's `cairn apply` runs exactly its pull request's reviewed change set, creating
// none; a retried apply of applied content exits 0 and uploads nothing.
func TestTwoPullRequestsOnDifferentStacksBothApply(t *testing.T) {
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	t.Setenv("GITHUB_ACTIONS", "")
	mustCLI(t, append([]string{"push", jobsBundle(t, "", "v1"), "--deployment", "cli"}, reviewWait...)...)

	p21 := planPR(t, "cli", jobsBundle(t, "shop", "v1"), "21")
	p22 := planPR(t, "cli", jobsBundle(t, "", "v2"), "22")
	if got := [][]string{changeSetIDs(p21), changeSetIDs(p22)}; len(got[0]) != 1 || len(got[1]) != 1 || p21.Stack("topic").ChangeSetID == "" || p22.Stack("jobs").ChangeSetID == "" {
		t.Fatalf("plans: #21 %v, #22 %v", got[0], got[1])
	}
	if s := p21.Stack("param"); !s.InputsMayChange || !slices.Equal(s.KnownAfterApply, []string{"Value"}) || !slices.Equal(s.Feeds["Value"], []string{"P"}) {
		t.Errorf("#21's param reads topic's Arn: known after apply %v, feeds %v", s.KnownAfterApply, s.Feeds)
	}
	for _, p := range []*plan.Document{p21, p22} {
		if st := planStatus(t, "cli", p.ID); st != "planned" {
			t.Errorf("plan %s is %s with both pull requests open, want planned", p.ID, st)
		}
	}

	// #21 merges: main holds its content.
	code, out, created, executed := applied(t, "cli", checkout(t, jobsBundle(t, "shop", "v1"), timeAt(1)))
	t.Logf("merge of #21: exit %d, change sets created %d, executed %d %v (planned %v)\n%s", code, created, len(executed), executed, changeSetIDs(p21), out)
	if code != 0 || created != 0 || !slices.Equal(executed, changeSetIDs(p21)) {
		t.Fatalf("merge of #21: exit %d, created %d, executed %v; want 0, 0 and exactly %v\n%s", code, created, executed, changeSetIDs(p21), out)
	}
	if !strings.Contains(out, "plan "+p21.ID+" of pull request #21 (made ") || !strings.Contains(out, "its reviewed entries for param, topic") {
		t.Errorf("the apply does not say which plan it applied:\n%s", out)
	}
	if st := planStatus(t, "cli", p21.ID); st != "applied" {
		t.Errorf("plan of #21 after its merge: %s", st)
	}
	if st := planStatus(t, "cli", p22.ID); st != "planned" {
		t.Errorf("plan of #22 after #21 merged: %s, want planned (another stack)", st)
	}

	// #22 merges: main holds both changes.
	merged := checkout(t, jobsBundle(t, "shop", "v2"), timeAt(2))
	code, out, created, executed = applied(t, "cli", merged)
	t.Logf("merge of #22: exit %d, change sets created %d, executed %d %v (planned %v)\n%s", code, created, len(executed), executed, changeSetIDs(p22), out)
	if code != 0 || created != 0 || !slices.Equal(executed, changeSetIDs(p22)) {
		t.Fatalf("merge of #22: exit %d, created %d, executed %v; want 0, 0 and exactly %v\n%s", code, created, executed, changeSetIDs(p22), out)
	}
	if st := planStatus(t, "cli", p22.ID); st != "applied" {
		t.Errorf("plan of #22 after its merge: %s", st)
	}

	// The job retried after it succeeded: nothing to apply, exit 0, nothing uploaded.
	approved := approvals(t)
	code, out, created, executed = applied(t, "cli", merged)
	if code != 0 || !strings.Contains(out, "is already applied") || approvals(t) != approved || created != 0 || len(executed) != 0 {
		t.Errorf("apply retried: exit %d, %d uploads, created %d, executed %v\n%s", code, approvals(t)-approved, created, executed, out)
	}
	if out := mustCLI(t, "status", "cli"); strings.Contains(out, "behind:") {
		t.Errorf("status after both merges says behind:\n%s", out)
	}
}

// TestTwoPullRequestsOnOneStackSecondRefused: #21 and #22 both change jobs. #21 merges
// and applies; #22's merge is refused, naming the stack, why (#21 changed it after #22's
// plan) and the way forward, executing and creating nothing; status says the deployment
// is behind what was merged. The way forward: a plan of main's content, approved.
func TestTwoPullRequestsOnOneStackSecondRefused(t *testing.T) {
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	t.Setenv("GITHUB_ACTIONS", "")
	mustCLI(t, append([]string{"push", jobsBundle(t, "", "v1"), "--deployment", "cli"}, reviewWait...)...)
	p21 := planPR(t, "cli", jobsBundle(t, "", "v2"), "21")
	p22 := planPR(t, "cli", jobsBundle(t, "", "v3"), "22")

	if code, out, created, executed := applied(t, "cli", jobsBundle(t, "", "v2")); code != 0 || created != 0 || !slices.Equal(executed, changeSetIDs(p21)) {
		t.Fatalf("merge of #21: exit %d, created %d, executed %v\n%s", code, created, executed, out)
	}
	main := jobsBundle(t, "", "v3")
	code, out, created, executed := applied(t, "cli", main)
	t.Logf("merge of #22: exit %d, change sets created %d, executed %d\n%s", code, created, len(executed), out)
	want := regexp.MustCompile(`(?m)^  refused: stack jobs \(cli-jobs\): the plan of pull request #22 \(` + regexp.QuoteMeta(p22.ID) +
		`\) for stack jobs went stale: the stack was changed by pull request #21, plan ` + regexp.QuoteMeta(p21.ID) + ` \(run \S+\) at \d\d:\d\d:\d\d, after the plan \(\d\d:\d\d:\d\d; now UPDATE_COMPLETE, was CREATE_COMPLETE\): plan this content \(` +
		"`cairn plan PATH --deployment cli`; after a merge, the workflow's apply job does and posts it on the merged pull request\\), review that plan, then approve exactly it \\(`cairn approve cli PLAN_ID`: the workflow's gate\\)$")
	if code != 1 || created != 0 || len(executed) != 0 || !want.MatchString(out) {
		t.Fatalf("merge of #22: exit %d, created %d, executed %v; want exit 1, nothing created or executed, and the refusal %s\n%s", code, created, executed, want, out)
	}
	if st := planStatus(t, "cli", p22.ID); st != "stale" {
		t.Errorf("plan of #22: %s, want stale", st)
	}
	status := mustCLI(t, "status", "cli")
	if !regexp.MustCompile(`(?m)^behind: the content last merged \(cairn apply\) \(bundle sha256 [0-9a-f]{12}, run \S+: refused\) is not applied; the graph's applied content is bundle sha256 [0-9a-f]{12}$`).MatchString(status) {
		t.Errorf("status does not say the deployment is behind what was merged:\n%s", status)
	}
	// What CI posts again after the apply: #21's comment says applied, #22's stale, why
	// and what to do.
	dir := t.TempDir()
	if out := mustCLI(t, "plans", "cli", "--comments", dir); !strings.Contains(out, "21 "+filepath.Join(dir, "21.md")) || !strings.Contains(out, "22 "+filepath.Join(dir, "22.md")) {
		t.Errorf("plans --comments wrote:\n%s", out)
	}
	c21, c22 := readFile(t, filepath.Join(dir, "21.md")), readFile(t, filepath.Join(dir, "22.md"))
	if !strings.Contains(c21, " of deployment cli: applied\n") || !strings.Contains(c21, "- Next: applied by run ") {
		t.Errorf("#21's comment after its merge:\n%s", c21)
	}
	if !strings.Contains(c22, " of deployment cli: stale\n") || !regexp.MustCompile(`(?m)^- Reason: the plan of pull request #22 \(\S+\) for stack jobs went stale when pull request #21, plan `+regexp.QuoteMeta(p21.ID)+` \(run \S+\) changed it at \d\d:\d\d$`).MatchString(c22) ||
		!strings.Contains(c22, "- Next: this plan can no longer apply: ") {
		t.Errorf("#22's comment after #21 changed its stack:\n%s", c22)
	}

	// The reviewed way forward: main's content planned, and exactly that plan approved.
	pMain := planPR(t, "cli", main, "22")
	if st := planStatus(t, "cli", p22.ID); st != "superseded" {
		t.Errorf("#22's first plan after #22's content was planned again: %s", st)
	}
	c0, e0 := changeSetsCreated(t), len(executedChangeSets(t))
	out = mustCLI(t, append([]string{"approve", "cli", pMain.ID}, reviewWait...)...)
	if n, ran := changeSetsCreated(t)-c0, executedChangeSets(t)[e0:]; n != 0 || !slices.Equal(ran, changeSetIDs(pMain)) {
		t.Errorf("approve of main's plan: created %d, executed %v, want 0 and %v\n%s", n, ran, changeSetIDs(pMain), out)
	}
	if out := mustCLI(t, "status", "cli"); strings.Contains(out, "behind:") {
		t.Errorf("status after the gate still says behind:\n%s", out)
	}
}

// timeAt is the file time of the n-th checkout a test makes.
func timeAt(n int) time.Time { return time.Date(2030, 1, 1, n, 0, 0, 0, time.UTC) }

// webshop copies the README's sample bundle, with edits (old → new) made to files of it.
func webshop(t *testing.T, edits ...[3]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(testBundles, "webshop"))); err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		path := filepath.Join(dir, e[0])
		body := readFile(t, path)
		if !strings.Contains(body, e[1]) {
			t.Fatalf("%s holds no %q", e[0], e[1])
		}
		if err := os.WriteFile(path, []byte(strings.Replace(body, e[1], e[2], 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// deployWebshop plans and approves the webshop (its database is protected) in a world
// whose ports function answers the service's port and whose deployer seals with its key.
func deployWebshop(t *testing.T) {
	t.Helper()
	deployEmulatorWith(t, emulatorOptions{step: 500 * time.Millisecond, ports: true, keyed: true})
	t.Setenv("CAIRN_BUCKET", localBucket)
	t.Setenv("GITHUB_ACTIONS", "")
	first := planPR(t, "shop", webshop(t), "1")
	mustCLI(t, append([]string{"approve", "shop", first.ID}, reviewWait...)...)
}

// secretArn is the value of the database's SecretArn output: what the service's NoEcho
// DatabaseSecretArn parameter is given.
func secretArn(t *testing.T) string {
	t.Helper()
	cfg, err := awsclient.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out, err := cloudformation.NewFromConfig(cfg).DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String("shop-database")})
	if err != nil || len(out.Stacks) != 1 {
		t.Fatalf("describe shop-database: %v", err)
	}
	for _, o := range out.Stacks[0].Outputs {
		if aws.ToString(o.OutputKey) == "SecretArn" && strings.Contains(aws.ToString(o.OutputValue), "secret") {
			return aws.ToString(o.OutputValue)
		}
	}
	t.Fatalf("shop-database has no SecretArn output: %+v", out.Stacks[0].Outputs)
	return ""
}

// TestWebshopServiceThroughPlanAndApprove: the README's sample changes its service (whose
// DatabaseSecretArn is NoEcho) through plan → approve: the reviewed change set runs, none
// is created; the comment shows the image old → new and never the secret; `cairn diff`
// is clean right after. A plan whose consumed secret changed since is refused saying so
// with ****, never the value.
func TestWebshopServiceThroughPlanAndApprove(t *testing.T) {
	deployWebshop(t)
	arn := secretArn(t)
	bump := webshop(t, [3]string{"cairn.yaml", "nginx:1.27", "nginx:1.28"})
	var outputs []string
	md := mustCLI(t, append([]string{"plan", bump, "--deployment", "shop", "--pr", "2", "--format", "md"}, reviewWait...)...)
	outputs = append(outputs, md)
	p := planPR(t, "shop", bump, "2")
	svc := p.Stack("service")
	if svc == nil || svc.Action != plan.Update || svc.ChangeSetID == "" || len(p.Changing()) != 1 {
		t.Fatalf("plan of the image bump: %+v, changing %d", svc, len(p.Changing()))
	}
	if !strings.Contains(md, "| Image | `public.ecr.aws/nginx/nginx:1.27` | `public.ecr.aws/nginx/nginx:1.28` |") {
		t.Errorf("the comment lacks the image change old → new:\n%s", md)
	}
	c0, e0 := changeSetsCreated(t), len(executedChangeSets(t))
	out := mustCLI(t, append([]string{"approve", "shop", p.ID}, reviewWait...)...)
	outputs = append(outputs, out)
	created, ran := changeSetsCreated(t)-c0, executedChangeSets(t)[e0:]
	t.Logf("webshop service through plan → approve: change sets created %d, executed %d %v (planned %s)\n%s", created, len(ran), ran, svc.ChangeSetID, out)
	if created != 0 || !slices.Equal(ran, []string{svc.ChangeSetID}) {
		t.Fatalf("approve: created %d, executed %v; want 0 and exactly %s", created, ran, svc.ChangeSetID)
	}
	code, diff, errOut := cli(t, "diff", bump, "--deployment", "shop")
	outputs = append(outputs, diff, errOut)
	if code != 0 || !strings.Contains(diff, "0 changed, 0 new, 0 removed, 5 unchanged") {
		t.Errorf("cairn diff right after the apply: exit %d\n%s%s", code, diff, errOut)
	}

	// A plan of the service whose consumed secret changes before it is approved.
	again := webshop(t, [3]string{"cairn.yaml", "nginx:1.27", "nginx:1.29"})
	p2 := planPR(t, "shop", again, "3")
	// Outside cairn, the database is replaced: its secret is a new one.
	updateOutside(t, "shop-database", strings.Replace(readFile(t, filepath.Join(again, "templates", "database.yaml")), "MasterUsername: shop", "MasterUsername: shop2", 1))
	rotated := secretArn(t)
	if rotated == arn {
		t.Fatal("the database's replacement kept its secret")
	}
	c0, e0 = changeSetsCreated(t), len(executedChangeSets(t))
	code, out, errOut = cli(t, append([]string{"approve", "shop", p2.ID}, reviewWait...)...)
	outputs = append(outputs, out, errOut)
	t.Logf("approve after the secret changed: exit %d, created %d, executed %d\n%s%s", code, changeSetsCreated(t)-c0, len(executedChangeSets(t))-e0, out, errOut)
	if code != 1 || !strings.Contains(out, "for stack service went stale: the outputs it consumes changed since the plan: ") || !strings.Contains(out, "database::SecretArn was ****, now ****") ||
		changeSetsCreated(t) != c0 || len(executedChangeSets(t)) != e0 {
		t.Errorf("approve of a plan whose consumed secret changed: exit %d; want refused, saying so with ****, nothing executed\n%s", code, out)
	}
	outputs = append(outputs, mustCLI(t, "plans", "shop", p2.ID, "--format", "md"), mustCLI(t, "plans", "shop", p2.ID), mustCLI(t, "status", "shop"))
	for _, o := range outputs {
		for _, secret := range []string{arn, rotated} {
			if strings.Contains(o, secret) {
				t.Errorf("the NoEcho value %s is printed:\n%s", secret, o)
			}
		}
	}
}

// updateOutside updates a stack with another template, as someone outside cairn would,
// keeping its parameters, and waits for the update to end.
func updateOutside(t *testing.T, stack, body string) {
	t.Helper()
	ctx := context.Background()
	cfg, err := awsclient.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := cloudformation.NewFromConfig(cfg)
	out, err := c.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil {
		t.Fatal(err)
	}
	var params []cfntypes.Parameter
	for _, p := range out.Stacks[0].Parameters {
		params = append(params, cfntypes.Parameter{ParameterKey: p.ParameterKey, UsePreviousValue: aws.Bool(true)})
	}
	if _, err := c.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String(stack), TemplateBody: aws.String(body), Parameters: params}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		out, err := c.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
		if err != nil {
			t.Fatal(err)
		}
		if st := string(out.Stacks[0].StackStatus); !strings.HasSuffix(st, "_IN_PROGRESS") {
			if st != "UPDATE_COMPLETE" {
				t.Fatalf("%s: %s", stack, st)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not settle", stack)
		}
	}
}

// TestRippleFromAReplacedUpstream: a plan that replaces the shop's VPC (its CIDR block
// changes) knows the inputs of the stacks reading the network's outputs only after apply.
// Its approval applies the network's reviewed change set, then, for each stack whose
// inputs came out otherwise, a change set of the new values, run because those explain
// every change in it; but the protected database, whose change set would replace its
// security group (and, conditionally, the database), stops for review with what reads it,
// and the plan of what stopped, which shows the replacement, applies it. A second plan also edits the cache's own template:
// at apply the cache's change set holds more than its inputs explain, so the cache stops
// (and what reads it), and its content is planned again for review, which applies it.
func TestRippleFromAReplacedUpstream(t *testing.T) {
	deployWebshop(t)
	cidr := [3]string{"cairn.yaml", "CidrBlock: 10.20.0.0/16", "CidrBlock: 10.30.0.0/16"}
	p := planPR(t, "shop", webshop(t, cidr), "4")
	if s := p.Stack("network"); s.Action != plan.Update || s.Replacements() == 0 {
		t.Fatalf("network %+v: want an update replacing the VPC", s)
	}
	for name, want := range map[string][]string{"cache": {"SubnetIds", "VpcId"}, "database": {"SubnetIds", "VpcId"}, "service": {"PrivateSubnetIds", "PublicSubnetIds", "VpcId"}} {
		if s := p.Stack(name); !s.InputsMayChange || !slices.Equal(s.KnownAfterApply, want) || len(s.Feeds["VpcId"]) == 0 {
			t.Errorf("%s: known after apply %v (feeds %v), want %v", name, s.KnownAfterApply, s.Feeds, want)
		}
	}
	md := mustCLI(t, "plans", "shop", p.ID, "--format", "md")
	if !strings.Contains(md, "> **Known after apply:** its parameters `SubnetIds` (feeds SubnetGroup), `VpcId` (feeds SecurityGroup) read outputs of stacks this plan changes.") {
		t.Errorf("the comment does not say what is known after apply:\n%s", md)
	}
	c0, e0 := changeSetsCreated(t), len(executedChangeSets(t))
	code, out, errOut := cli(t, append([]string{"approve", "shop", p.ID}, reviewWait...)...)
	created, ran := changeSetsCreated(t)-c0, executedChangeSets(t)[e0:]
	t.Logf("ripple applied in one approve: exit %d, change sets created %d, executed %d\n%s%s", code, created, len(ran), out, errOut)
	// The database is protected: its ripple would replace its security group (and,
	// conditionally, the database), which no plan showed, so it stops for review with
	// what reads it; the cache's ripple, explained by its inputs, runs.
	protectedStops := regexp.MustCompile(`(?m)^  \d\d:\d\d  database +update +failed: stack shop-database: stopped: .* the protected stack would have resources replaced, which no reviewed plan showed: .*SecurityGroup \(AWS::EC2::SecurityGroup\): Replacement True`)
	if code != 1 || len(ran) < 2 || ran[0] != p.Stack("network").ChangeSetID || !protectedStops.MatchString(out) || slices.Contains(ran, p.Stack("database").ChangeSetID) {
		t.Fatalf("approve: exit %d, created %d, executed %v; want the network's reviewed change set first, the cache's ripple run and the protected database stopped", code, created, ran)
	}
	// Its new plan shows the replacement; approved, it applies the database and the rest.
	again := replanOf(t, out)
	if db := again.Stack("database"); again.Status != plan.Planned || db.Action != plan.Update || db.Replacements() == 0 {
		t.Fatalf("the plan of the stopped stacks: %s (%s); database %+v: want its replacement shown", again.Status, again.Reason, db)
	}
	out = mustCLI(t, append([]string{"approve", "shop", again.ID}, reviewWait...)...)
	if !regexp.MustCompile(`(?m)^run \S+ succeeded in \S+: 0 created, \d updated, 0 deleted, \d unchanged, 0 failed$`).MatchString(out) {
		t.Errorf("approve of the reviewed replacement does not end in success:\n%s", out)
	}
	if code, diff, _ := cli(t, "diff", webshop(t, cidr), "--deployment", "shop"); code != 0 {
		t.Errorf("cairn diff after the ripple: exit %d\n%s", code, diff)
	}

	// The VPC is replaced again, and the cache's own template changes too.
	cidr2 := [3]string{"cairn.yaml", "CidrBlock: 10.20.0.0/16", "CidrBlock: 10.40.0.0/16"}
	own := [3]string{"templates/cache.yaml", "GroupDescription: Redis from inside the VPC", "GroupDescription: Redis from the shops VPC"}
	p2 := planPR(t, "shop", webshop(t, cidr2, own), "5")
	if s := p2.Stack("cache"); s.Action != plan.Update || !s.InputsMayChange || s.ChangeSetID == "" {
		t.Fatalf("cache %+v: want its own update, known after apply", s)
	}
	c0, e0 = changeSetsCreated(t), len(executedChangeSets(t))
	code, out, errOut = cli(t, append([]string{"approve", "shop", p2.ID}, reviewWait...)...)
	created, ran = changeSetsCreated(t)-c0, executedChangeSets(t)[e0:]
	t.Logf("ripple exceeding its inputs: exit %d, change sets created %d, executed %d\n%s%s", code, created, len(ran), out, errOut)
	stopped := regexp.MustCompile(`(?m)^  \d\d:\d\d  cache +update +failed: stack shop-cache: stopped: its inputs SubnetIds, VpcId came out of the apply with other values than planned, and its change set cairn-\S+ holds more than they explain: .*SecurityGroup \(AWS::EC2::SecurityGroup\): Modify from DirectModification; it was not executed: review it in a new plan$`)
	replan := regexp.MustCompile("(?m)^  note: stopped stacks are planned again for review against the stacks as this run left them: plan (\\S+) \\(`cairn plans shop \\S+`\\), then `cairn approve shop \\S+`$")
	m := replan.FindStringSubmatch(out)
	if code != 1 || !stopped.MatchString(out) || m == nil || slices.Contains(ran, p2.Stack("cache").ChangeSetID) {
		t.Fatalf("approve: exit %d; want the cache stopped, its change set not executed, and a new plan named\n%s", code, out)
	}
	// The new plan of what stopped is made against the stacks as they are now: reviewed,
	// then approved, it applies the cache and what reads it.
	again = replanOf(t, out)
	if again.Status != plan.Planned || again.Stack("cache").Action != plan.Update || again.Stack("network").Action != plan.None {
		t.Fatalf("the plan of the stopped stacks: %s (%s); cache %+v", again.Status, again.Reason, again.Stack("cache"))
	}
	out = mustCLI(t, append([]string{"approve", "shop", again.ID}, reviewWait...)...)
	if code, diff, _ := cli(t, "diff", webshop(t, cidr2, own), "--deployment", "shop"); code != 0 {
		t.Errorf("cairn diff after the new plan's approval: exit %d\n%s\n%s", code, diff, out)
	}
}

// replanOf is the plan of the stopped stacks an apply's output names, once it is made.
func replanOf(t *testing.T, out string) *plan.Document {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  note: stopped stacks are planned again for review against the stacks as this run left them: plan (\S+) `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the apply names no plan of its stopped stacks:\n%s", out)
	}
	var again plan.Document
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if code, js, _ := cli(t, "plans", "shop", m[1], "--format", "json"); code == 0 && json.Unmarshal([]byte(js), &again) == nil && again.Status != "" {
			return &again
		}
		if time.Now().After(deadline) {
			t.Fatalf("plan %s of the stopped stacks was never made", m[1])
		}
	}
}

// TestReadersOfTheAppliedBundleAfterApply: a bundle applied by `cairn apply` is kept in
// approvals/NAME.zip (the push's in deployments/, a plan's in plans/); every reader of the
// applied bundle finds it there: diff compares templates (not hashes), rollback and
// destroy plan from it. Status is behind exactly when the content last pushed or merged is
// not applied: not after a push then an approved plan of newer content, nor after a
// refused merge is reverted to the applied content.
func TestReadersOfTheAppliedBundleAfterApply(t *testing.T) {
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	t.Setenv("GITHUB_ACTIONS", "")
	v := func(n int) string { return checkout(t, jobsBundle(t, "", fmt.Sprintf("v%d", n)), timeAt(n)) }
	notBehind := func(t *testing.T) {
		t.Helper()
		if out := mustCLI(t, "status", "cli"); strings.Contains(out, "behind:") {
			t.Errorf("status says behind:\n%s", out)
		}
	}
	steps := []struct {
		name  string
		args  func() []string
		code  int
		want  []string // regular expressions, each matching a line of the output
		check func(t *testing.T)
	}{
		{"push v1", func() []string { return append([]string{"push", v(1), "--deployment", "cli"}, reviewWait...) }, 0, nil, notBehind},
		{"plan v2 and approve it", func() []string {
			return append([]string{"approve", "cli", planPR(t, "cli", v(2), "21").ID}, reviewWait...)
		}, 0, []string{`succeeded`}, notBehind},
		{"plan v3, then apply it", func() []string {
			planPR(t, "cli", v(3), "22")
			return append([]string{"apply", v(3), "--deployment", "cli"}, reviewWait...)
		}, 0, []string{`succeeded`}, notBehind},
		{"plan v4, then apply it", func() []string {
			planPR(t, "cli", v(4), "23")
			return append([]string{"apply", v(4), "--deployment", "cli"}, reviewWait...)
		}, 0, []string{`succeeded`}, notBehind},
		{"diff of the applied content", func() []string { return []string{"diff", v(4), "--deployment", "cli"} }, 0,
			[]string{`^deployment cli: .* against graph cli/cli at generation \d+ \(bundle version …\S{8}\)$`, `^0 changed, 0 new, 0 removed, 3 unchanged$`}, nil},
		{"diff of other content", func() []string { return []string{"diff", v(5), "--deployment", "cli"} }, 1,
			[]string{`^stack jobs \(cli-jobs\): changed$`, `^  ~ Value: v4 -> v5$`, `^1 changed, 0 new, 0 removed, 2 unchanged$`}, nil},
		{"rollback to v3, applied by cairn apply", func() []string { return append([]string{"rollback", "cli"}, reviewWait...) }, 0,
			[]string{`^planning bundle version …\S{8} \(git -\) of deployment cli as `, `^jobs +cli-jobs +update`}, nil},
		{"destroy", func() []string { return append([]string{"destroy", "cli"}, reviewWait...) }, 0, []string{`^! delete stack cli-jobs`}, nil},
		{"an unreviewed merge is refused", func() []string { return append([]string{"apply", v(5), "--deployment", "cli"}, reviewWait...) }, 1, []string{`refused: stack jobs`},
			func(t *testing.T) {
				if out := mustCLI(t, "status", "cli"); !strings.Contains(out, "\nbehind: the content last merged (cairn apply)") {
					t.Errorf("status after a refused merge does not say behind:\n%s", out)
				}
			}},
		{"its revert", func() []string { return append([]string{"apply", v(4), "--deployment", "cli"}, reviewWait...) }, 0,
			[]string{`is applied, but the content last merged \(bundle sha256 [0-9a-f]{12}, run \S+: refused\) is not: applying this content again`, `succeeded`}, notBehind},
		{"the revert retried", func() []string { return append([]string{"apply", v(4), "--deployment", "cli"}, reviewWait...) }, 0, []string{`is already applied .*: nothing to apply$`}, notBehind},
	}
	for _, st := range steps {
		args := st.args()
		code, out, errOut := cli(t, args...)
		if code != st.code {
			t.Errorf("%s: cairn %s exited %d, want %d\n%s%s", st.name, strings.Join(args, " "), code, st.code, out, errOut)
			continue
		}
		for _, re := range st.want {
			if !regexp.MustCompile(`(?m)` + re).MatchString(out + errOut) {
				t.Errorf("%s: no line matches %s:\n%s%s", st.name, re, out, errOut)
			}
		}
		if strings.Contains(out+errOut, "compared by hash only") || strings.Contains(out+errOut, "is in neither") {
			t.Errorf("%s: the applied bundle was not found:\n%s%s", st.name, out, errOut)
		}
		if st.check != nil {
			st.check(t)
		}
	}
}

// orderBundle is the topic → param bundle with topic's properties and param's
// description as given: what the merge-order tests' pull requests change.
func orderBundle(t *testing.T, topicProps, description string) string {
	t.Helper()
	dir := bundleDir(t, "")
	topic := "Resources:\n  Topic:\n    Type: AWS::SNS::Topic\n    Properties:\n" + topicProps + "Outputs:\n  Arn:\n    Value: !Ref Topic\n"
	param := "Parameters:\n  Value:\n    Type: String\nResources:\n  P:\n    Type: AWS::SSM::Parameter\n    Properties:\n      Type: String\n      Value: !Ref Value\n      Description: " + description + "\n"
	for name, body := range map[string]string{"topic.yaml": topic, "param.yaml": param} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestUpstreamMergedAfterItsConsumer: #21 changes topic (so param's inputs are known
// after apply), #22 changes param itself. #22 merges and applies first; then #21 merges.
// Its plan showed param as known after apply for param's older content: judged against
// param as applied, the apply runs. Where topic's change leaves its Arn alone, param's
// inputs come out unchanged and nothing is made for it (the reviewed change set of #21
// runs, and only it); where topic is replaced (a new Arn), param gets a change set of the
// new value that the value explains, and it runs. Before, either order's second merge was
// refused for want of a plan of param's new content. #21's comment says planned, not
// stale, after #22 applied, since it then applies.
func TestUpstreamMergedAfterItsConsumer(t *testing.T) {
	for _, tc := range []struct {
		name, topic21 string
		created       int // change sets the second apply makes: param's, when its Value changes
	}{
		{"topic updated in place", "      TopicName: orders\n      DisplayName: orders-21\n", 0},
		{"topic replaced", "      TopicName: orders-21\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deployWorld(t)
			t.Setenv("CAIRN_BUCKET", localBucket)
			t.Setenv("GITHUB_ACTIONS", "")
			base := "      TopicName: orders\n"
			mustCLI(t, append([]string{"push", orderBundle(t, base, "v1"), "--deployment", "cli"}, reviewWait...)...)
			p21 := planPR(t, "cli", orderBundle(t, tc.topic21, "v1"), "21")
			p22 := planPR(t, "cli", orderBundle(t, base, "v22"), "22")
			if s := p21.Stack("param"); s == nil || !s.InputsMayChange {
				t.Fatalf("#21's plan does not show param as known after apply: %+v", s)
			}

			// #22 merges first: param changes.
			if code, out, created, executed := applied(t, "cli", orderBundle(t, base, "v22")); code != 0 || created != 0 || !slices.Equal(executed, changeSetIDs(p22)) {
				t.Fatalf("merge of #22: exit %d, created %d, executed %v\n%s", code, created, executed, out)
			}
			dir := t.TempDir()
			mustCLI(t, "plans", "cli", "--comments", dir)
			if c21 := readFile(t, filepath.Join(dir, "21.md")); !strings.Contains(c21, " of deployment cli: planned\n") {
				t.Errorf("#21's comment after #22 applied, though #21 still applies:\n%s", c21)
			}

			// #21 merges: main holds both.
			code, out, created, executed := applied(t, "cli", orderBundle(t, tc.topic21, "v22"))
			t.Logf("merge of #21 after #22: exit %d, created %d, executed %v\n%s", code, created, executed, out)
			if code != 0 || created != tc.created || len(executed) != 1+tc.created || !slices.Contains(executed, p21.Stack("topic").ChangeSetID) {
				t.Fatalf("merge of #21 after #22: exit %d, created %d, executed %v; want 0, %d, and #21's change set %s (+ param's)\n%s",
					code, created, executed, tc.created, p21.Stack("topic").ChangeSetID, out)
			}
			if st := planStatus(t, "cli", p21.ID); st != "applied" {
				t.Errorf("#21's plan after its merge: %s", st)
			}
			if out := mustCLI(t, "status", "cli"); strings.Contains(out, "behind:") {
				t.Errorf("status after both merges says behind:\n%s", out)
			}
		})
	}
}

// TestFailedApplyCommentSaysFailed: the apply of #21's reviewed change set fails in
// CloudFormation; the plan is recorded as apply-failed, and the comment CI posts again
// says so, with where to look and what to do, never "applied".
func TestFailedApplyCommentSaysFailed(t *testing.T) {
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	t.Setenv("GITHUB_ACTIONS", "")
	mustCLI(t, append([]string{"push", jobsBundle(t, "", "v1"), "--deployment", "cli"}, reviewWait...)...)
	p21 := planPR(t, "cli", jobsBundle(t, "", "v2"), "21")
	resp, err := http.Post(os.Getenv("AWS_ENDPOINT_URL")+"/_local/cloudformation/faults", "application/json",
		strings.NewReader(`{"stack":"cli-jobs","logicalId":"P","operation":"UPDATE","reason":"Parameter value is not valid","count":1}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("inject fault: %v %v", err, resp)
	}
	resp.Body.Close()
	code, out, _, executed := applied(t, "cli", jobsBundle(t, "", "v2"))
	if code == 0 || !slices.Equal(executed, changeSetIDs(p21)) {
		t.Fatalf("merge of #21 with a failing update: exit %d, executed %v\n%s", code, executed, out)
	}
	if st := planStatus(t, "cli", p21.ID); st != "apply-failed" {
		t.Errorf("plan of #21 after its apply failed: %s, want apply-failed", st)
	}
	dir := t.TempDir()
	mustCLI(t, "plans", "cli", "--comments", dir)
	c21 := readFile(t, filepath.Join(dir, "21.md"))
	if !strings.Contains(c21, " of deployment cli: apply-failed\n") || !strings.Contains(c21, "- Next: its apply failed (the apply run ") ||
		!strings.Contains(c21, "`cairn status cli` says which stacks failed") || strings.Contains(c21, ": applied\n") {
		t.Errorf("#21's comment after its apply failed:\n%s", c21)
	}
	// It does not apply again: a plan applies at most once.
	if code, out, errOut := cli(t, append([]string{"approve", "cli", p21.ID}, reviewWait...)...); code == 0 || !strings.Contains(out+errOut, "a plan applies at most once") {
		t.Errorf("approve of a plan whose apply failed: exit %d\n%s%s", code, out, errOut)
	}
}
