package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/benchbundle"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/loadavg"
	runstate "github.com/cairn-dev/cairn/internal/run"
)

// benchCLIEnv names another cairn binary for BenchmarkPushWait500RealTime to drive instead
// of this one (the test binary run as the CLI): a build of an earlier commit, to measure
// before and after the same way.
const benchCLIEnv = "CAIRN_BENCH_CLI"

// benchUpCLIEnv names the cairn binary whose `local up` BenchmarkPushWait500RealTime
// runs, when it is not the one of benchCLIEnv: to compare two followers on one emulator.
const benchUpCLIEnv = "CAIRN_BENCH_UP_CLI"

// benchOutEnv names a folder BenchmarkPushWait500RealTime writes each push --wait's
// output to, push-wait-RUN.txt, to read it whole.
const benchOutEnv = "CAIRN_BENCH_OUT"

// BenchmarkPushWait500RealTime is `cairn push --wait` of 500 independent stacks as a user
// runs it, in real time: `cairn local up --change-set-delay 1s..4s --resource-delay 1s..3s
// --delay-seed 7` on a fresh --dir, `cairn local wait`, `eval "$(cairn local env)"`, then
// `cairn push DIR --deployment bench --wait`, each its own process, output to a pipe (as in
// CI). The bundle is benchbundle's first 500 stacks without their dependencies, at
// max_concurrency 50, as BenchmarkPush500 and BenchmarkFollow500 deploy it (the default is
// 10). It reports the run's time (its document's StartedAt to FinishedAt),
// the wall time until push --wait returned, and the lag: from the run's end to that return.
// A few minutes a run; skipped with -short (make bench), run by make bench-realtime.
func BenchmarkPushWait500RealTime(b *testing.B) {
	if testing.Short() {
		b.Skip("500 stacks in real time take minutes a run: make bench-realtime runs it")
	}
	cli, extra := os.Getenv(benchCLIEnv), []string(nil)
	if cli == "" {
		self, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		cli, extra = self, []string{cliEnv + "=1"}
	}
	bundle := b.TempDir()
	if err := benchbundle.WriteFiles(bundle, independentBundle(500, 50)); err != nil {
		b.Fatal(err)
	}
	upCLI, upExtra := cli, extra
	if c := os.Getenv(benchUpCLIEnv); c != "" {
		upCLI, upExtra = c, nil
	}
	var runs, waits, lags []float64
	var loads []string
	for b.Loop() {
		loads = append(loads, loadavg.Read())
		m := pushWaitOnce(b, upCLI, upExtra, cli, extra, bundle)
		runs, waits, lags = append(runs, m.run.Seconds()), append(waits, m.wait.Seconds()), append(lags, m.lag.Seconds())
		b.Logf("run %.1f s, push --wait %.1f s (the run started %.1f s after the push began), lag %.1f s; output %d lines, %d naming a resource, %d notes (load %s)",
			m.run.Seconds(), m.wait.Seconds(), m.startup.Seconds(), m.lag.Seconds(), m.lines, m.resourceLines, m.notes, loads[len(loads)-1])
	}
	b.ReportMetric(medianOf(runs), "s-run")
	b.ReportMetric(medianOf(waits), "s-push-wait")
	b.ReportMetric(medianOf(lags), "s-lag")
	b.Logf("500 independent stacks, push --wait of %s on the local up of %s, median of %d: run %.1f s, push --wait %.1f s, lag %.1f s; load average %s",
		cli, upCLI, len(lags), medianOf(runs), medianOf(waits), medianOf(lags), strings.Join(loads, ", "))
}

// independentBundle is benchbundle's first n stacks without their dependencies, at
// max_concurrency c.
func independentBundle(n, c int) map[string]string {
	stacks := benchbundle.Stacks(n)
	for i := range stacks {
		stacks[i].Requires, stacks[i].Lookups = nil, nil
	}
	files := benchbundle.Files("bench", 0)
	files["cairn.yaml"] = strings.Replace(benchbundle.Config("bench", stacks), "stacks:\n", fmt.Sprintf("max_concurrency: %d\nstacks:\n", c), 1)
	return files
}

// pushWaitMeasure is one push --wait: the run's time, the push's, the time from the push
// to the run's start, the lag after the run's end, and what the push printed.
type pushWaitMeasure struct {
	run, wait, startup, lag     time.Duration
	lines, resourceLines, notes int
}

// pushWaitOnce starts upCLI's local up on a fresh --dir, pushes bundle with cli's push
// --wait, and measures it. extra is added to each one's environment.
func pushWaitOnce(b *testing.B, upCLI string, upExtra []string, cli string, extra []string, bundle string) pushWaitMeasure {
	b.Helper()
	dir := b.TempDir()
	home := toolEnv(b, nil)
	base := append(slices.Clone(home), extra...)
	up := exec.Command(upCLI, "local", "up", "--dir", dir, "--addr", "127.0.0.1:0",
		"--change-set-delay", "1s..4s", "--resource-delay", "1s..3s", "--delay-seed", "7")
	var upOut syncBuffer
	up.Env, up.Stdout, up.Stderr = append(slices.Clone(home), upExtra...), &upOut, &upOut
	if err := up.Start(); err != nil {
		b.Fatal(err)
	}
	defer stopLocalUp(b, up, &upOut)
	cliOut(b, cli, base, "local", "wait", "--dir", dir, "--timeout", "2m")
	exports := map[string]string{}
	for _, line := range strings.Split(cliOut(b, cli, base, "local", "env", "--dir", dir), "\n") {
		if kv, ok := strings.CutPrefix(line, "export "); ok {
			k, v, _ := strings.Cut(kv, "=")
			exports[k] = strings.Trim(v, "'")
		}
	}
	env := base
	for k, v := range exports {
		env = append(env, k+"="+v)
	}

	var stdout, stderr bytes.Buffer
	push := exec.Command(cli, "push", bundle, "--deployment", "bench", "--wait")
	push.Env, push.Stdout, push.Stderr = env, &stdout, &stderr
	began := time.Now()
	err := push.Run()
	returned := time.Now()
	if err != nil {
		b.Fatalf("push --wait: %v\n%s\n%s", err, tail(stdout.String(), 20), stderr.String())
	}

	for k, v := range exports {
		b.Setenv(k, v)
	}
	b.Setenv("AWS_CA_BUNDLE", "")
	b.Setenv("AWS_PROFILE", "")
	cfg, err := awsclient.Load(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	runs := &history.Store{S3: awsclient.S3(cfg), Bucket: exports["CAIRN_BUCKET"]}
	ids, err := runs.RunIDs(context.Background(), "bench")
	if err != nil || len(ids) != 1 {
		b.Fatalf("runs of bench: %v, %v", ids, err)
	}
	doc, err := runs.Run(context.Background(), "bench", ids[0])
	if err != nil {
		b.Fatal(err)
	}
	if doc.Run.Status != runstate.Succeeded || len(doc.Run.Stacks) != 500 {
		b.Fatalf("run %s: %s with %d stacks (%s)", doc.Run.ID, doc.Run.Status, len(doc.Run.Stacks), doc.Run.Reason)
	}
	m := pushWaitMeasure{run: doc.Run.FinishedAt.Sub(doc.Run.StartedAt), wait: returned.Sub(began),
		startup: doc.Run.StartedAt.Sub(began), lag: returned.Sub(doc.Run.FinishedAt)}
	for _, line := range strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n") {
		m.lines++
		if strings.Contains(line, "AWS::") {
			m.resourceLines++
		}
		if strings.HasPrefix(strings.TrimSpace(line), "note:") {
			m.notes++
		}
	}
	if keep := os.Getenv(benchOutEnv); keep != "" {
		name := filepath.Join(keep, fmt.Sprintf("push-wait-%s.txt", doc.Run.ID))
		if err := os.WriteFile(name, append(stdout.Bytes(), stderr.Bytes()...), 0o644); err != nil {
			b.Error(err)
		}
	}
	return m
}

// cliOut runs cli with args and env, and returns its standard output.
func cliOut(b *testing.B, cli string, env []string, args ...string) string {
	b.Helper()
	cmd := exec.Command(cli, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("cairn %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// stopLocalUp interrupts local up as Ctrl-C does, and kills it if it does not stop.
func stopLocalUp(b *testing.B, up *exec.Cmd, out *syncBuffer) {
	b.Helper()
	if err := up.Process.Signal(syscall.SIGINT); err != nil {
		b.Errorf("interrupt local up: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- up.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			b.Errorf("local up: %v\n%s", err, tail(out.String(), 10))
		}
	case <-time.After(30 * time.Second):
		up.Process.Kill()
		<-done
		b.Errorf("local up did not stop within 30 s of an interrupt")
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func medianOf(v []float64) float64 {
	v = slices.Sorted(slices.Values(v))
	switch {
	case len(v) == 0:
		return 0
	case len(v)%2 == 1:
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
