package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
)

// stateEmulator is s3Emulator, with bucket versioned when versioned is set.
func stateEmulator(t *testing.T, bucket string, versioned bool) *s3.Client {
	t.Helper()
	client := s3Emulator(t, bucket)
	if versioned {
		if _, err := client.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
			t.Fatal(err)
		}
	}
	return client
}

// deployState writes one generation per status of shop/main's graph, as deployer runs do.
func deployState(t *testing.T, s *statestore.Store, statuses ...string) {
	t.Helper()
	ctx := context.Background()
	for i, status := range statuses {
		l, err := s.Acquire(ctx, "shop", "main", "run-"+string(rune('1'+i)), statestore.Owner{Function: "cairn-deployer", RequestID: "req"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Read(ctx, l); err != nil && !errors.Is(err, statestore.ErrNotFound) {
			t.Fatal(err)
		}
		g := &state.Graph{
			Bundle: state.BundleRef{SHA256: "abc123", GitRef: "refs/heads/main", GitRemote: "git@example.com:shop.git", VersionID: "bv1"},
			Stacks: map[string]*state.Stack{
				"app": {Name: "app", StackName: "shop-app", Account: "000000000000", Region: "us-east-1", Requires: []string{"vpc"}, Status: "CREATE_COMPLETE",
					Outputs: map[string]string{"Url": "https://shop.example.com"}},
				"vpc":  {Name: "vpc", StackName: "shop-vpc", Region: "us-east-1", Status: status},
				"edge": {Name: "edge", StackName: "shop-edge", Account: "111111111111", Region: "eu-west-1", Requires: []string{"app"}, Status: "CREATE_COMPLETE"},
			},
		}
		if err := s.Write(ctx, l, g); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStateShowAndHistory(t *testing.T) {
	client := stateEmulator(t, "cairn-state", true)
	s := &statestore.Store{S3: client, Bucket: "cairn-state"}
	deployState(t, s, "CREATE_COMPLETE", "UPDATE_COMPLETE")
	if _, err := s.Acquire(context.Background(), "shop", "main", "run-live", statestore.Owner{Function: "cairn-deployer", RequestID: "req-live"}); err != nil {
		t.Fatal(err)
	}
	versions, err := s.History(context.Background(), "shop", "main")
	if err != nil || len(versions) != 2 {
		t.Fatalf("history: %v, %v", versions, err)
	}
	first := versions[1].VersionID

	tests := []struct {
		name    string
		args    []string
		env     string // CAIRN_BUCKET
		code    int
		want    []string // regexps, in order, on stdout
		wantErr string
	}{
		{name: "latest", args: []string{"state", "show", "shop", "main", "--bucket", "cairn-state"}, want: []string{
			`state shop/main \(latest\): generation 2, written \S+Z by run run-2`,
			`bundle: version bv1, sha256 abc123, git refs/heads/main of git@example.com:shop.git`,
			`NAME\s+STACK\s+STATUS\s+REQUIRES\s+REGION\s+UPDATED\s+OUTPUTS`,
			`vpc\s+shop-vpc\s+UPDATE_COMPLETE\s+-\s+us-east-1`, // dependency order: vpc first
			`app\s+shop-app\s+CREATE_COMPLETE\s+vpc\s+us-east-1\s+-\s+Url=https://shop.example.com`,
			`edge\s+shop-edge \(111111111111, eu-west-1\)\s+CREATE_COMPLETE\s+app\s+eu-west-1\s+`,
			`lock: held by run run-live \(function cairn-deployer, request req-live`,
		}},
		{name: "list", args: []string{"state", "list", "--bucket", "cairn-state"}, want: []string{
			`NAMESPACE\s+KEY\s+GENERATION\s+STACKS\s+WRITTEN\s+RUN\s+LOCK`,
			`shop\s+main\s+2\s+3\s+\S+Z\s+run-2\s+held by run run-live`,
		}},
		{name: "bucket from the environment", args: []string{"state", "show", "shop", "main"}, env: "cairn-state",
			want: []string{`generation 2`}},
		{name: "earlier version", args: []string{"state", "show", "shop", "main", "--version", first, "--bucket", "cairn-state"}, want: []string{
			`state shop/main \(version ` + regexp.QuoteMeta(report.ShortVersion(first)) + `\): generation 1, written \S+ by run run-1`,
			`vpc\s+shop-vpc\s+CREATE_COMPLETE`,
		}},
		{name: "earlier version as history shortens it", args: []string{"state", "show", "shop", "main", "--version", report.ShortVersion(first), "--bucket", "cairn-state"}, want: []string{
			`state shop/main \(version ` + regexp.QuoteMeta(report.ShortVersion(first)) + `\): generation 1`,
		}},
		{name: "history", args: []string{"state", "history", "shop", "main", "--bucket", "cairn-state"}, want: []string{
			`VERSION\s+MODIFIED\s+GENERATION\s+RUN\s+STACKS\s+NOTE`,
			regexp.QuoteMeta(report.ShortVersion(versions[0].VersionID)) + `\s+\S+Z\s+2\s+run-2\s+3\s+latest`,
			regexp.QuoteMeta(report.ShortVersion(first)) + `\s+\S+Z\s+1\s+run-1\s+3`,
		}},
		{name: "missing graph", args: []string{"state", "show", "shop", "absent", "--bucket", "cairn-state"}, code: 1,
			wantErr: "nothing has been deployed to shop/absent yet"},
		{name: "unknown version", args: []string{"state", "show", "shop", "main", "--version", "nope", "--bucket", "cairn-state"}, code: 1,
			wantErr: "version nope"},
		{name: "no such bucket", args: []string{"state", "show", "shop", "main", "--bucket", "nope"}, code: 2,
			wantErr: "cairn: bucket nope (from --bucket) does not exist: check the name, or the AWS account and region (us-east-1) you point at\n"},
		{name: "bad namespace", args: []string{"state", "show", "a/b", "main", "--bucket", "cairn-state"}, code: 2,
			wantErr: `invalid namespace "a/b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CAIRN_BUCKET", tc.env)
			var out, errOut bytes.Buffer
			code := run(tc.args, &out, &errOut)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, &out, &errOut)
			}
			rest := out.String()
			for _, w := range tc.want {
				loc := regexp.MustCompile(w).FindStringIndex(rest)
				if loc == nil {
					t.Fatalf("stdout lacks %q (in order):\n%s", w, &out)
				}
				rest = rest[loc[1]:]
			}
			if !strings.Contains(errOut.String(), tc.wantErr) {
				t.Errorf("stderr %q lacks %q", &errOut, tc.wantErr)
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		var out, errOut bytes.Buffer
		if code := run([]string{"state", "show", "shop", "main", "--json", "--bucket", "cairn-state"}, &out, &errOut); code != 0 {
			t.Fatalf("exit %d: %s", code, &errOut)
		}
		g, err := state.Decode(out.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if g.Generation != 2 || g.Stacks["vpc"].Status != "UPDATE_COMPLETE" || !json.Valid(out.Bytes()) {
			t.Errorf("json output = %s", &out)
		}
	})
}

func TestStateHistoryWarnsWithoutVersioning(t *testing.T) {
	client := stateEmulator(t, "cairn-plain", false)
	deployState(t, &statestore.Store{S3: client, Bucket: "cairn-plain"}, "CREATE_COMPLETE")
	var out, errOut bytes.Buffer
	if code := run([]string{"state", "history", "shop", "main", "--bucket", "cairn-plain"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, &errOut)
	}
	if !strings.Contains(errOut.String(), "WARNING: bucket cairn-plain has versioning never enabled") {
		t.Errorf("stderr %q lacks the versioning warning", &errOut)
	}
	if !regexp.MustCompile(`\s1\s+run-1\s+3\s+latest`).MatchString(out.String()) {
		t.Errorf("stdout lacks the one version:\n%s", &out)
	}
}

func TestUnlock(t *testing.T) {
	client := stateEmulator(t, "cairn-state", true)
	ctx := context.Background()
	live := &statestore.Store{S3: client, Bucket: "cairn-state"}
	deployState(t, live, "CREATE_COMPLETE")
	if _, err := live.Acquire(ctx, "shop", "main", "run-live", statestore.Owner{Function: "cairn-deployer", RequestID: "req-live"}); err != nil {
		t.Fatal(err)
	}
	crashed := &statestore.Store{S3: client, Bucket: "cairn-state", Clock: clock.NewFake(time.Now().Add(-time.Hour)), Lease: 10 * time.Minute}
	if _, err := crashed.Acquire(ctx, "shop", "old", "run-crashed", statestore.Owner{Function: "cairn-deployer", RequestID: "req-old"}); err != nil {
		t.Fatal(err)
	}

	// In order: each step sees the previous one's effect.
	steps := []struct {
		name     string
		args     []string
		code     int
		wantOut  string
		wantErr  []string
		lockLeft bool // locks/shop/main.lock still there afterwards
	}{
		{name: "live lock without --force", args: []string{"unlock", "shop", "main"}, code: 1,
			wantErr: []string{"locked by a live run: run run-live (function cairn-deployer, request req-live", "cairn unlock shop main --force"}, lockLeft: true},
		{name: "live lock with --force", args: []string{"unlock", "shop", "main", "--force"},
			wantOut: "removed LIVE lock (forced) on state shop/main held by run run-live (function cairn-deployer, request req-live"},
		{name: "no lock", args: []string{"unlock", "shop", "main"}, wantOut: "state shop/main is not locked: nothing to do"},
		{name: "no graph", args: []string{"unlock", "shop", "nope"}, code: 1,
			wantErr: []string{"cairn: there is no graph shop/nope (no s3://cairn-state/state/shop/nope.json) and no lock on it: check NAMESPACE and KEY (`cairn state list` lists the graphs)\n"}},
		{name: "expired lock", args: []string{"unlock", "shop", "old"},
			wantOut: "removed expired lock on state shop/old held by run run-crashed"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(append(st.args, "--bucket", "cairn-state"), &out, &errOut)
			if code != st.code {
				t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, st.code, &out, &errOut)
			}
			if !strings.Contains(out.String(), st.wantOut) {
				t.Errorf("stdout %q lacks %q", &out, st.wantOut)
			}
			for _, w := range st.wantErr {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr %q lacks %q", &errOut, w)
				}
			}
			_, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("cairn-state"), Key: aws.String("locks/shop/main.lock")})
			if left := err == nil; left != st.lockLeft {
				t.Errorf("lock left = %v, want %v", left, st.lockLeft)
			}
		})
	}
}
