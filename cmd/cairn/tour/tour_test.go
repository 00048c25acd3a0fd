package tour

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// repoRoot is the repository, seen from this package's directory.
const repoRoot = "../../.."

// quickTour returns the lines of the README's quick tour (Read).
func quickTour(t *testing.T) []string {
	t.Helper()
	lines, err := Read(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// tourLock serializes quick tours of every work tree on this machine: each needs the
// emulator's default address, 127.0.0.1:4566.
const tourLock = "/tmp/cairn-quick-tour.lock"

// expectedExit is the exit code a tour line is written to end with: N when its comment
// says "(exit N)", else 0.
var expectedExit = regexp.MustCompile(`#.*\(exit (\d+)\)\s*$`)

// TestQuickTour runs the README's quick tour exactly as written, line by line in one
// shell, in a fresh copy of the repository (its files linked, no bin/ or .cairn/), with
// none of the caller's AWS or cairn environment: as a newcomer runs it after cloning.
// Every line must end with the exit code it is written to end with, and show what its
// comment promises.
func TestQuickTour(t *testing.T) {
	for _, tool := range []string{"bash", "make", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the quick tour needs %s on PATH: %v", tool, err)
		}
	}
	lines := quickTour(t)

	// One tour at a time on this machine, and nothing else on the emulator's address.
	lock, err := os.OpenFile(tourLock, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if l, err := net.Listen("tcp", "127.0.0.1:4566"); err != nil {
		t.Fatalf("127.0.0.1:4566 is in use (a cairn local up, or LocalStack?): the quick tour's emulator needs it: %v", err)
	} else {
		l.Close()
	}

	work := t.TempDir()
	entries, err := os.ReadDir(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); n != "bin" && n != ".cairn" && n != ".git" {
			abs, err := filepath.Abs(filepath.Join(repoRoot, n))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(abs, filepath.Join(work, n)); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Each line runs as written; after it, its exit code is recorded on file descriptor 3.
	var script strings.Builder
	var commands []int // indexes of the lines that run something
	for i, line := range lines {
		script.WriteString(line + "\n")
		if trimmed := strings.TrimSpace(line); trimmed != "" && !strings.HasPrefix(trimmed, "#") {
			fmt.Fprintf(&script, "echo \"$? %d\" >&3\n", i)
			commands = append(commands, i)
		}
	}
	statusFile, err := os.Create(filepath.Join(t.TempDir(), "status"))
	if err != nil {
		t.Fatal(err)
	}
	defer statusFile.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = work
	cmd.Env = newcomerEnv()
	cmd.ExtraFiles = []*os.File{statusFile}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	started := time.Now()
	runErr := cmd.Run()
	// Whatever the tour left running (an emulator, if it failed before `kill %1`) goes.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	t.Logf("quick tour (%s), output:\n%s", time.Since(started).Round(time.Second), out.String())
	if runErr != nil {
		t.Fatalf("the tour's shell failed: %v", runErr)
	}

	statuses, err := os.ReadFile(statusFile.Name())
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]int{}
	sc := bufio.NewScanner(bytes.NewReader(statuses))
	for sc.Scan() {
		var code, i int
		if _, err := fmt.Sscanf(sc.Text(), "%d %d", &code, &i); err == nil {
			got[i] = code
		}
	}
	for _, i := range commands {
		want := 0
		if m := expectedExit.FindStringSubmatch(lines[i]); m != nil {
			want, _ = strconv.Atoi(m[1])
		}
		code, ran := got[i]
		switch {
		case !ran:
			t.Errorf("tour line %d never ran: %s", i+1, lines[i])
		case code != want:
			t.Errorf("tour line %d exited %d, want %d: %s", i+1, code, want, lines[i])
		}
	}

	// What the comments promise, and a quiet terminal: no log lines among the output.
	text := out.String()
	for _, re := range []string{
		`testdata/bundles/webshop/cairn.yaml: ok: 5 stacks in namespace "shop"`,
		`(?m)^  5\. edge +shop-edge +<- service$`,
		`(?m)^cairn local: ready at http://127\.0\.0\.1:4566`,
		`(?m)^plan id: (\S+)$`,
		`(?m)^\S+ +planned +\d+[smhd] +5 stacks `,
		`(?m)^  \d\d:\d\d  database +create +done$`,
		`(?m)^run \S+ succeeded in \S+: 5 created, 0 updated, 0 deleted, 0 unchanged, 0 failed$`,
		`(?m)^deployment shop: succeeded by run \S+ \(apply of plan \S+\)$`,
		`(?m)^http://127\.0\.0\.1:4566/_local/pages/\S+$`,
		`(?m)^run \S+ succeeded in \S+: 0 created, 0 updated, 0 deleted, 5 unchanged, 0 failed$`,
		// Ctrl-C during --wait, then follow: the slow resource settles, the run ends.
		`(?m)^stack shop-cache: the next operation of Cache takes 10s longer in the emulator$`,
		`(?m)^stopped following; run \S+ of deployment shop goes on\nfollow it again with: cairn follow shop \S+$`,
		`(?m)^  \d\d:\d\d  cache +Cache  AWS::ElastiCache::ReplicationGroup  UPDATE_COMPLETE$`,
		`(?m)^  \d\d:\d\d  cache +update +done$`,
		`(?m)^run \S+ succeeded in \S+: 0 created, 1 updated, 0 deleted, 4 unchanged, 0 failed$`,
		`(?m)^network +shop-network +CREATE_COMPLETE`,
		`(?m)^default +\d+ +shop-service +Port `,
		`(?m)^shop +network +shop-network +DRIFTED +Vpc /CidrBlock: 10\.20\.0\.0/16 -> 10\.9\.0\.0/16$`,
		`(?m)^shop +edge +shop-edge +NOT_CHECKED +ignored by drift\.ignore pattern "edge"$`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("the tour's output lacks %s", re)
		}
	}
	for _, noise := range []string{"level=INFO", " INFO ", "level=DEBUG", "RequestID"} {
		if strings.Contains(text, noise) {
			t.Errorf("the tour's output holds %q: the terminal is not quiet", noise)
		}
	}
}

// newcomerEnv is this process's environment without anything that points at AWS or at a
// cairn: a newcomer's shell.
func newcomerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "CAIRN_") {
			env = append(env, kv)
		}
	}
	return env
}
