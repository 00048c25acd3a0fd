package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/cfnlocal"
	"github.com/cairn-dev/cairn/internal/localcairn"
)

// cliEnv makes the test binary run as the cairn command (TestMain), so a test can start
// the CLI as its own process, in a pseudo-terminal, as a person does.
const cliEnv = "CAIRN_TEST_RUN_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(cliEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// terminal is the CLI running in a pseudo-terminal of 30 rows and 120 columns, and the
// screen it shows.
type terminal struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	tty    *os.File
	screen *screen
	read   chan struct{}
}

func startInTerminal(t *testing.T, args ...string) *terminal {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), cliEnv+"=1", "TERM=xterm")
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "NO_COLOR=") })
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	tm := &terminal{t: t, name: "cairn " + strings.Join(args, " "), cmd: cmd, tty: tty, screen: newScreen(30, 120), read: make(chan struct{})}
	go func() {
		defer close(tm.read)
		io.Copy(tm.screen, tty) // ends with EIO once the process and its terminal are gone
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		tty.Close()
	})
	return tm
}

// waitFor waits until the screen shows a line matching re, and returns the screen then.
func (tm *terminal) waitFor(re string, timeout time.Duration) []string {
	tm.t.Helper()
	rx := regexp.MustCompile(re)
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		lines := tm.screen.Lines()
		if slices.ContainsFunc(lines, rx.MatchString) {
			return lines
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("%s: the screen never showed %s; it shows:\n%s", tm.name, re, strings.Join(lines, "\n"))
		}
	}
}

// interrupt types Ctrl-C.
func (tm *terminal) interrupt() {
	if _, err := tm.tty.Write([]byte{3}); err != nil {
		tm.t.Fatal(err)
	}
}

// exit waits for the process to end and returns its exit code (-1 when a signal killed
// it), once its output is on the screen.
func (tm *terminal) exit(timeout time.Duration) int {
	tm.t.Helper()
	done := make(chan error, 1)
	go func() { done <- tm.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			tm.t.Fatal(err)
		}
		select {
		case <-tm.read:
		case <-time.After(5 * time.Second):
		}
		return tm.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		tm.t.Fatalf("%s did not end within %s; the screen:\n%s", tm.name, timeout, tm.screen.Text())
	}
	return 0
}

// transcript is what the terminal showed, for the test's log.
func (tm *terminal) transcript() string {
	return "$ " + tm.name + "\n" + tm.screen.Text()
}

func demoBundle2(t *testing.T, retention int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	files := map[string]string{
		"cairn.yaml": "namespace: demo\nstacks:\n  - name: queue\n    template_path: queue.yaml\n  - name: alerts\n    template_path: alerts.yaml\n    parameters:\n      QueueArn: ${output queue::Arn}\n",
		"queue.yaml": "Resources:\n  Dead: {Type: AWS::SQS::Queue}\n  Queue:\n    Type: AWS::SQS::Queue\n    Properties:\n      RedrivePolicy: {deadLetterTargetArn: !GetAtt Dead.Arn, maxReceiveCount: 3}\nOutputs:\n  Arn: {Value: !GetAtt Queue.Arn}\n",
		"alerts.yaml": "Parameters:\n  QueueArn: {Type: String}\nResources:\n  Topic: {Type: AWS::SNS::Topic}\n  Group:\n    Type: AWS::Logs::LogGroup\n    Properties: {RetentionInDays: " +
			string(rune('0'+retention/10)) + string(rune('0'+retention%10)) + "}\n  Param:\n    Type: AWS::SSM::Parameter\n    Properties: {Type: String, Value: !Ref QueueArn}\n",
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestTerminal runs the CLI in a pseudo-terminal against cairn in the emulator and reads
// the screen as a person sees it: a push whose resource is slow shows it in flight,
// marked the slowest; Ctrl-C stops following, erases the live lines and prints how to
// follow the run again; `cairn follow` re-attaches, shows the resource failing with its
// reason as it fails, before the run ends, and ends with the next command.
func TestTerminal(t *testing.T) {
	keepEnv(t) // cairn's environment is exported into this process, and the CLI's from it
	t.Setenv("AWS_CA_BUNDLE", "")
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.DiscardHandler)) // the in-process deployer's log
	t.Setenv("CAIRN_HEARTBEAT_SECONDS", "2")
	ctx := context.Background()
	loc, err := startLocal(ctx, awslocal.Options{Logger: slog.New(slog.DiscardHandler),
		CloudFormation: awslocal.CloudFormationTimings{ResourceDelay: 300 * time.Millisecond, ChangeSetDelay: 100 * time.Millisecond, CustomResourceTimeout: 30 * time.Second}},
		"127.0.0.1:0", localcairn.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer loc.Close()

	// Version 1, followed in a log (no terminal): each resource on its own line.
	var out, errOut bytes.Buffer
	if code := run([]string{"push", demoBundle2(t, 7), "--deployment", "demo", "--wait", "--poll", "200ms"}, &out, &errOut); code != 0 {
		t.Fatalf("push: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	for _, re := range []string{`(?m)^  \d\d:\d\d  queue  +Dead  AWS::SQS::Queue  CREATE_COMPLETE$`, `(?m)^  \d\d:\d\d  alerts +create    done$`} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("the log lacks %s:\n%s", re, out.String())
		}
	}
	if strings.Contains(out.String(), "\x1b[") {
		t.Errorf("a log holds terminal escapes:\n%q", out.String())
	}

	// Version 2 changes the log group, which the emulator makes slow and then fail; its
	// rollback is slow too, so the failure shows before the run ends.
	reason := `Resource handler returned message: "Log group demo-alerts already exists"`
	out.Reset()
	if code := run([]string{"local", "fault", "demo-alerts", "Group", "--delay", "3s", "--fail", reason}, &out, &errOut); code != 0 {
		t.Fatalf("local fault: exit %d: %s", code, errOut.String())
	}
	if err := loc.Emulator.CloudFormation().InjectFault(cfnlocal.Fault{Stack: "demo-alerts", LogicalID: "Group", Delay: 2 * time.Second, DuringRollback: true, Count: 1}); err != nil {
		t.Fatal(err)
	}
	v2 := demoBundle2(t, 30)

	push := startInTerminal(t, "push", v2, "--deployment", "demo", "--wait", "--poll", "200ms")
	live := push.waitFor(`^      Group  AWS::Logs::LogGroup  UPDATE_IN_PROGRESS  [1-9]\d*s  <- slowest$`, 30*time.Second)
	if !slices.ContainsFunc(live, regexp.MustCompile(`^  \d\d:\d\d  1 stack in flight; Ctrl-C stops following \(the run goes on\)$`).MatchString) ||
		!slices.ContainsFunc(live, regexp.MustCompile(`^    alerts  executing change set \(1 change\)  \d+s$`).MatchString) {
		t.Errorf("the live lines lack the stack in flight:\n%s", strings.Join(live, "\n"))
	}
	t.Logf("the screen before Ctrl-C:\n$ %s\n%s", push.name, strings.Join(live, "\n"))
	push.interrupt()
	if code := push.exit(20 * time.Second); code != 130 {
		t.Fatalf("push after Ctrl-C: exit %d, want 130; the screen:\n%s", code, push.screen.Text())
	}
	t.Logf("transcript:\n%s", push.transcript())
	stopped := regexp.MustCompile(`(?m)^stopped following; run (\S+) of deployment demo goes on\nfollow it again with: cairn follow demo (\S+)$`)
	m := stopped.FindStringSubmatch(push.screen.Text())
	if m == nil || m[1] != m[2] {
		t.Fatalf("after Ctrl-C the screen lacks %s:\n%s", stopped, push.screen.Text())
	}
	for _, l := range push.screen.Lines() {
		if strings.Contains(l, "in flight") || strings.Contains(l, "<- slowest") {
			t.Errorf("the live lines stay on the screen after Ctrl-C: %q", l)
		}
	}

	follow := startInTerminal(t, "follow", "demo", m[1], "--poll", "200ms")
	failed := `^  \d\d:\d\d  alerts            Group  AWS::Logs::LogGroup  UPDATE_FAILED: ` + regexp.QuoteMeta(reason) + `$`
	follow.waitFor(failed, 30*time.Second)
	// While CloudFormation rolls the stack back, the failure is on the screen, the live
	// lines say the stack rolls back, and the run has not ended.
	rolling := follow.waitFor(`^    alerts  rolling back \(UPDATE_ROLLBACK_IN_PROGRESS\)  \d+s$`, 10*time.Second)
	t.Logf("the screen as the stack rolls back:\n$ %s\n%s", follow.name, strings.Join(rolling, "\n"))
	if !slices.ContainsFunc(rolling, regexp.MustCompile(failed).MatchString) || slices.ContainsFunc(rolling, regexp.MustCompile(`^run \S+ failed in`).MatchString) {
		t.Errorf("want the failure shown while the run goes on:\n%s", strings.Join(rolling, "\n"))
	}
	if code := follow.exit(30 * time.Second); code != 1 {
		t.Fatalf("follow: exit %d, want 1 (the run failed); the screen:\n%s", code, follow.screen.Text())
	}
	t.Logf("transcript:\n%s", follow.transcript())
	text := follow.screen.Text()
	for _, re := range []string{
		`(?m)^run ` + m[1] + ` of deployment demo: push$`,
		`(?m)^  \d\d:\d\d  alerts +update +failed: stack demo-alerts is UPDATE_ROLLBACK_COMPLETE: Group \(AWS::Logs::LogGroup\): ` + regexp.QuoteMeta(reason) + `$`,
		`(?m)^run ` + m[1] + ` failed in \S+: 0 created, 0 updated, 0 deleted, 1 unchanged, 1 failed$`,
		"(?m)^next: stack demo-alerts failed: fix what its reason names in the bundle, then deploy again: `cairn push PATH --deployment demo`$",
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("the follow's screen lacks %s:\n%s", re, text)
		}
	}
	if strings.Contains(text, "in flight") {
		t.Errorf("live lines stay on the screen after the run ended:\n%s", text)
	}
}
