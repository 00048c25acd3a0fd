package main

import (
	"bytes"
	"context"
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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/customresource"
	"github.com/cairn-dev/cairn/internal/deployer"
	"github.com/cairn-dev/cairn/internal/judge"
	"github.com/cairn-dev/cairn/internal/localcairn"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/ports"
)

// localBucket is cairn's bucket as localcairn makes it in the emulator's account and
// region.
const localBucket = "cairn-000000000000-us-east-1"

// deployWorld starts cairn in the emulator (localcairn.Start, as `cairn local up` does)
// with a virtual clock running a thousand times faster than the wall clock, the deployer
// behind its queue and event rules; the environment points the CLI at it.
func deployWorld(t *testing.T) *s3.Client {
	t.Helper()
	_, s3c := deployEmulator(t)
	return s3c
}

// deployEmulator is deployWorld, returning the emulator too. Its virtual clock moves half
// a second per millisecond of wall time, or pace when given.
func deployEmulator(t *testing.T, pace ...time.Duration) (*awslocal.Emulator, *s3.Client) {
	t.Helper()
	o := emulatorOptions{step: 500 * time.Millisecond}
	if len(pace) > 0 {
		o.step = pace[0]
	}
	return deployEmulatorWith(t, o)
}

// emulatorOptions say how deployEmulatorWith starts cairn: the virtual clock's pace (per
// millisecond of wall time), and whether the ports function runs and the deployer seals
// with the stack's KMS key, as in Lambda.
type emulatorOptions struct {
	step         time.Duration
	ports, keyed bool
}

func deployEmulatorWith(t *testing.T, o emulatorOptions) (*awslocal.Emulator, *s3.Client) {
	t.Helper()
	step := o.step
	ctx := context.Background()
	// The virtual clock starts at the wall clock, which the CLI itself reads (plan ages and
	// expiry): a fixed date would make plans look expired once the calendar moves on.
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				clk.Advance(step)
			}
		}
	}()
	l, err := localcairn.Start(ctx, localcairn.StartOptions{Emulator: awslocal.Options{Clock: clk, Logger: logger},
		Handlers: func(ctx context.Context, l *localcairn.Local) (localcairn.Handlers, error) {
			cfg, err := l.Emulator.AWSConfig(ctx)
			if err != nil {
				return localcairn.Handlers{}, err
			}
			env := map[string]string{}
			for _, kv := range l.Cairn.Env() {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			dc := deployer.Config{Bucket: l.Cairn.Bucket, QueueURL: l.Cairn.Deploy.URL, Clock: clk, Logger: logger,
				PolicyFunction: env["CAIRN_POLICY_FUNCTION"]}
			if o.keyed {
				dc.SealKeyID = env["CAIRN_SEAL_KEY_ID"]
			}
			d, err := deployer.NewFromAWS(cfg, dc)
			if err != nil {
				return localcairn.Handlers{}, err
			}
			// The policy function as Lambda runs it, its reads gated to cairn's bucket.
			judged := judge.New(objects.Gate(awsclient.S3(cfg), l.Cairn.Bucket), judge.Config{Bucket: l.Cairn.Bucket}, logger)
			h := localcairn.Handlers{Deployer: d.Handle, Policy: judged.Handle}
			if o.ports {
				pools, err := ports.ParsePools(env[ports.PoolsEnv])
				if err != nil {
					return localcairn.Handlers{}, err
				}
				p, err := ports.NewHandler(awsclient.S3(cfg), ports.Config{Bucket: l.Cairn.Bucket, Pools: pools,
					Handler: customresource.Options{AllowedHosts: customresource.ParseHosts(env[customresource.HostsEnv]), Logger: logger}})
				if err != nil {
					return localcairn.Handlers{}, err
				}
				h.Ports = p.HandleSQS
			}
			return h, nil
		}})
	t.Cleanup(func() {
		close(stop)
		<-stopped
		if l != nil {
			l.Close()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if l.Cairn.Bucket != localBucket {
		t.Fatalf("cairn's bucket is %s, want %s", l.Cairn.Bucket, localBucket)
	}
	t.Setenv("AWS_CA_BUNDLE", "")
	t.Setenv("CAIRN_BUCKET", "")
	for _, kv := range l.Emulator.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	cfg, err := awsclient.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return l.Emulator, awsclient.S3(cfg)
}

// bundleDir writes a two-stack bundle.
func bundleDir(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"cairn.yaml": `namespace: cli
stacks:
  - name: topic
    template_path: topic.yaml
  - name: param
    template_path: param.yaml
    parameters:
      Value: ${output topic::Arn}
` + extra,
		"topic.yaml": "Resources:\n  Topic:\n    Type: AWS::SNS::Topic\nOutputs:\n  Arn:\n    Value: !Ref Topic\n",
		"param.yaml": "Parameters:\n  Value:\n    Type: String\nResources:\n  P:\n    Type: AWS::SSM::Parameter\n    Properties:\n      Type: String\n      Value: !Ref Value\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPushWaitAndStatus(t *testing.T) {
	// A slower clock than other tests': a change set is ready a second after it is made, so
	// at half a second per millisecond no poll of the follower would ever see it being made.
	_, s3c := deployEmulator(t, 20*time.Millisecond)
	dir := bundleDir(t, "")
	ref := gitInit(t, dir, "https://example.com/cli.git")
	var stdout, stderr bytes.Buffer
	code := run([]string{"push", dir, "--deployment", "cli", "--bucket", localBucket, "--wait", "--poll", "20ms", "--timeout", "1m"}, &stdout, &stderr)
	out := stdout.String()
	if code != 0 {
		t.Fatalf("push --wait exited %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	// Each stack's steps as they happen, with the time since the run started, in the order
	// they happened; then the summary and the report.
	for _, re := range []string{
		`^pushed ` + regexp.QuoteMeta(dir) + ` to s3://cairn-000000000000-us-east-1/deployments/cli\.zip \(version …\S{8}\) at git ` + ref + `$`,
		`^run (\S+) of deployment cli: push$`,
		`^  \d\d:\d\d  topic  create    done$`,
		`^  \d\d:\d\d  param  create    (creating change set|executing change set \(1 change\))$`,
		`^  \d\d:\d\d  param  create    done$`,
		`^run \S+ succeeded in \S+: 2 created, 0 updated, 0 deleted, 0 unchanged, 0 failed$`,
		`^report: s3://cairn-000000000000-us-east-1/runs/cli/\S+\.md$`,
	} {
		loc := regexp.MustCompile("(?m)" + re).FindStringIndex(out)
		if loc == nil {
			t.Fatalf("push output lacks, in order, a line matching %s:\n%s", re, stdout.String())
		}
		out = out[loc[1]:]
	}
	var elapsed []string
	for _, m := range regexp.MustCompile(`(?m)^  (\d\d:\d\d)  `).FindAllStringSubmatch(stdout.String(), -1) {
		elapsed = append(elapsed, m[1])
	}
	if !slices.IsSorted(elapsed) || len(elapsed) < 4 {
		t.Errorf("steps not in the order they happened: %v", elapsed)
	}
	head, err := s3c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(localBucket), Key: aws.String("deployments/cli.zip")})
	if err != nil {
		t.Fatal(err)
	}
	if head.Metadata["git-ref"] != ref || head.Metadata["git-remote"] != "https://example.com/cli.git" {
		t.Errorf("upload metadata %v, want git ref %s and the remote", head.Metadata, ref)
	}

	stdout.Reset()
	t.Setenv("CAIRN_BUCKET", localBucket)
	if code := run([]string{"status", "cli"}, &stdout, &stderr); code != 0 {
		t.Fatalf("status exited %d: %s", code, stderr.String())
	}
	for _, re := range []string{
		`^deployment cli: succeeded by run \S+ \(push\)$`,
		`^STACK +CLOUDFORMATION +ACTION +STATUS +CHANGES +REASON$`,
		`^topic +cli-topic +create +done +1`,
		`^  \S+ +push +succeeded +\S+ ago +2 created, 0 updated, 0 deleted, 0 unchanged, 0 failed$`,
	} {
		if !regexp.MustCompile("(?m)" + re).MatchString(stdout.String()) {
			t.Errorf("status output lacks a line matching %s:\n%s", re, stdout.String())
		}
	}

	// A failing run's exit code is 1: the second stack imports an export that does not exist
	// (which only CloudFormation can tell).
	bad := bundleDir(t, "")
	os.WriteFile(filepath.Join(bad, "param.yaml"), []byte("Parameters:\n  Value:\n    Type: String\nResources:\n  P:\n    Type: AWS::SSM::Parameter\n    Properties:\n      Type: String\n      Value: !ImportValue nowhere-export\n"), 0o644)
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"push", bad, "--deployment", "cli", "--wait", "--poll", "20ms", "--timeout", "1m"}, &stdout, &stderr)
	if code != 1 || !regexp.MustCompile(`(?m)^run \S+ failed in \S+: 0 created, 0 updated, 0 deleted, 1 unchanged, 1 failed$`).MatchString(stdout.String()) {
		t.Fatalf("push of a failing bundle exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// gitInit makes dir a git work tree with one commit and an origin, and returns HEAD.
func gitInit(t *testing.T, dir, remote string) string {
	t.Helper()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "bundle")
	git("remote", "add", "origin", remote)
	return git("rev-parse", "HEAD")
}

func TestPushRefusesAnInvalidBundle(t *testing.T) {
	dir := bundleDir(t, "  - name: broken\n")
	var stdout, stderr bytes.Buffer
	code := run([]string{"push", dir, "--deployment", "cli", "--bucket", localBucket}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "cairn.yaml:") || stdout.Len() != 0 {
		t.Fatalf("code %d, stdout %q, stderr %q: want 1 and located errors, nothing uploaded", code, stdout.String(), stderr.String())
	}
	code = run([]string{"push", dir}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--deployment NAME is required") {
		t.Fatalf("code %d, stderr %q", code, stderr.String())
	}
}

// TestPushAndPlanRefuseAReservedDeploymentName: a deployment named active would write its
// runs into the index of open runs, so the CLI refuses it before reading the bundle.
func TestPushAndPlanRefuseAReservedDeploymentName(t *testing.T) {
	dir := bundleDir(t, "")
	for _, cmd := range []string{"push", "plan"} {
		var stdout, stderr bytes.Buffer
		code := run([]string{cmd, dir, "--deployment", "active", "--bucket", localBucket}, &stdout, &stderr)
		want := cmd + `: deployment "active": the name is reserved (runs/active/ holds the index of open runs): choose another name`
		if code != 2 || !strings.Contains(stderr.String(), want) || stdout.Len() != 0 {
			t.Errorf("%s: code %d, stdout %q, stderr %q: want 2 and %q", cmd, code, stdout.String(), stderr.String(), want)
		}
	}
}
