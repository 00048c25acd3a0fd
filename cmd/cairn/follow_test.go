package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// followArgs poll the fast virtual clock of deployWorld often.
var followArgs = []string{"--poll", "20ms", "--timeout", "1m"}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestFollowReattaches: a push not waited for is followed afterwards, by the deployment's
// newest run or by its id, with the view of --wait; a finished run is shown as it ended.
func TestFollowReattaches(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond)
	t.Setenv("CAIRN_BUCKET", localBucket)
	dir := bundleDir(t, "")
	if code, out, errOut := runCLI(t, "push", dir, "--deployment", "cli"); code != 0 || !strings.Contains(out, "see it with `cairn status cli`") {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := runCLI(t, append([]string{"follow", "cli"}, followArgs...)...)
	if code != 0 {
		t.Fatalf("follow: exit %d\n%s%s", code, out, errOut)
	}
	id := regexp.MustCompile(`(?m)^run (\S+) of deployment cli: push$`).FindStringSubmatch(out)
	for _, re := range []string{
		`(?m)^  \d\d:\d\d  topic  create    done$`,
		`(?m)^  \d\d:\d\d  topic            Topic  AWS::SNS::Topic  CREATE_COMPLETE$`,
		`(?m)^  \d\d:\d\d  param            P  AWS::SSM::Parameter  CREATE_COMPLETE$`,
		`(?m)^run \S+ succeeded in \S+: 2 created, 0 updated, 0 deleted, 0 unchanged, 0 failed$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("follow lacks %s:\n%s", re, out)
		}
	}
	if id == nil {
		t.Fatalf("follow names no run:\n%s", out)
	}
	// The finished run, by its id: the same run, ended.
	code, again, _ := runCLI(t, append([]string{"follow", "cli", id[1]}, followArgs...)...)
	if code != 0 || !strings.Contains(again, "run "+id[1]+" of deployment cli: push\n") || !strings.Contains(again, "run "+id[1]+" succeeded in") {
		t.Errorf("follow of the finished run: exit %d\n%s", code, again)
	}
	// A run id that is not one of its runs: the close one named.
	wrong := id[1][:len(id[1])-1] + "x"
	code, _, errOut = runCLI(t, "follow", "cli", wrong)
	if want := "cairn: deployment cli has no run " + wrong + " (did you mean \"" + id[1] + "\"?); its newest runs: " + id[1] + " (see `cairn status cli`)\n"; code != 1 || errOut != want {
		t.Errorf("follow of an unknown run: exit %d, %q\nwant %q", code, errOut, want)
	}
	// status --wait of a deployment with nothing in progress shows the status at once.
	if code, out, _ := runCLI(t, "status", "cli", "--wait"); code != 0 || !strings.Contains(out, "deployment cli: succeeded by run "+id[1]) {
		t.Errorf("status --wait: exit %d\n%s", code, out)
	}
}

// TestStatusWaitFollowsTheRunInProgress: status --wait of a deployment with a run in
// progress follows it to its end, then shows the status, with the run's exit code.
func TestStatusWaitFollowsTheRunInProgress(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond)
	t.Setenv("CAIRN_BUCKET", localBucket)
	if code, out, errOut := runCLI(t, "push", bundleDir(t, ""), "--deployment", "cli"); code != 0 {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	// Wait for the run to exist: status needs one.
	for i := 0; ; i++ {
		if code, _, _ := runCLI(t, "status", "cli"); code == 0 {
			break
		}
		if i > 200 {
			t.Fatal("the push's run never appeared")
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, out, errOut := runCLI(t, append([]string{"status", "cli", "--wait"}, followArgs...)...)
	if code != 0 {
		t.Fatalf("status --wait: exit %d\n%s%s", code, out, errOut)
	}
	sum := strings.Index(out, "succeeded in")
	status := strings.Index(out, "deployment cli: succeeded by run")
	if sum < 0 || status < sum {
		t.Errorf("status --wait: want the run followed to its end, then the status:\n%s", out)
	}
}

// event is one line of the --json stream, as a script reads it.
type jsonEvent struct {
	Event     string          `json:"event"`
	Run       string          `json:"run"`
	Stack     string          `json:"stack"`
	Phase     string          `json:"phase"`
	LogicalID string          `json:"logical_id"`
	Status    string          `json:"status"`
	Exit      *int            `json:"exit"`
	Next      json.RawMessage `json:"next"`
	Summary   struct {
		Created int `json:"created"`
	} `json:"summary"`
}

// TestJSONStream: --json prints the run as one JSON object a line on stdout (what is said
// about it on stderr), ending with the end event and the run's exit code; a refused run's
// end names the next command.
func TestJSONStream(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond)
	t.Setenv("CAIRN_BUCKET", localBucket)
	dir := bundleDir(t, "")
	code, out, errOut := runCLI(t, append([]string{"push", dir, "--deployment", "cli", "--json"}, followArgs...)...)
	if code != 0 {
		t.Fatalf("push --json: exit %d\n%s%s", code, out, errOut)
	}
	events := decodeEvents(t, out)
	var kinds []string
	for _, e := range events {
		if len(kinds) == 0 || kinds[len(kinds)-1] != e.Event {
			kinds = append(kinds, e.Event)
		}
	}
	if kinds[0] != "run" || kinds[len(kinds)-1] != "end" || !slices.Contains(kinds, "step") || !slices.Contains(kinds, "resource") {
		t.Errorf("events %v, want run, steps and resources, end", kinds)
	}
	end := events[len(events)-1]
	if end.Exit == nil || *end.Exit != 0 || end.Summary.Created != 2 || end.Next != nil {
		t.Errorf("end event %+v", end)
	}
	if !slices.ContainsFunc(events, func(e jsonEvent) bool {
		return e.Event == "resource" && e.Stack == "topic" && e.LogicalID == "Topic" && e.Status == "CREATE_COMPLETE"
	}) {
		t.Errorf("no resource event of Topic's creation:\n%s", out)
	}
	if !strings.HasPrefix(errOut, "pushed "+dir+" to s3://") {
		t.Errorf("stderr %q, want what is said about the push", errOut)
	}

	// A protected stack's change is refused: the end event names plan, then approve.
	prot := bundleDir(t, "  - name: guarded\n    template_path: topic.yaml\n    protected: true\n")
	code, out, _ = runCLI(t, append([]string{"push", prot, "--deployment", "cli", "--json"}, followArgs...)...)
	events = decodeEvents(t, out)
	end = events[len(events)-1]
	var next struct{ Class, Command, Then string }
	if code != 1 || end.Event != "end" || json.Unmarshal(end.Next, &next) != nil || next.Class != "review" ||
		next.Command != "cairn plan PATH --deployment cli" || next.Then != "cairn approve cli PLAN_ID" {
		t.Errorf("refused push --json: exit %d, end %+v, next %+v\n%s", code, end, next, out)
	}
	// In words, the same command ends the human output.
	code, out, _ = runCLI(t, append([]string{"push", prot, "--deployment", "cli", "--wait"}, followArgs...)...)
	want := "next: the run was refused: the change needs a reviewed plan: plan, review, then approve: `cairn plan " + prot + " --deployment cli`, then `cairn approve cli PLAN_ID`\n"
	if code != 1 || !strings.HasSuffix(out, want) {
		t.Errorf("refused push: exit %d\n%s\nwant it to end with %q", code, out, want)
	}
}

func decodeEvents(t *testing.T, out string) []jsonEvent {
	t.Helper()
	var events []jsonEvent
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e jsonEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Event == "" {
			t.Fatalf("stdout line %q is not an event: %v", sc.Text(), err)
		}
		events = append(events, e)
	}
	if len(events) == 0 {
		t.Fatal("no events")
	}
	return events
}

// TestNamesAndDidYouMean: every command checks a deployment name, plan id and run id as
// the bucket layout does, and an unknown deployment or plan close to a known one is named.
func TestNamesAndDidYouMean(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond)
	t.Setenv("CAIRN_BUCKET", localBucket)
	if code, out, errOut := runCLI(t, append([]string{"push", bundleDir(t, ""), "--deployment", "shop", "--wait"}, followArgs...)...); code != 0 {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"status", "a b"}, 2, `cairn: deployment "a b": use a name without slashes or spaces: usage: cairn status NAME [flags]` + "\n"},
		{[]string{"plans", "shop", "x;y"}, 2, `cairn: plan id "x;y": a plan id holds letters`},
		{[]string{"follow", "shop", "../x"}, 2, `cairn: run id "../x": a run id holds letters`},
		{[]string{"push", "x", "--deployment", "-shop"}, 2, `cairn: push: deployment "-shop": use letters, digits, '.', '_' and '-' only, starting with a letter or digit`},
		{[]string{"status", "shp"}, 1, "cairn: deployment shp does not exist in s3://" + localBucket + " (did you mean \"shop\"?)\n"},
		{[]string{"approve", "shp", "20261130-080000000-1a2b3c4d"}, 1, "cairn: deployment shp does not exist in s3://" + localBucket + " (did you mean \"shop\"?)\n"},
		{[]string{"follow", "Shop"}, 1, "cairn: deployment Shop does not exist in s3://" + localBucket + " (did you mean \"shop\"?)\n"},
		{[]string{"status", "web"}, 1, "cairn: deployment web has no runs in s3://" + localBucket + ": push a bundle with `cairn push PATH --deployment web`\n"},
	} {
		code, _, errOut := runCLI(t, tt.args...)
		if code != tt.code || !strings.HasPrefix(errOut, tt.want) {
			t.Errorf("cairn %s: exit %d, stderr %q\nwant exit %d, %q", strings.Join(tt.args, " "), code, errOut, tt.code, tt.want)
		}
	}

	// A plan id one character off a recent plan's is named.
	if code, out, errOut := runCLI(t, append([]string{"plan", bundleDir(t, ""), "--deployment", "shop", "--wait"}, followArgs...)...); code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	_, id, _ := runCLI(t, "plans", "shop", "--latest")
	id = strings.TrimSpace(id)
	wrong := id[:len(id)-1] + "z"
	if code, _, errOut := runCLI(t, "approve", "shop", wrong); code != 1 || !strings.HasSuffix(errOut, "(did you mean \""+id+"\"?)\n") {
		t.Errorf("approve of a mistyped plan: exit %d, %q", code, errOut)
	}
}

// TestCompletion: the shell completes deployments, plans and runs from the bucket.
func TestCompletion(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond)
	t.Setenv("CAIRN_BUCKET", localBucket)
	for _, name := range []string{"shop", "shop-eu", "web"} {
		if code, out, errOut := runCLI(t, append([]string{"push", bundleDir(t, ""), "--deployment", name, "--wait"}, followArgs...)...); code != 0 && name == "shop" {
			t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
		}
	}
	_, out, _ := runCLI(t, "status", "shop")
	run := regexp.MustCompile(`by run (\S+) `).FindStringSubmatch(out)
	if run == nil {
		t.Fatalf("status names no run:\n%s", out)
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "status", "sh"}, []string{"shop", "shop-eu", ":4"}},
		{[]string{"__complete", "push", ".", "--deployment", "w"}, []string{"web", ":4"}},
		{[]string{"__complete", "follow", "shop", ""}, []string{run[1], ":4"}},
		{[]string{"__complete", "push", ""}, []string{":0"}}, // a PATH: the shell's files
	} {
		code, out, _ := runCLI(t, tt.args...)
		if got := strings.Fields(out); code != 0 || !slices.Equal(got, tt.want) {
			t.Errorf("cairn %s: exit %d, %q, want %q", strings.Join(tt.args, " "), code, got, tt.want)
		}
	}
	// A plan id, of the deployment named before it.
	if code, out, errOut := runCLI(t, append([]string{"plan", bundleDir(t, ""), "--deployment", "shop", "--wait"}, followArgs...)...); code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	_, plan, _ := runCLI(t, "plans", "shop", "--latest")
	plan = strings.TrimSpace(plan)
	for _, args := range [][]string{{"__complete", "approve", "shop", ""}, {"__complete", "plans", "shop", plan[:8]}} {
		if code, out, _ := runCLI(t, args...); code != 0 || !slices.Equal(strings.Fields(out), []string{plan, ":4"}) {
			t.Errorf("cairn %s: exit %d, %q, want %q", strings.Join(args, " "), code, strings.Fields(out), []string{plan, ":4"})
		}
	}
	for _, args := range [][]string{{"completion", "bash"}, {"completion", "zsh"}, {"completion", "fish"}, {"completion", "powershell"}} {
		if code, out, _ := runCLI(t, args...); code != 0 || !strings.Contains(out, "cairn") || !strings.Contains(out, "__complete") {
			t.Errorf("%s: exit %d, %d bytes", strings.Join(args, " "), code, len(out))
		}
	}
}

// TestVersion: cairn version and --version say what the build recorded.
func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, []string{"version"}...)
	if code != 0 || !regexp.MustCompile(`^cairn \S+\ncommit:   .+\ngo:       go1\.\d+.*\nplatform: \w+/\w+\n$`).MatchString(out) {
		t.Errorf("version: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "--version")
	if code != 0 || !regexp.MustCompile(`^cairn \S+ .*go1\.\d+\S* \w+/\w+\n$`).MatchString(out) {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	code, out, _ = runCLI(t, "version", "--json")
	var v struct{ Version, Go, Platform string }
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Go == "" || v.Platform == "" {
		t.Errorf("version --json: exit %d, %q", code, out)
	}
}

// TestInitAndPaths: init writes a draft for a folder of templates; a cairn.yaml path means
// its folder; a template given as a bundle is told to init.
func TestInitAndPaths(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"network.yaml": "Resources:\n  Vpc: {Type: AWS::EC2::VPC, Properties: {CidrBlock: 10.0.0.0/16}}\nOutputs:\n  VpcId: {Value: !Ref Vpc}\n",
		"app.yaml":     "Parameters:\n  VpcId: {Type: String, Description: where the app runs}\nResources:\n  T: {Type: AWS::SNS::Topic, Properties: {DisplayName: !Ref VpcId}}\n",
		"notes.yaml":   "just: notes\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	template := filepath.Join(dir, "app.yaml")
	code, _, errOut := runCLI(t, "validate", template)
	if want := template + ":1:1: this is a CloudFormation template, not a cairn config: write a config for it with `cairn init " + dir + " --from " + template + "`\n"; code != 1 || errOut != want {
		t.Errorf("validate of a template: exit %d, %q\nwant %q", code, errOut, want)
	}
	// The command it names works as typed, from another folder: a draft for that template
	// and the one it reads an output of, with the parameter's description, guesses marked.
	from := t.TempDir()
	for name, body := range map[string]string{
		"network.yaml": "Resources:\n  Vpc: {Type: AWS::EC2::VPC, Properties: {CidrBlock: 10.0.0.0/16}}\nOutputs:\n  VpcId: {Value: !Ref Vpc}\n",
		"app.yaml":     "Parameters:\n  VpcId: {Type: String, Description: where the app runs}\n  Size: {Type: Number, Default: 2}\nResources:\n  T: {Type: AWS::SNS::Topic, Properties: {DisplayName: !Ref VpcId}}\n",
	} {
		if err := os.WriteFile(filepath.Join(from, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(t.TempDir())
	_, _, hint := runCLI(t, "validate", filepath.Join(from, "app.yaml"))
	typed := regexp.MustCompile("`cairn (init [^`]+)`").FindStringSubmatch(hint)
	if typed == nil {
		t.Fatalf("validate of a template names no init: %q", hint)
	}
	args := append(strings.Fields(typed[1]), "--from", filepath.Join(from, "network.yaml"))
	if code, out, errOut := runCLI(t, args...); code != 0 || !strings.HasPrefix(out, "wrote "+filepath.Join(from, "cairn.yaml")+": 2 stacks (app, network)") {
		t.Fatalf("cairn %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	draft, err := os.ReadFile(filepath.Join(from, "cairn.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"      # where the app runs (String)\n      VpcId: ${output network::VpcId}  # review: guessed: stack network's output VpcId\n",
		"      # Number\n      Size: \"2\"  # the template's default\n",
	} {
		if !strings.Contains(string(draft), want) {
			t.Errorf("the draft lacks %q:\n%s", want, draft)
		}
	}
	code, out, errOut := runCLI(t, []string{"init", dir, "--namespace", "demo"}...)
	want := "wrote " + filepath.Join(dir, "cairn.yaml") + ": 2 stacks (app, network) in namespace demo\nread the 2 lines marked \"review:\"\n"
	if code != 0 || !strings.HasPrefix(out, want) {
		t.Fatalf("init: exit %d\n%s%s\nwant it to begin %q", code, out, errOut, want)
	}
	if code, _, errOut := runCLI(t, "init", dir); code != 1 || !strings.Contains(errOut, "cairn.yaml exists: edit it, or write a new one over it with --force") {
		t.Errorf("init again: exit %d, %q", code, errOut)
	}
	// The draft validates, read through its cairn.yaml path.
	code, out, errOut = runCLI(t, "validate", filepath.Join(dir, "cairn.yaml"))
	if code != 0 || !strings.Contains(out, `ok: 2 stacks in namespace "demo", 1 dependencies`) {
		t.Errorf("validate DIR/cairn.yaml: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "init", t.TempDir(), "--from", template); code != 1 || !strings.Contains(errOut, "is outside") {
		t.Errorf("init --from a template outside: exit %d, %q", code, errOut)
	}
}

// TestDemoHelpSaysWhatItDoes: the demo plans and approves its first version, and the
// second, which loosens the deletion guard, too.
func TestDemoHelpSaysWhatItDoes(t *testing.T) {
	_, out, _ := runCLI(t, "demo", "--help")
	out = strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"the demo plans it (change sets, nothing executed), approves exactly that plan", "It plans a second version", "loosening a guard is reviewed"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo --help lacks %q:\n%s", want, out)
		}
	}
}

// TestInterruptWithJSON: SIGINT (Ctrl-C) while following with --json ends the stream with
// a detached event naming the command to follow again, exit 130, and the run goes on.
func TestInterruptWithJSON(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond) // a virtual minute is three seconds
	t.Setenv("CAIRN_BUCKET", localBucket)
	if code, out, errOut := runCLI(t, append([]string{"push", bundleDir(t, ""), "--deployment", "cli", "--wait"}, followArgs...)...); code != 0 {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, []string{"local", "fault", "cli-param", "P", "--delay", "1m"}...); code != 0 {
		t.Fatalf("local fault: %s", errOut)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	changed := bundleDir(t, "")
	if err := os.WriteFile(filepath.Join(changed, "param.yaml"), []byte("Parameters:\n  Value:\n    Type: String\nResources:\n  P:\n    Type: AWS::SSM::Parameter\n    Properties:\n      Type: String\n      Value: !Sub \"${Value}-2\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "push", changed, "--deployment", "cli", "--json", "--poll", "20ms")
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stdout)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), `"logical_id":"P"`) && strings.Contains(sc.Text(), "UPDATE_IN_PROGRESS") {
			break // P is being updated, slowly
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	err = cmd.Wait()
	events := decodeEvents(t, strings.Join(lines, "\n"))
	last := events[len(events)-1]
	var detached struct{ Why, Follow string }
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &detached)
	if cmd.ProcessState.ExitCode() != 130 || last.Event != "detached" || detached.Why != "interrupted" || detached.Follow != "cairn follow cli "+last.Run {
		t.Fatalf("after SIGINT: %v, exit %d, last event %s\nstderr: %s", err, cmd.ProcessState.ExitCode(), lines[len(lines)-1], stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped following; run "+last.Run+" of deployment cli goes on\nfollow it again with: cairn follow cli "+last.Run+"\n") {
		t.Errorf("stderr: %s", stderr.String())
	}
	// The run went on without the follower.
	if code, out, _ := runCLI(t, append([]string{"follow", "cli", last.Run}, followArgs...)...); code != 0 || !strings.Contains(out, "P  AWS::SSM::Parameter  UPDATE_COMPLETE") {
		t.Errorf("follow after the interrupt: exit %d\n%s", code, out)
	}
}

// TestFollowShowsNestedStacks: --wait shows the resources of a stack's nested stacks (and
// theirs) as they settle, under the nested stack's logical id, as --json does with their
// path in "nested".
func TestFollowShowsNestedStacks(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond)
	t.Setenv("CAIRN_BUCKET", localBucket)
	bundle := filepath.Join("..", "..", "testdata", "bundles", "nested")
	code, out, errOut := runCLI(t, append([]string{"push", bundle, "--deployment", "nest", "--wait"}, followArgs...)...)
	if code != 0 {
		t.Fatalf("push --wait: exit %d\n%s%s", code, out, errOut)
	}
	for _, re := range []string{
		`(?m)^  \d\d:\d\d  app            Work  AWS::SQS::Queue  CREATE_COMPLETE$`,
		`(?m)^  \d\d:\d\d  app            Network/Vpc  AWS::EC2::VPC  CREATE_COMPLETE$`,
		`(?m)^  \d\d:\d\d  app            Network/Subnets/Subnet  AWS::EC2::Subnet  CREATE_COMPLETE$`,
		`(?m)^  \d\d:\d\d  app            Network  AWS::CloudFormation::Stack  CREATE_COMPLETE$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("push --wait lacks %s:\n%s", re, out)
		}
	}
	code, out, errOut = runCLI(t, append([]string{"follow", "nest", "--json"}, followArgs...)...)
	if code != 0 {
		t.Fatalf("follow --json: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, `"nested":["Network","Subnets"],"logical_id":"Subnet","type":"AWS::EC2::Subnet","status":"CREATE_COMPLETE"`) {
		t.Errorf("follow --json lacks the nested nested stack's Subnet:\n%s", out)
	}
}

// TestNextCommandRecovers: a stack left UPDATE_FAILED (disable_rollback) ends the run with
// `cairn recover ... --rollback`, then the push again; both work as printed.
func TestNextCommandRecovers(t *testing.T) {
	deployEmulator(t, 20*time.Millisecond)
	t.Setenv("CAIRN_BUCKET", localBucket)
	dir := bundleDir(t, "")
	cfg := "namespace: cli\nstacks:\n  - name: topic\n    template_path: topic.yaml\n  - name: param\n    template_path: param.yaml\n    disable_rollback: true\n    parameters:\n      Value: ${output topic::Arn}\n"
	if err := os.WriteFile(filepath.Join(dir, "cairn.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, append([]string{"push", dir, "--deployment", "cli", "--wait"}, followArgs...)...); code != 0 {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "local", "fault", "cli-param", "P", "--fail", "denied by policy"); code != 0 {
		t.Fatalf("local fault: %s", errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "param.yaml"), []byte("Parameters:\n  Value:\n    Type: String\nResources:\n  P:\n    Type: AWS::SSM::Parameter\n    Properties:\n      Type: String\n      Value: !Sub \"${Value}-2\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, append([]string{"push", dir, "--deployment", "cli", "--wait"}, followArgs...)...)
	failed := regexp.MustCompile(`(?m)^  \d\d:\d\d  param +P  AWS::SSM::Parameter  UPDATE_FAILED: denied by policy$`)
	next := regexp.MustCompile("(?m)^next: stack cli-param is stuck \\(UPDATE_FAILED\\): recover it, then deploy again: `(cairn recover cli param --rollback)`, then `(cairn push " + regexp.QuoteMeta(dir) + " --deployment cli)`$")
	m := next.FindStringSubmatch(out)
	if code != 1 || !failed.MatchString(out) || m == nil {
		t.Fatalf("push of a failing update: exit %d, want 1, the failure and %s\n%s%s", code, next, out, errOut)
	}
	// status ends the failed deployment's state with the same command.
	if _, st, _ := runCLI(t, "status", "cli"); !strings.Contains(st, "\nnext: stack cli-param is stuck (UPDATE_FAILED): recover it, then deploy again: `cairn recover cli param --rollback`, then `cairn push PATH --deployment cli`\n") {
		t.Errorf("status of the failed deployment lacks the next command:\n%s", st)
	}
	for _, typed := range []string{m[1], m[2]} {
		args := strings.Fields(strings.TrimPrefix(typed, "cairn "))
		if strings.HasPrefix(typed, "cairn push") {
			args = append(args, append([]string{"--wait"}, followArgs...)...)
		}
		if code, out, errOut := runCLI(t, args...); code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", typed, code, out, errOut)
		}
	}
}

// TestInitLeavesNestedTemplatesOut: init without --from makes a stack of each template
// no other template nests; a template nested by another (a nested stack's TemplateURL, a
// SAM application's Location, at any depth) is deployed with its parent, so it is left out,
// said so, and the draft validates.
func TestInitLeavesNestedTemplatesOut(t *testing.T) {
	const (
		vpc    = "Resources:\n  Vpc: {Type: AWS::EC2::VPC, Properties: {CidrBlock: 10.0.0.0/16}}\nOutputs:\n  VpcId: {Value: !Ref Vpc}\n"
		topic  = "Resources:\n  T: {Type: AWS::SNS::Topic}\n"
		nestIt = "Resources:\n  Net: {Type: AWS::CloudFormation::Stack, Properties: {TemplateURL: %s}}\n"
	)
	tests := []struct {
		name       string
		files      map[string]string
		wantStacks string
		wantLeft   string
	}{
		{"a nested stack's TemplateURL", map[string]string{
			"root.yaml":          fmt.Sprintf(nestIt, "templates/vpc.yaml"),
			"templates/vpc.yaml": vpc,
		}, "1 stack (root)", "left out 1 nested template, deployed with the template nesting it: templates/vpc.yaml"},
		{"a SAM application's Location", map[string]string{
			"template.yaml":   "Transform: AWS::Serverless-2016-10-31\nResources:\n  App: {Type: AWS::Serverless::Application, Properties: {Location: ./apps/child.yaml}}\n",
			"apps/child.yaml": topic,
		}, "1 stack (template)", "left out 1 nested template, deployed with the template nesting it: apps/child.yaml"},
		{"nested twice over, beside a stack of its own", map[string]string{
			"root.yaml":        fmt.Sprintf(nestIt, "mid/mid.yaml"),
			"mid/mid.yaml":     fmt.Sprintf(nestIt, "../leaf/vpc.yaml"),
			"leaf/vpc.yaml":    vpc,
			"other/topic.yaml": topic,
		}, "2 stacks (topic, root)", "left out 2 nested templates, deployed with the template nesting each: leaf/vpc.yaml, mid/mid.yaml"},
		{"nothing nested", map[string]string{"a.yaml": topic, "b.yaml": vpc}, "2 stacks (a, b)", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tc.files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errOut := runCLI(t, "init", dir, "--namespace", "demo")
			if code != 0 || !strings.HasPrefix(out, "wrote "+filepath.Join(dir, "cairn.yaml")+": "+tc.wantStacks+" in namespace demo\n") ||
				tc.wantLeft != "" && !strings.Contains(out, "\n"+tc.wantLeft+"\n") || tc.wantLeft == "" && strings.Contains(out, "left out") {
				t.Fatalf("init: exit %d\n%s%s\nwant %s and %q", code, out, errOut, tc.wantStacks, tc.wantLeft)
			}
			if code, out, errOut := runCLI(t, "validate", dir); code != 0 || !strings.Contains(out, ": ok: "+strings.Fields(tc.wantStacks)[0]+" stack") {
				t.Errorf("validate of the draft: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}
