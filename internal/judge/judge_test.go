package judge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/judge"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/policy"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/verdict"
)

const (
	bucketName = "cairn-000000000000-us-east-1"
	function   = "cairn-policy"
)

var at = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

// env is the policy function as Lambda runs it, in the emulator, invoked as the deployer
// invokes it (awsclient.Invoker: Lambda's Invoke, signed).
type env struct {
	ctx     context.Context
	s3      *s3.Client
	invoker *awsclient.Invoker
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	e, err := awslocal.New(awslocal.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	if err := e.Start("127.0.0.1:0"); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	ctx := context.Background()
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	s3c := awsclient.S3(cfg)
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucketName)}); err != nil {
		tb.Fatal(err)
	}
	if _, err := s3c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucketName),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		tb.Fatal(err)
	}
	j := judge.New(objects.Gate(s3c, bucketName), judge.Config{Bucket: bucketName}, slog.New(slog.DiscardHandler))
	if err := e.RegisterFunction(function, j.Handle); err != nil {
		tb.Fatal(err)
	}
	return &env{ctx: ctx, s3: s3c, invoker: awsclient.NewInvoker(cfg)}
}

func (v *env) put(tb testing.TB, key string, body []byte) string {
	tb.Helper()
	out, err := v.s3.PutObject(v.ctx, &s3.PutObjectInput{Bucket: aws.String(bucketName), Key: aws.String(key), Body: bytes.NewReader(body)})
	if err != nil {
		tb.Fatal(err)
	}
	return aws.ToString(out.VersionId)
}

// upload zips files as a bundle and uploads it to key.
func (v *env) upload(tb testing.TB, key string, files map[string]string) plan.BundleVersion {
	tb.Helper()
	dir := tb.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	zip, err := bundle.Zip(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return plan.BundleVersion{Bucket: bucketName, Key: key, VersionID: v.put(tb, key, zip), SHA256: rundoc.Sum(zip)}
}

func (v *env) invoke(tb testing.TB, req verdict.Request) verdict.Answer {
	tb.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := v.invoker.Invoke(v.ctx, function, body)
	if err != nil {
		tb.Fatal(err)
	}
	var a verdict.Answer
	if err := json.Unmarshal(out, &a); err != nil {
		tb.Fatalf("answer %s: %v", out, err)
	}
	return a
}

func library(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := fs.ReadFile(policy.Library(), name)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func testdata(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

const (
	publicSite  = "Resources:\n  Site:\n    Type: AWS::S3::Bucket\n    Properties:\n      AccessControl: PublicRead\n      OwnershipControls:\n        Rules:\n          - ObjectOwnership: ObjectWriter\n"
	privateSite = "Resources:\n  Site:\n    Type: AWS::S3::Bucket\n    Properties:\n      Tags:\n        - Key: team\n          Value: web\n"
)

func files(template string, bundlePolicies bool) map[string]string {
	cfg := "namespace: shop\nstacks:\n  - name: web\n    template_path: web.yaml\n"
	out := map[string]string{"web.yaml": template}
	if bundlePolicies {
		cfg = "policies: rules\n" + cfg
	}
	out["cairn.yaml"] = cfg
	return out
}

func planRequest(tb testing.TB, deployment string, bv plan.BundleVersion) verdict.Request {
	tb.Helper()
	doc := &plan.Document{ID: "p1", Deployment: deployment, Namespace: "shop", Status: plan.Planned, Bundle: bv,
		Run:    &run.Run{ID: "p1", Deployment: deployment, Mode: run.ModePlan, Stacks: map[string]*run.Stack{"web": {Name: "web", StackName: "shop-web", Intent: run.IntentDeploy}}},
		Stacks: []plan.Stack{{Name: "web", StackName: "shop-web", Action: plan.Update, Changes: []plan.Change{{LogicalID: "Site", Type: "AWS::S3::Bucket", Action: "Modify", Replacement: "False"}}}}}
	body, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return verdict.Request{Kind: verdict.Plan, Deployment: deployment, PlanID: "p1", RunID: "p1", Time: at, Plan: body}
}

func pushRequest(tb testing.TB, bv plan.BundleVersion) verdict.Request {
	tb.Helper()
	r := &run.Run{ID: "r1", Deployment: "shop", Mode: run.ModeDeploy, Stacks: map[string]*run.Stack{"web": {Name: "web", StackName: "shop-web", Intent: run.IntentDeploy}}}
	rb, _ := json.Marshal(r)
	bb, _ := json.Marshal(bv)
	return verdict.Request{Kind: verdict.Push, Deployment: "shop", RunID: "r1", Time: at, Run: rb, Bundle: bb}
}

// TestJudgeThroughInvoke: the policy function, invoked as the deployer invokes it, reads
// the team's policies from policies/ of cairn's bucket and the bundle's from its
// directory, judges them apart, and says where it read them; every failure is an
// error in its answer, which the deployer counts as a denial.
func TestJudgeThroughInvoke(t *testing.T) {
	tests := []struct {
		name     string
		team     map[string][]byte // policies/ keys
		template string
		bundle   bool   // the bundle names its policies: rules/tags.rego
		key      string // where the bundle is uploaded (default plans/shop.zip)
		push     bool
		tamper   bool // the request names another sha256 than the upload's
		want     []string
		err      string
	}{
		{name: "a team denial", team: map[string][]byte{"policies/security/s3_public.rego": library(t, "s3_public.rego")}, template: publicSite,
			want: []string{"deny cairn.s3_public team web Site"}},
		{name: "a private bucket passes", team: map[string][]byte{"policies/security/s3_public.rego": library(t, "s3_public.rego")}, template: privateSite},
		{name: "the bundle adds a denial", team: map[string][]byte{"policies/security/s3_public.rego": library(t, "s3_public.rego")}, template: publicSite, bundle: true,
			want: []string{"deny cairn.s3_public team web Site", "deny shop.tags bundle web Site"}},
		{name: "a push judges the templates", team: map[string][]byte{"policies/s3_public.rego": library(t, "s3_public.rego")}, template: publicSite, push: true,
			want: []string{"deny cairn.s3_public team web Site"}},
		{name: "no policies", template: publicSite},
		{name: "files other than .rego and .json are not policies", team: map[string][]byte{"policies/README.md": []byte("not rego")}, template: publicSite},
		{name: "a broken team policy fails closed", team: map[string][]byte{"policies/bad.rego": []byte(testdata(t, "team_bad.rego"))}, template: publicSite,
			err: "team policy policies/bad.rego:4: var x is unsafe"},
		{name: "a bundle other than the one recorded fails closed", template: publicSite, tamper: true, err: "as the run recorded: push it again"},
		{name: "another deployment's bundle is out of reach", template: publicSite, key: "plans/other.zip",
			err: "a run of deployment shop may not read plans/other.zip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newEnv(t)
			var versions []string
			for k, body := range tt.team {
				versions = append(versions, v.put(t, k, body))
			}
			fs := files(tt.template, tt.bundle)
			if tt.bundle {
				fs["rules/tags.rego"] = testdata(t, "bundle_tags.rego")
			}
			key := tt.key
			if key == "" {
				key = "plans/shop.zip"
			}
			bv := v.upload(t, key, fs)
			if tt.tamper {
				bv.SHA256 = strings.Repeat("0", 64)
			}
			req := planRequest(t, "shop", bv)
			if tt.push {
				req = pushRequest(t, bv)
			}
			a := v.invoke(t, req)
			if tt.err != "" {
				if !strings.Contains(a.Error, tt.err) || len(a.Results) > 0 {
					t.Fatalf("answer error %q, results %v; want an error holding %q", a.Error, a.Results, tt.err)
				}
				return
			}
			if a.Error != "" {
				t.Fatalf("answer error: %s", a.Error)
			}
			var got []string
			for _, r := range a.Results {
				got = append(got, strings.Join([]string{r.Level, r.Rule, r.Origin, r.Stack, r.Resource}, " "))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("results:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			var read []string
			for _, o := range a.Source.Objects {
				read = append(read, o.VersionID)
				if o.ETag == "" || o.VersionID == "" {
					t.Errorf("policy %s read without its version or ETag: %+v", o.Key, o)
				}
			}
			wantRead := 0
			for k := range tt.team {
				if strings.HasSuffix(k, ".rego") || strings.HasSuffix(k, ".json") {
					wantRead++
				}
			}
			if a.Source.Bucket != bucketName || a.Source.Prefix != "policies/" || len(read) != wantRead {
				t.Errorf("source %+v, want %d object(s) of s3://%s/policies/ (%v)", a.Source, wantRead, bucketName, versions)
			}
			if tt.bundle && (a.Source.BundleDir != "rules" || a.Source.BundleFiles != 1) {
				t.Errorf("bundle source %q, %d file(s); want rules, 1", a.Source.BundleDir, a.Source.BundleFiles)
			}
		})
	}
}

// TestJudgeRefusesAMismatchedRequest: the documents must be of the deployment and plan
// or run the request names.
func TestJudgeRefusesAMismatchedRequest(t *testing.T) {
	v := newEnv(t)
	bv := v.upload(t, "plans/shop.zip", files(publicSite, false))
	req := planRequest(t, "shop", bv)
	req.PlanID = "p2"
	if a := v.invoke(t, req); !strings.Contains(a.Error, "the plan document is plan p1 of shop, not plan p2 of shop") {
		t.Errorf("answer %+v", a)
	}
	req = planRequest(t, "shop", bv)
	req.Kind = "apply"
	if a := v.invoke(t, req); !strings.Contains(a.Error, `kind "apply": judge a plan or a push`) {
		t.Errorf("answer %+v", a)
	}
}
