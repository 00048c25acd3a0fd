package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	"pgregory.net/rapid"

	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
)

// The example workflow of docs/review.md and the composite action, run as GitHub Actions runs
// them: each job's steps in order, `run:` steps in bash with the job's environment
// files (GITHUB_OUTPUT, GITHUB_PATH, GITHUB_STEP_SUMMARY), the action's steps with its
// inputs, and ${{ }} expressions read from the contexts. Steps of other actions are
// played by the test: checkout copies a checkout of the repository into the workspace;
// setup-go and configure-aws-credentials have nothing to do (go is on PATH, and the
// environment points at the emulator).

type ghStep struct {
	Name  string            `yaml:"name"`
	ID    string            `yaml:"id"`
	If    string            `yaml:"if"`
	Uses  string            `yaml:"uses"`
	Run   string            `yaml:"run"`
	Shell string            `yaml:"shell"`
	With  map[string]string `yaml:"with"`
	Env   map[string]string `yaml:"env"`
}

type ghWorkflow struct {
	On          map[string]any   `yaml:"on"`
	Concurrency *ghConcurrency   `yaml:"concurrency"`
	Jobs        map[string]ghJob `yaml:"jobs"`
}

type ghJob struct {
	If          string            `yaml:"if"`
	Needs       any               `yaml:"needs"`
	Environment any               `yaml:"environment"`
	Concurrency *ghConcurrency    `yaml:"concurrency"`
	Outputs     map[string]string `yaml:"outputs"`
	Steps       []ghStep          `yaml:"steps"`
}

type ghConcurrency struct {
	Group            string `yaml:"group"`
	CancelInProgress bool   `yaml:"cancel-in-progress"`
}

type ghAction struct {
	Inputs map[string]struct {
		Default  string `yaml:"default"`
		Required bool   `yaml:"required"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Value string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string   `yaml:"using"`
		Steps []ghStep `yaml:"steps"`
	} `yaml:"runs"`
}

// docsWorkflow is the example workflow of docs/review.md ("Plan on the pull request, apply
// on merge"): the yaml block that starts "name: cairn".
func docsWorkflow(t *testing.T) ghWorkflow {
	t.Helper()
	readme := readFile(t, filepath.Join(repoRoot, "docs", "review.md"))
	_, rest, ok := strings.Cut(readme, "```yaml\nname: cairn\n")
	block, _, closed := strings.Cut(rest, "\n```\n")
	if !ok || !closed {
		t.Fatal("docs/review.md has no example workflow (a ```yaml block starting with name: cairn)")
	}
	var w ghWorkflow
	if err := yaml.Unmarshal([]byte("name: cairn\n"+block), &w); err != nil {
		t.Fatalf("the workflow of docs/review.md: %v", err)
	}
	return w
}

// runner runs jobs of a workflow.
type runner struct {
	t *testing.T
	// env is the job's environment before its steps: the emulator's, GITHUB_*, RUNNER_TEMP.
	env map[string]string
	// github is the github context; source the checkout actions/checkout gives.
	github map[string]any
	source string
	// path is what GITHUB_PATH added; out everything the steps printed.
	path []string
	out  bytes.Buffer
}

// expression evaluates the ${{ }} expressions in s: a context path such as inputs.path,
// github.event.pull_request.number or steps.cairn.outputs.plan-id ("" when absent).
func expression(s string, contexts map[string]any) string {
	return regexp.MustCompile(`\$\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}`).ReplaceAllStringFunc(s, func(m string) string {
		path := strings.TrimSpace(m[3 : len(m)-2])
		var v any = contexts
		for _, k := range strings.Split(path, ".") {
			mv, ok := v.(map[string]any)
			if !ok {
				return ""
			}
			v = mv[k]
		}
		switch x := v.(type) {
		case nil:
			return ""
		case float64:
			return fmt.Sprint(int64(x))
		case string:
			return x
		default:
			return fmt.Sprint(x)
		}
	})
}

// value is the value of a context path such as github.event.pull_request.number (nil when
// absent).
func value(path string, contexts map[string]any) any {
	var v any = contexts
	for _, k := range strings.Split(path, ".") {
		mv, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mv[k]
	}
	return v
}

// condition evaluates a job's or step's if: as GitHub does, for the operators the
// workflows here use: ==, != (strings compared ignoring case), &&, ||, !, parentheses,
// 'string' literals, true, false and context paths. Empty is true.
func condition(t *testing.T, cond string, contexts map[string]any) bool {
	t.Helper()
	cond = strings.TrimSpace(cond)
	if c, ok := strings.CutPrefix(cond, "${{"); ok {
		cond = strings.TrimSuffix(strings.TrimSpace(c), "}}")
	}
	if strings.TrimSpace(cond) == "" {
		return true
	}
	tokens := regexp.MustCompile(`\s*('[^']*'|==|!=|&&|\|\||!|\(|\)|[A-Za-z0-9_.-]+)`).FindAllStringSubmatch(cond, -1)
	var toks []string
	for _, m := range tokens {
		toks = append(toks, m[1])
	}
	if strings.Join(toks, "") != strings.ReplaceAll(cond, " ", "") {
		t.Fatalf("if: %q holds what this test cannot evaluate", cond)
	}
	pos := 0
	peek := func() string {
		if pos < len(toks) {
			return toks[pos]
		}
		return ""
	}
	truthy := func(v any) bool {
		switch x := v.(type) {
		case nil:
			return false
		case bool:
			return x
		case string:
			return x != ""
		case float64:
			return x != 0
		}
		return true
	}
	str := func(v any) string {
		switch x := v.(type) {
		case nil:
			return ""
		case float64:
			return fmt.Sprint(int64(x))
		}
		return fmt.Sprint(v)
	}
	var or func() any
	operand := func() any {
		tok := peek()
		pos++
		switch {
		case tok == "(":
			v := or()
			if peek() != ")" {
				t.Fatalf("if: %q: no closing parenthesis", cond)
			}
			pos++
			return v
		case strings.HasPrefix(tok, "'"):
			return strings.Trim(tok, "'")
		case tok == "true", tok == "false":
			return tok == "true"
		}
		return value(tok, contexts)
	}
	var unary func() any
	unary = func() any {
		if peek() == "!" {
			pos++
			return !truthy(unary())
		}
		v := operand()
		if op := peek(); op == "==" || op == "!=" {
			pos++
			w := operand()
			return strings.EqualFold(str(v), str(w)) == (op == "==")
		}
		return v
	}
	and := func() any {
		v := unary()
		for peek() == "&&" {
			pos++
			w := unary()
			v = truthy(v) && truthy(w)
		}
		return v
	}
	or = func() any {
		v := and()
		for peek() == "||" {
			pos++
			w := and()
			v = truthy(v) || truthy(w)
		}
		return v
	}
	v := or()
	if pos != len(toks) {
		t.Fatalf("if: %q: left %v", cond, toks[pos:])
	}
	return truthy(v)
}

// errSkipped is a job whose if: is false: GitHub skips it.
var errSkipped = errors.New("skipped: its if is false")

// step runs one step and returns its outputs; a failed step fails the job (an error).
func (r *runner) step(s ghStep, contexts map[string]any, actionPath string) (map[string]string, error) {
	t := r.t
	switch {
	case s.Run != "":
		if s.Shell != "" && s.Shell != "bash" {
			t.Fatalf("step %q: shell %q, want bash", s.Name, s.Shell)
		}
		dir := t.TempDir()
		script := filepath.Join(dir, "step.sh")
		if err := os.WriteFile(script, []byte(expression(s.Run, contexts)), 0o755); err != nil {
			t.Fatal(err)
		}
		output, pathFile := filepath.Join(dir, "output"), filepath.Join(dir, "path")
		env := map[string]string{}
		for k, v := range r.env {
			env[k] = v
		}
		for k, v := range s.Env {
			env[k] = expression(v, contexts)
		}
		env["GITHUB_OUTPUT"], env["GITHUB_PATH"] = output, pathFile
		if actionPath != "" {
			env["GITHUB_ACTION_PATH"] = actionPath
		}
		env["PATH"] = strings.Join(append(slices.Clone(r.path), env["PATH"]), string(os.PathListSeparator))
		// GitHub's bash: bash --noprofile --norc -eo pipefail {0}, in the workspace.
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		cmd.Dir = r.env["GITHUB_WORKSPACE"]
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stdout, cmd.Stderr = &r.out, &r.out
		err := cmd.Run()
		if b, rerr := os.ReadFile(pathFile); rerr == nil {
			for _, p := range strings.Fields(string(b)) {
				r.path = append([]string{p}, r.path...)
			}
		}
		outputs := map[string]string{}
		if b, rerr := os.ReadFile(output); rerr == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if k, v, ok := strings.Cut(line, "="); ok {
					outputs[k] = v
				}
			}
		}
		if err != nil {
			return outputs, fmt.Errorf("step %q: %v", s.Name, err)
		}
		return outputs, nil
	case strings.HasPrefix(s.Uses, "actions/checkout@"):
		if err := os.CopyFS(r.env["GITHUB_WORKSPACE"], os.DirFS(r.source)); err != nil {
			t.Fatal(err)
		}
	case strings.HasPrefix(s.Uses, "actions/setup-go@"), strings.HasPrefix(s.Uses, "aws-actions/configure-aws-credentials@"):
	case strings.HasPrefix(s.Uses, "cairn-dev/cairn/.github/actions/cairn@"), s.Uses == "./.github/actions/cairn":
		return r.action(s, contexts)
	default:
		t.Fatalf("step %q uses %q, which this test cannot play", s.Name, s.Uses)
	}
	return nil, nil
}

// action runs the composite action of this repository with the step's inputs.
func (r *runner) action(s ghStep, outer map[string]any) (map[string]string, error) {
	t := r.t
	path, err := filepath.Abs(filepath.Join(repoRoot, ".github", "actions", "cairn"))
	if err != nil {
		t.Fatal(err)
	}
	var a ghAction
	if err := yaml.Unmarshal([]byte(readFile(t, filepath.Join(path, "action.yml"))), &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if a.Runs.Using != "composite" {
		t.Fatalf("action.yml runs using %q, want composite", a.Runs.Using)
	}
	inputs := map[string]any{}
	for name, in := range a.Inputs {
		v, ok := s.With[name]
		if !ok {
			if in.Required {
				t.Fatalf("the workflow does not give the action's required input %s", name)
			}
			v = in.Default
		}
		inputs[name] = expression(v, outer)
	}
	for name := range s.With {
		if _, ok := a.Inputs[name]; !ok {
			t.Fatalf("the workflow gives the action an input it does not have: %s", name)
		}
	}
	contexts := map[string]any{"github": r.github, "inputs": inputs}
	steps := map[string]any{}
	contexts["steps"] = steps
	for _, st := range a.Runs.Steps {
		out, err := r.step(st, contexts, path)
		if st.ID != "" {
			o := map[string]any{}
			for k, v := range out {
				o[k] = v
			}
			steps[st.ID] = map[string]any{"outputs": o}
		}
		if err != nil {
			return nil, err
		}
	}
	outputs := map[string]string{}
	for name, o := range a.Outputs {
		outputs[name] = expression(o.Value, contexts)
	}
	return outputs, nil
}

// job runs a job of the workflow on event, with the checkout source, and returns the
// outputs of its cairn step and whether it succeeded. needs holds the outputs of the jobs
// it needs, by job (the needs context).
func (r *runner) job(w ghWorkflow, name string, needs ...map[string]map[string]string) (map[string]string, error) {
	out, _, err := r.jobOutputs(w, name, needs...)
	return out, err
}

// jobOutputs is job, returning the job's own outputs (its outputs: evaluated) too.
func (r *runner) jobOutputs(w ghWorkflow, name string, needs ...map[string]map[string]string) (cairn, outputs map[string]string, err error) {
	job, ok := w.Jobs[name]
	if !ok {
		r.t.Fatalf("the workflow has no job %s", name)
	}
	needed := map[string]any{}
	for _, n := range needs {
		for j, o := range n {
			outs := map[string]any{}
			for k, v := range o {
				outs[k] = v
			}
			needed[j] = map[string]any{"outputs": outs}
		}
	}
	steps := map[string]any{}
	contexts := map[string]any{"github": r.github, "needs": needed, "steps": steps}
	if !condition(r.t, job.If, contexts) {
		return nil, nil, errSkipped
	}
	for _, s := range job.Steps {
		if !condition(r.t, s.If, contexts) {
			continue
		}
		out, err := r.step(s, contexts, "")
		if s.ID != "" {
			o := map[string]any{}
			for k, v := range out {
				o[k] = v
			}
			steps[s.ID] = map[string]any{"outputs": o}
		}
		if strings.Contains(s.Uses, "actions/cairn") {
			cairn = out
		}
		if err != nil {
			return cairn, nil, err
		}
	}
	outputs = map[string]string{}
	for k, v := range job.Outputs {
		outputs[k] = expression(v, contexts)
	}
	return cairn, outputs, nil
}

// newRunner prepares a job's runner: a workspace, RUNNER_TEMP, the GitHub variables of
// event with the payload, and the emulator's environment.
func newRunner(t *testing.T, source, event, ref, sha string, payload map[string]any) *runner {
	t.Helper()
	dir := t.TempDir()
	workspace, temp := filepath.Join(dir, "work"), filepath.Join(dir, "temp")
	for _, d := range []string{workspace, temp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	eventPath := filepath.Join(dir, "event.json")
	body, _ := json.Marshal(payload)
	if err := os.WriteFile(eventPath, body, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for k, v := range map[string]string{
		"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": eventPath,
		"GITHUB_REF": ref, "GITHUB_SHA": sha, "GITHUB_REPOSITORY": "shop/infra", "GITHUB_SERVER_URL": "https://github.com",
		"GITHUB_RUN_ID": "4242", "GITHUB_WORKSPACE": workspace, "RUNNER_TEMP": temp, "GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary.md"),
		"GITHUB_HEAD_REF": "", "GH_LOG": filepath.Join(dir, "gh.log"),
	} {
		env[k] = v
	}
	if pr, ok := payload["pull_request"].(map[string]any); ok {
		env["GITHUB_HEAD_REF"] = pr["head"].(map[string]any)["ref"].(string)
	}
	var ev any
	json.Unmarshal(body, &ev)
	return &runner{t: t, env: env, source: source, github: map[string]any{
		"event_name": event, "event": ev, "ref": ref, "sha": sha, "repository": "shop/infra", "token": "ghs_test", "workspace": workspace,
	}}
}

// fakeGH puts a gh on PATH that records its arguments and answers the listing of a pull
// request's comments with existing (the id of the comment with cairn's marker, or "").
func fakeGH(t *testing.T, r *runner, existing string) string {
	t.Helper()
	dir := t.TempDir()
	script := `#!/usr/bin/env bash
echo "$*" >> "$GH_LOG"
echo "token $GH_TOKEN" >> "$GH_LOG"
case "$*" in
*"/comments --jq"*) [ -n "$FAKE_GH_EXISTING" ] && echo "$FAKE_GH_EXISTING" ;;
*"/pulls --jq"*) [ -n "$FAKE_GH_PR" ] && echo "$FAKE_GH_PR" ;;
esac
for a in "$@"; do
  case "$a" in body=@*)
    cp "${a#body=@}" "$GH_LOG.body"
    n=1; while [ -e "$GH_LOG.$n" ]; do n=$((n+1)); done
    cp "${a#body=@}" "$GH_LOG.$n" ;;
  esac
done
exit 0
`
	if err := os.WriteFile(filepath.Join(dir, "gh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r.env["PATH"] = dir + string(os.PathListSeparator) + r.env["PATH"]
	r.env["FAKE_GH_EXISTING"] = existing
	r.env["FAKE_GH_PR"] = "7" // the pull request a pushed commit belongs to
	return r.env["GH_LOG"]
}

// bodies are the comment bodies gh posted, in order (fakeGH keeps each under GH_LOG.N).
func bodies(t *testing.T, log string) []string {
	t.Helper()
	var out []string
	for i := 1; ; i++ {
		b, err := os.ReadFile(fmt.Sprintf("%s.%d", log, i))
		if err != nil {
			return out
		}
		out = append(out, string(b))
	}
}

// TestGitHubWorkflow runs the workflow of docs/review.md, with the composite action's steps as
// written, against the emulator: the pull request's job plans and writes the comment (and
// posts or updates it when gh is there); the job of the merge's push, on another checkout
// of the same content with other file times, applies exactly the change sets planned,
// creates none, and updates the comment to applied; a merge with one more commit is
// refused, executing nothing, and its job plans main's content and posts it on the merged
// pull request, whose plan the gate job then approves and applies.
func TestGitHubWorkflow(t *testing.T) {
	for _, tool := range []string{"bash", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the workflow's steps need %s on PATH: %v", tool, err)
		}
	}
	w := docsWorkflow(t)
	if g := w.Jobs["gate"]; g.Needs != "apply" || g.Environment == nil {
		t.Fatalf("the workflow's gate: needs %v, environment %v; want it to need apply, in an environment", g.Needs, g.Environment)
	}
	for _, event := range []string{"pull_request", "push"} {
		if _, ok := w.On[event]; !ok {
			t.Fatalf("the workflow does not run on %s", event)
		}
	}
	deployWorld(t)
	t.Setenv("CAIRN_BUCKET", localBucket)
	t.Setenv("GITHUB_ACTIONS", "")

	// main as it is deployed: deploy/ of the repository, pushed.
	mainTree := t.TempDir()
	if err := os.CopyFS(filepath.Join(mainTree, "deploy"), os.DirFS(bundleDir(t, ""))); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"push", filepath.Join(mainTree, "deploy"), "--deployment", "shop", "--wait", "--poll", "20ms", "--timeout", "1m"}, &stdout, &stderr); code != 0 {
		t.Fatalf("push exited %d: %s %s", code, stdout.String(), stderr.String())
	}
	// The pull request changes a stack and adds one; GitHub's merge of it into main is what
	// its job checks out.
	merged := checkout(t, mainTree, time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	cfg := filepath.Join(merged, "deploy", "cairn.yaml")
	if err := os.WriteFile(cfg, []byte(readFile(t, cfg)+"  - name: extra\n    template_path: extra.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(merged, "deploy", "extra.yaml"), []byte("Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	topic := filepath.Join(merged, "deploy", "topic.yaml")
	if err := os.WriteFile(topic, []byte(strings.Replace(readFile(t, topic), "    Type: AWS::SNS::Topic\n", "    Type: AWS::SNS::Topic\n    Properties:\n      DisplayName: shop\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	mergeSHA, headSHA := "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	prEvent := map[string]any{"number": 7, "pull_request": map[string]any{"number": 7, "head": map[string]any{"ref": "add-extra", "sha": headSHA, "repo": map[string]any{"full_name": "shop/infra"}}}}

	// 1. The pull request's job, without gh: the plan is made and its comment is a file.
	pr := newRunner(t, merged, "pull_request", "refs/pull/7/merge", mergeSHA, prEvent)
	_, lookErr := exec.LookPath("gh")
	ghInstalled := lookErr == nil
	if ghInstalled {
		// This machine has a gh of its own: the job must not call it with a test token.
		t.Log("gh is installed here: the job without gh is played with a recording gh")
		fakeGH(t, pr, "")
	}
	outputs, err := pr.job(w, "plan")
	t.Logf("pull request job:\n%s", pr.out.String())
	if err != nil {
		t.Fatalf("the pull request's job failed: %v\n%s", err, pr.out.String())
	}
	id, commentFile := outputs["plan-id"], outputs["comment-file"]
	comment := readFile(t, commentFile)
	for _, want := range []string{report.CommentMarker("shop") + "\n# cairn plan " + id + " of deployment shop: planned\n",
		"- Source: commit 111111111111 (refs/pull/7/merge) of https://github.com/shop/infra, pull request #7 (add-extra, head 222222222222), [CI run](https://github.com/shop/infra/actions/runs/4242)\n",
		"```mermaid\nflowchart LR\n", "| extra | cli-extra | create | 1 | 0 |  |\n", "| topic | cli-topic | update | 1 | 0 |  |\n",
		"| param | cli-param | known after apply | - | 0 | known after apply |\n", "> **Known after apply:** its parameters `Value` (feeds P) read outputs of stacks this plan changes."} {
		if !strings.Contains(comment, want) {
			t.Errorf("the comment lacks %q:\n%s", want, comment)
		}
	}
	if !ghInstalled && !strings.Contains(pr.out.String(), "cairn: gh is not installed: the comment for pull request #7 is in "+commentFile) {
		t.Errorf("the job does not say where the comment is:\n%s", pr.out.String())
	}
	if summary := readFile(t, pr.env["GITHUB_STEP_SUMMARY"]); summary != comment {
		t.Errorf("the job summary is not the comment:\n%s", summary)
	}

	// 2. The same job again with gh: it posts the comment, then updates it. Each run made a
	// new plan of the pull request: the newest supersedes the older ones.
	for _, existing := range []string{"", "987654"} {
		again := newRunner(t, merged, "pull_request", "refs/pull/7/merge", mergeSHA, prEvent)
		log := fakeGH(t, again, existing)
		if _, err := again.job(w, "plan"); err != nil {
			t.Fatalf("the pull request's job with gh failed: %v\n%s", err, again.out.String())
		}
		calls := readFile(t, log)
		want := "api --silent -X POST repos/shop/infra/issues/7/comments -F body=@"
		if existing != "" {
			want = "api --silent -X PATCH repos/shop/infra/issues/comments/987654 -F body=@"
		}
		if !strings.Contains(calls, "api --paginate repos/shop/infra/issues/7/comments --jq .[] | select(.body | startswith(\""+report.CommentMarker("shop")+"\")) | .id\n") || !strings.Contains(calls, want) {
			t.Errorf("gh was called:\n%s\nwant the listing of the comments, then %q", calls, want)
		}
		if body := readFile(t, log+".body"); !strings.HasPrefix(body, report.CommentMarker("shop")+"\n") {
			t.Errorf("gh posted:\n%s", body)
		}
		if !strings.Contains(calls, "token ghs_test\n") {
			t.Errorf("gh did not get the job's token (the action's github-token, github.token by default):\n%s", calls)
		}
	}
	stdout.Reset()
	if code := run([]string{"plans", "shop", "--latest"}, &stdout, &stderr); code != 0 {
		t.Fatalf("plans --latest: %s", stderr.String())
	}
	id = strings.TrimSpace(stdout.String())
	planned := planChangeSets(t, id)

	// Pull request #8, open meanwhile, adds another stack: its plan's comment is what the
	// merge of #7 does not change, so the merge's job leaves it alone.
	other := checkout(t, mainTree, time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC))
	otherCfg := filepath.Join(other, "deploy", "cairn.yaml")
	if err := os.WriteFile(otherCfg, []byte(readFile(t, otherCfg)+"  - name: other\n    template_path: other.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "deploy", "other.yaml"), []byte("Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pr8 := newRunner(t, other, "pull_request", "refs/pull/8/merge", "8888888888888888888888888888888888888888",
		map[string]any{"number": 8, "pull_request": map[string]any{"number": 8, "head": map[string]any{"ref": "add-other", "sha": "8080808080808080808080808080808080808080", "repo": map[string]any{"full_name": "shop/infra"}}}})
	fakeGH(t, pr8, "")
	pr8Out, err := pr8.job(w, "plan")
	if err != nil {
		t.Fatalf("pull request #8's job failed: %v\n%s", err, pr8.out.String())
	}

	// 3. The merge's push: main now holds the merged content, in another checkout. The
	// comment of the pull request is updated: its plan is applied.
	mainMerged := checkout(t, merged, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	created, executed := changeSetsCreated(t), executedChangeSets(t)
	push := newRunner(t, mainMerged, "push", "refs/heads/main", "3333333333333333333333333333333333333333", map[string]any{"ref": "refs/heads/main"})
	log := fakeGH(t, push, "987654")
	outputs, jobOut, err := push.jobOutputs(w, "apply")
	t.Logf("push job:\n%s", push.out.String())
	if err != nil {
		t.Fatalf("the merge's job failed: %v\n%s", err, push.out.String())
	}
	newlyCreated, newlyExecuted := changeSetsCreated(t)-created, executedChangeSets(t)[len(executed):]
	t.Logf("apply on merge: change sets created %d, executed %d (%v), planned %d (%v)", newlyCreated, len(newlyExecuted), newlyExecuted, len(planned), planned)
	if outputs["plan-id"] != id || jobOut["replan-id"] != "" {
		t.Errorf("the merge applied plan %q (replan %q), want %s", outputs["plan-id"], jobOut["replan-id"], id)
	}
	slices.Sort(newlyExecuted)
	if newlyCreated != 0 || len(planned) != 2 || !slices.Equal(newlyExecuted, planned) {
		t.Errorf("apply on merge created %d change set(s) and executed %v; want 0 created and exactly the planned %v", newlyCreated, newlyExecuted, planned)
	}
	if !regexp.MustCompile(`(?m)^run \S+ succeeded in \S+: 1 created, 1 updated, 0 deleted, 1 unchanged, 0 failed$`).MatchString(push.out.String()) {
		t.Errorf("the merge's job does not show the apply run's summary:\n%s", push.out.String())
	}
	if b := bodies(t, log); len(b) != 1 || !strings.HasPrefix(b[0], report.CommentMarker("shop")+"\n# cairn plan "+id+" of deployment shop: applied\n") ||
		!strings.Contains(readFile(t, log), "api --silent -X PATCH repos/shop/infra/issues/comments/987654 -F body=@") {
		t.Errorf("the pull request's comment is not updated to applied: %d bodies\n%s", len(b), strings.Join(b, "\n---\n"))
	}
	stdout.Reset()
	if code := run([]string{"plans", "shop", pr8Out["plan-id"], "--format", "md"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "# cairn plan "+pr8Out["plan-id"]+" of deployment shop: planned\n") {
		t.Errorf("pull request #8's plan after the merge of #7 (exit %d):\n%s", code, stdout.String())
	}
	if calls := readFile(t, log); strings.Contains(calls, "issues/8/") {
		t.Errorf("the merge of #7 edited the comment of #8, whose plan it left as it was:\n%s", calls)
	}

	// 4. A merge with one more commit: content no plan was made for. The apply executes
	// nothing; the job plans main's content and posts it on the merged pull request, and
	// the gate approves exactly that plan.
	more := checkout(t, merged, time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC))
	queue := filepath.Join(more, "deploy", "extra.yaml")
	if err := os.WriteFile(queue, []byte(readFile(t, queue)+"    Properties:\n      DelaySeconds: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	created, executed = changeSetsCreated(t), executedChangeSets(t)
	refused := newRunner(t, more, "push", "refs/heads/main", "4444444444444444444444444444444444444444", map[string]any{"ref": "refs/heads/main"})
	log = fakeGH(t, refused, "987654")
	_, jobOut, err = refused.jobOutputs(w, "apply")
	t.Logf("push job of a merge with one more commit:\n%s", refused.out.String())
	replan := jobOut["replan-id"]
	if err != nil || replan == "" {
		t.Fatalf("the job of a merge with one more commit: %v, replan %q\n%s", err, replan, refused.out.String())
	}
	if !strings.Contains(refused.out.String(), "  refused: stack extra (cli-extra): no plan was made for this content of stack extra: plan this content") {
		t.Errorf("the refused job does not say why:\n%s", refused.out.String())
	}
	if len(executedChangeSets(t)) != len(executed) {
		t.Errorf("the refused merge executed change sets")
	}
	replanned := planChangeSets(t, replan)
	if n := changeSetsCreated(t) - created; n != len(replanned) {
		t.Errorf("the refused merge created %d change sets; want only the %d of the plan of main's content", n, len(replanned))
	}
	calls := readFile(t, log)
	if b := bodies(t, log); len(b) == 0 || !strings.HasPrefix(b[len(b)-1], report.CommentMarker("shop")+"\n# cairn plan "+replan+" of deployment shop: planned\n") ||
		!strings.Contains(calls, "api repos/shop/infra/commits/4444444444444444444444444444444444444444/pulls --jq .[0].number\n") {
		t.Errorf("the plan of main's content is not posted on the merged pull request:\n%s", calls)
	}
	if summary := readFile(t, refused.env["GITHUB_STEP_SUMMARY"]); !strings.Contains(summary, "# cairn plan "+replan+" of deployment shop: planned") {
		t.Errorf("the job summary lacks the plan of main's content:\n%s", summary)
	}
	gate := newRunner(t, more, "push", "refs/heads/main", "4444444444444444444444444444444444444444", map[string]any{"ref": "refs/heads/main"})
	fakeGH(t, gate, "987654")
	created, executed = changeSetsCreated(t), executedChangeSets(t)
	if _, err := gate.job(w, "gate", map[string]map[string]string{"apply": jobOut}); err != nil {
		t.Fatalf("the gate job failed: %v\n%s", err, gate.out.String())
	}
	t.Logf("gate job:\n%s", gate.out.String())
	ran := executedChangeSets(t)[len(executed):]
	slices.Sort(ran)
	if n := changeSetsCreated(t) - created; n != 0 || !slices.Equal(ran, replanned) {
		t.Errorf("the gate created %d change sets and executed %v; want 0 and exactly %v", n, ran, replanned)
	}
}

// planChangeSets are the ids of the change sets plan id holds, sorted.
func planChangeSets(t *testing.T, id string) []string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	var p plan.Document
	if code := run([]string{"plans", "shop", id, "--format", "json"}, &stdout, &stderr); code != 0 || json.Unmarshal(stdout.Bytes(), &p) != nil {
		t.Fatalf("plans shop %s: exit %d %s", id, code, stderr.String())
	}
	var ids []string
	for _, s := range p.Changing() {
		if s.ChangeSetID != "" {
			ids = append(ids, s.ChangeSetID)
		}
	}
	slices.Sort(ids)
	return ids
}

// concurrency is GitHub's documented handling of concurrency groups ("Control the
// concurrency of workflows and jobs", docs.github.com/en/actions/using-jobs/using-concurrency):
// a group (its name case-insensitive) holds at most one running and one pending job; a newly
// queued job cancels the pending one and takes its place, and with cancel-in-progress it
// cancels the running one too. A job in no group runs at once.
type concurrency struct {
	running, pending map[string]*ghRun
	done, cancelled  []*ghRun
	// stopped are the jobs cancelled while they ran.
	stopped []*ghRun
}

// ghRun is one job queued: the workflow's job, and for an apply the merge it applies.
type ghRun struct {
	job   string
	merge int
}

func (c *concurrency) queue(group string, cancel bool, r *ghRun) {
	if group == "" {
		c.done = append(c.done, r)
		return
	}
	group = strings.ToLower(group)
	switch {
	case c.running[group] == nil:
		c.running[group] = r
	case cancel:
		c.cancelled = append(c.cancelled, c.running[group])
		c.stopped = append(c.stopped, c.running[group])
		if p := c.pending[group]; p != nil {
			c.cancelled = append(c.cancelled, p)
			delete(c.pending, group)
		}
		c.running[group] = r
	default:
		if p := c.pending[group]; p != nil {
			c.cancelled = append(c.cancelled, p)
		}
		c.pending[group] = r
	}
}

// finish ends the running job of group, and starts its pending one.
func (c *concurrency) finish(group string) {
	if r := c.running[group]; r != nil {
		c.done = append(c.done, r)
		delete(c.running, group)
	}
	if p := c.pending[group]; p != nil {
		c.running[group] = p
		delete(c.pending, group)
	}
}

// groupOf is a job's concurrency group as GitHub evaluates it for an event (the job's own,
// else the workflow's), and whether it cancels a running job.
func groupOf(w ghWorkflow, job string, github map[string]any) (string, bool) {
	c := w.Jobs[job].Concurrency
	if c == nil {
		c = w.Concurrency
	}
	if c == nil {
		return "", false
	}
	return expression(c.Group, map[string]any{"github": github}), c.CancelInProgress
}

// TestGitHubConcurrency plays GitHub's documented concurrency rules over the README
// workflow's groups, for random interleavings of pushes to pull requests, merges, and jobs
// finishing: a running apply is never cancelled, a plan job never cancels an apply, and
// once every job ran, the last merge's content was applied by an apply job that ran to
// its end (a pending apply replaced by a later one loses nothing: the later one applies
// main's content, which holds it). The workflow this README had before, one group for
// every job, fails the same check: a third pull request's plan cancels a merge's pending
// apply.
func TestGitHubConcurrency(t *testing.T) {
	check := func(w ghWorkflow) func(*rapid.T) {
		return func(rt *rapid.T) {
			c := &concurrency{running: map[string]*ghRun{}, pending: map[string]*ghRun{}}
			merges := 0
			steps := rapid.IntRange(1, 40).Draw(rt, "steps")
			for range steps {
				switch rapid.IntRange(0, 2).Draw(rt, "event") {
				case 0: // a push to a pull request
					n := rapid.IntRange(1, 4).Draw(rt, "pr")
					github := map[string]any{"event_name": "pull_request", "event": map[string]any{"pull_request": map[string]any{"number": float64(n)}}}
					g, cancel := groupOf(w, "plan", github)
					c.queue(g, cancel, &ghRun{job: "plan"})
				case 1: // a merge: a push to main
					merges++
					g, cancel := groupOf(w, "apply", map[string]any{"event_name": "push", "ref": "refs/heads/main"})
					c.queue(g, cancel, &ghRun{job: "apply", merge: merges})
				case 2: // a running job ends
					groups := slices.Sorted(maps.Keys(c.running))
					if len(groups) > 0 {
						c.finish(groups[rapid.IntRange(0, len(groups)-1).Draw(rt, "group")])
					}
				}
				for _, r := range c.stopped {
					if r.job == "apply" {
						rt.Fatalf("a running apply (merge %d) was cancelled", r.merge)
					}
				}
			}
			for len(c.running) > 0 {
				c.finish(slices.Sorted(maps.Keys(c.running))[0])
			}
			last := 0
			for _, r := range c.done {
				if r.job == "apply" {
					last = max(last, r.merge)
				}
			}
			if last != merges {
				var lost []int
				for _, r := range c.cancelled {
					if r.job == "apply" {
						lost = append(lost, r.merge)
					}
				}
				rt.Fatalf("%d merges, the last applied is merge %d; applies cancelled: %v", merges, last, lost)
			}
		}
	}
	w := docsWorkflow(t)
	if g, cancel := groupOf(w, "apply", nil); g == "" || cancel {
		t.Fatalf("the apply job's group %q (cancel-in-progress %v): want one group per deployment that never cancels a running apply", g, cancel)
	}
	rapid.Check(t, check(w))
	// The check finds what GitHub's rules do to an apply group that cancels: a running
	// apply cancelled by the next merge.
	cancelling := w
	cancelling.Jobs = maps.Clone(w.Jobs)
	j := cancelling.Jobs["apply"]
	j.Concurrency = &ghConcurrency{Group: j.Concurrency.Group, CancelInProgress: true}
	cancelling.Jobs["apply"] = j
	rec := &failures{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rapid.Check(rec, check(cancelling))
	}()
	<-done
	if !rec.failed {
		t.Error("the check passes an apply group with cancel-in-progress: it cannot fail")
	}

	// The workflow before: one group for every job.
	old := w
	old.Concurrency = &ghConcurrency{Group: "cairn-shop"}
	old.Jobs = maps.Clone(w.Jobs)
	for _, name := range []string{"plan", "apply"} {
		j := old.Jobs[name]
		j.Concurrency = nil
		old.Jobs[name] = j
	}
	c := &concurrency{running: map[string]*ghRun{}, pending: map[string]*ghRun{}}
	pr := func(n int) map[string]any {
		return map[string]any{"event_name": "pull_request", "event": map[string]any{"pull_request": map[string]any{"number": float64(n)}}}
	}
	for _, e := range []struct {
		job    string
		github map[string]any
	}{{"plan", pr(1)}, {"apply", nil}, {"plan", pr(3)}} {
		g, cancel := groupOf(old, e.job, e.github)
		c.queue(g, cancel, &ghRun{job: e.job, merge: 1})
	}
	if len(c.cancelled) != 1 || c.cancelled[0].job != "apply" {
		t.Errorf("one group for every job: cancelled %v, want the merge's pending apply", c.cancelled)
	}
}

// failures records a property's failure instead of failing the test.
type failures struct {
	testing.TB
	failed bool
}

func (f *failures) Errorf(string, ...any) { f.failed = true }
func (f *failures) Error(...any)          { f.failed = true }
func (f *failures) Fatalf(string, ...any) { f.failed = true; runtime.Goexit() }
func (f *failures) Fatal(...any)          { f.failed = true; runtime.Goexit() }
func (f *failures) FailNow()              { f.failed = true; runtime.Goexit() }
func (f *failures) Fail()                 { f.failed = true }
func (f *failures) Failed() bool          { return f.failed }
func (f *failures) Logf(string, ...any)   {}
func (f *failures) Log(...any)            {}

// TestGitHubWorkflowSkipsForks plays the jobs of docs/review.md's workflow, their if: as
// GitHub evaluates them, on a pull request from a fork: the plan job, which assumes the
// plan role, is skipped, and the fork job says why, in the log and the job summary, with no
// AWS credentials and no cairn; on a pull request of the repository itself the plan job
// runs and the fork job is skipped; on a push neither runs. As Atlantis by default: a fork's
// branch never runs with the deploy role.
func TestGitHubWorkflowSkipsForks(t *testing.T) {
	w := docsWorkflow(t)
	fork := w.Jobs["fork"]
	for _, s := range fork.Steps {
		if s.Uses != "" {
			t.Errorf("the fork job uses %s: it must run no action (no AWS credentials, no cairn)", s.Uses)
		}
	}
	event := func(repo string) map[string]any {
		return map[string]any{"number": 9, "pull_request": map[string]any{"number": 9, "head": map[string]any{"ref": "patch-1", "sha": "9999999999999999999999999999999999999999", "repo": map[string]any{"full_name": repo}}}}
	}
	forked := newRunner(t, t.TempDir(), "pull_request", "refs/pull/9/merge", "9090909090909090909090909090909090909090", event("mallory/infra"))
	if _, err := forked.job(w, "plan"); !errors.Is(err, errSkipped) {
		t.Fatalf("the plan job of a fork's pull request: %v, want it skipped\n%s", err, forked.out.String())
	}
	if forked.out.Len() != 0 {
		t.Errorf("the skipped plan job ran steps:\n%s", forked.out.String())
	}
	if _, err := forked.job(w, "fork"); err != nil {
		t.Fatalf("the fork job: %v\n%s", err, forked.out.String())
	}
	const says = "cairn: pull request from a fork (mallory/infra): not planned, its workflow gets no AWS role."
	if !strings.Contains(forked.out.String(), "::notice::"+says) {
		t.Errorf("the fork job says:\n%s\nwant a notice %q", forked.out.String(), says)
	}
	if summary := readFile(t, forked.env["GITHUB_STEP_SUMMARY"]); !strings.Contains(summary, says) {
		t.Errorf("the fork job's summary:\n%s", summary)
	}
	// The same repository, spelled in another case (GitHub compares strings ignoring case).
	own := newRunner(t, t.TempDir(), "pull_request", "refs/pull/9/merge", "9090909090909090909090909090909090909090", event("Shop/Infra"))
	if !condition(t, w.Jobs["plan"].If, map[string]any{"github": own.github}) {
		t.Errorf("the plan job is skipped on a pull request of the repository itself")
	}
	if _, err := own.job(w, "fork"); !errors.Is(err, errSkipped) {
		t.Errorf("the fork job on a pull request of the repository itself: %v, want it skipped", err)
	}
	push := newRunner(t, t.TempDir(), "push", "refs/heads/main", "3333333333333333333333333333333333333333", map[string]any{"ref": "refs/heads/main"})
	for _, job := range []string{"plan", "fork"} {
		if _, err := push.job(w, job); !errors.Is(err, errSkipped) {
			t.Errorf("the %s job on a push: %v, want it skipped", job, err)
		}
	}
	if !condition(t, w.Jobs["apply"].If, map[string]any{"github": push.github}) {
		t.Errorf("the apply job is skipped on a push")
	}
}

// TestGitHubWorkflowRoles: each job of docs/review.md's workflow that assumes an AWS role
// assumes its own (plan, apply, gate: the stack's GitHubPlanRoleArn, GitHubApplyRoleArn,
// GitHubApproveRoleArn), the apply job and the gate run in environments of their own (a
// job in an environment gets the OIDC subject environment:NAME, which the apply and approve
// roles' trust pins), and cairn's action is pinned to a commit, not a branch or tag.
func TestGitHubWorkflowRoles(t *testing.T) {
	w := docsWorkflow(t)
	roles := map[string]string{}
	for name, job := range w.Jobs {
		for _, s := range job.Steps {
			if strings.HasPrefix(s.Uses, "aws-actions/configure-aws-credentials@") {
				roles[name] = s.With["role-to-assume"]
			}
			if ref, ok := strings.CutPrefix(s.Uses, "cairn-dev/cairn/.github/actions/cairn@"); ok && ref != "COMMIT_SHA" && !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(ref) {
				t.Errorf("job %s uses cairn's action at %q: pin it to a full commit SHA", name, ref)
			}
		}
	}
	for job, role := range map[string]string{"plan": "GitHubPlanRole", "apply": "GitHubApplyRole", "gate": "GitHubApproveRole"} {
		if !strings.Contains(roles[job], ":role/cairn-"+role+"-") {
			t.Errorf("job %s assumes %q, want the stack's %s", job, roles[job], role)
		}
	}
	if len(roles) != 3 {
		t.Errorf("jobs assuming a role: %v, want plan, apply and gate", roles)
	}
	apply, gate := w.Jobs["apply"].Environment, w.Jobs["gate"].Environment
	if apply == nil || gate == nil || fmt.Sprint(apply) == fmt.Sprint(gate) {
		t.Errorf("environments: apply %v, gate %v; want one each, not the same", apply, gate)
	}
	if w.Jobs["plan"].Environment != nil {
		t.Errorf("the plan job runs in environment %v: its subject would no longer be pull_request", w.Jobs["plan"].Environment)
	}
}
