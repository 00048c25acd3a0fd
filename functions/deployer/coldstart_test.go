package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/loadavg"
)

// BenchmarkColdStart builds each function as `make lambdas` does and reports the
// deployer's size as deployed (linux/arm64; goal at most 15 MB), and each function's init
// duration as Lambda measures it (goal at most 50 ms; the REPORT line's "Init Duration" is
// the time from starting the runtime's bootstrap process to its first request for an
// event): the binary is started with the environment Lambda gives it against a local HTTP
// server standing in for the Lambda runtime API (AWS_LAMBDA_RUNTIME_API), and the time
// from starting the process to its GET /runtime/invocation/next is taken, one start of
// each function per iteration (-benchtime=10x: the median of 10), with the load average
// beside. The timed binaries are built for this machine's architecture, since the arm64
// ones cannot run here; it is the same code.
func BenchmarkColdStart(b *testing.B) {
	dir := b.TempDir()
	deployed := build(b, dir, ".", "linux", "arm64")
	st, err := os.Stat(deployed)
	if err != nil {
		b.Fatal(err)
	}
	functions := []string{"deployer", "drift", "policy", "ports"}
	local := map[string]string{}
	for _, f := range functions {
		local[f] = build(b, filepath.Join(dir, f), "../"+f, runtime.GOOS, runtime.GOARCH)
	}
	api := newRuntimeAPI(b)
	starts := map[string][]time.Duration{}
	var loads []string
	for b.Loop() {
		loads = append(loads, loadavg.Read())
		for _, f := range functions {
			starts[f] = append(starts[f], api.start(b, local[f], f))
		}
	}
	b.ReportMetric(float64(st.Size())/1e6, "MB-arm64")
	var lines []string
	for _, f := range functions {
		s := starts[f]
		slices.Sort(s)
		med := s[len(s)/2]
		if len(s)%2 == 0 {
			med = (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
		metric := "ms-to-ready-p50"
		if f != "deployer" {
			metric = f + "-" + metric
		}
		b.ReportMetric(float64(med.Microseconds())/1000, metric)
		lines = append(lines, fmt.Sprintf("%s: median %v, min %v, max %v", f, med.Round(10*time.Microsecond), s[0].Round(10*time.Microsecond), s[len(s)-1].Round(10*time.Microsecond)))
	}
	b.Logf("deployer bootstrap: %d bytes (%.2f MiB) for linux/arm64; init duration (from starting the process to its first request for an event; %s/%s build, %d starts each, load average %s):\n  %s",
		st.Size(), float64(st.Size())/(1<<20), runtime.GOOS, runtime.GOARCH, len(loads), strings.Join(loads, "; "), strings.Join(lines, "\n  "))
}

// TestDeployerStartsAsBuiltForLambda builds the deployer with the Makefile's LAMBDA_TAGS
// (its AWS configuration from the environment Lambda gives it alone) and starts it as
// Lambda does: it must ask the runtime API for an event rather than exit.
//
// It leaves out what changes the binary's size but not its start: -trimpath, stripping,
// CGO_ENABLED=0 and the tag nethttpomithttp2 (net/http without HTTP/2), each of which
// would compile the whole AWS SDK again apart from the CLI's build that make test does
// anyway, for about two minutes of CPU. BenchmarkColdStart builds exactly as `make
// lambdas` does.
func TestDeployerStartsAsBuiltForLambda(t *testing.T) {
	api := newRuntimeAPI(t)
	api.start(t, buildStartable(t, t.TempDir()), "deployer")
}

// buildStartable builds this function for this machine with the Makefile's LAMBDA_TAGS
// that change what it does when it starts (all but nethttpomithttp2), and the default
// build settings otherwise, so its packages are those the CLI's build compiled.
func buildStartable(tb testing.TB, dir string) string {
	tb.Helper()
	var tags []string
	for _, tag := range strings.Split(lambdaTags(tb), ",") {
		if tag != "nethttpomithttp2" {
			tags = append(tags, tag)
		}
	}
	out := filepath.Join(dir, "bootstrap")
	cmd := exec.Command("go", "build", "-buildvcs=false", "-tags", strings.Join(tags, ","), "-o", out, ".")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// runtimeAPI stands in for the Lambda runtime API: it records when a process asks for its
// next event, and gives none.
type runtimeAPI struct {
	url   string
	asked chan time.Time
}

func newRuntimeAPI(tb testing.TB) *runtimeAPI {
	a := &runtimeAPI{asked: make(chan time.Time, 1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/2018-06-01/runtime/invocation/next" {
			http.NotFound(w, r)
			return
		}
		a.asked <- time.Now()
		<-r.Context().Done() // no event: the process is killed while it waits
	}))
	tb.Cleanup(srv.Close)
	a.url = strings.TrimPrefix(srv.URL, "http://")
	return a
}

// start starts the bootstrap binary of function with Lambda's environment and returns the
// time to its first request for an event; the process is killed then.
func (a *runtimeAPI) start(tb testing.TB, binary, function string) time.Duration {
	tb.Helper()
	cmd := exec.Command(binary)
	cmd.Env = []string{
		"AWS_LAMBDA_RUNTIME_API=" + a.url,
		"AWS_LAMBDA_FUNCTION_NAME=cairn-" + function, "CAIRN_DRIFT_QUEUE_URL=https://sqs.us-east-1.amazonaws.com/000000000000/cairn-drift", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512", "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY=secret", "AWS_SESSION_TOKEN=token",
		"CAIRN_BUCKET=cairn-state", "CAIRN_DEPLOY_QUEUE_URL=https://sqs.us-east-1.amazonaws.com/000000000000/cairn-deploy",
		"CAIRN_NOTIFICATIONS_TOPIC=arn:aws:sns:us-east-1:000000000000:cairn-notifications", "TZ=:UTC",
		"CAIRN_SEAL_KEY_ID=arn:aws:kms:us-east-1:000000000000:key/00000000-0000-0000-0000-000000000000",
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case at := <-a.asked:
		cmd.Process.Kill()
		<-exited
		return at.Sub(start)
	case err := <-exited:
		tb.Fatalf("the %s function exited before asking for an event: %v\n%s", function, err, stderr.String())
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-exited
		tb.Fatalf("the %s function did not ask for an event within 10s", function)
	}
	return 0
}

// build builds the function in pkg (".": this one) as `make lambdas` does, for
// goos/goarch, with the Makefile's LAMBDA_TAGS.
func build(tb testing.TB, dir, pkg, goos, goarch string) string {
	tb.Helper()
	out := filepath.Join(dir, goos+"-"+goarch, "bootstrap")
	cmd := exec.Command("go", "build", "-buildvcs=false", "-tags", lambdaTags(tb), "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build for %s/%s: %v\n%s", goos, goarch, err, b)
	}
	return out
}

// lambdaTags reads the build tags of the Lambdas from the Makefile, their one owner.
func lambdaTags(tb testing.TB) string {
	tb.Helper()
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(mk), "\n") {
		if v, ok := strings.CutPrefix(line, "LAMBDA_TAGS = "); ok {
			return strings.TrimSpace(v)
		}
	}
	tb.Fatal("the Makefile sets no LAMBDA_TAGS")
	return ""
}
