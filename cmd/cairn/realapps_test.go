package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/localcairn"
	"github.com/cairn-dev/cairn/internal/target"
)

// testApps is testdata/apps: small apps of cairn's own, written as their users write them
// (a Go CDK app with the cdk.out the real CDK CLI synthesized from it, two SAM apps).
var testApps = filepath.Join("..", "..", "testdata", "apps")

// realApp copies testdata/apps/NAME to a folder of the test's, which the test may edit.
func realApp(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(testApps, name))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeFiles writes files (path relative to dir: body).
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cdkStaging is the CDK staging bucket of cairn's account and region, which `cairn local up
// --cdk-bootstrap` (and localcairn.BootstrapCDK) makes.
const cdkStaging = "cdk-hnb659fds-assets-000000000000-us-east-1"

// objectVersions counts the object versions of the buckets cairn and the CDK assets
// write to: cairn's assets and the CDK staging bucket.
func objectVersions(t *testing.T, s3c *s3.Client) map[string]int {
	t.Helper()
	m := map[string]int{}
	for k, n := range assetVersions(t, s3c) {
		m[localBucket+"/"+k] = n
	}
	out, err := s3c.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(cdkStaging)})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range out.Versions {
		m[cdkStaging+"/"+aws.ToString(v.Key)]++
	}
	return m
}

// The asset keys of testdata/apps/cdk-workflow/cdk.out (WorkflowStack.assets.json): the
// function's code (lambda/check, zipped) and the stack's template.
const (
	workflowCodeKey     = "6ec86fd2a52592f9760b90fc1c86d99a48369bf03d8eacbb2bc61d4f0e2f4b96.zip"
	workflowTemplateKey = "3b343c9c245f725eed161a3c9c6c535ecc8f6d97eb8e0babf12143a4aff54465.json"
)

// TestRealApps deploys the apps of testdata/apps through the CLI into the emulator, as
// their users would: validate (the SAM app whose requirements.txt is not installed is
// refused as needing building, then valid once a stand-in of its dependency is laid out
// as `pip install -t` leaves one), push with their outputs printed, an update touching the
// one stack (a line of a function's code; a tag cairn.yaml beside the CDK assembly adds),
// and an unchanged re-push that makes no CloudFormation write and stores nothing.
func TestRealApps(t *testing.T) {
	em, s3c := deployEmulator(t, 50*time.Millisecond)
	t.Setenv("CAIRN_BUCKET", localBucket)
	if err := localcairn.BootstrapCDK(context.Background(), em, []target.Target{cdkHome}, "", cdkHome.Account, time.Minute); err != nil {
		t.Fatal(err)
	}
	cfn := cfnClient(t)

	api := realApp(t, "sam-api-python")
	cairnOK(t, "init", api, "--from", filepath.Join(api, "template.yaml"), "--namespace", "api")
	want := "template.yaml:16:16: Resources.GreetFunction.Properties.CodeUri: function GreetFunction: CodeUri greet/ needs building (requirements.txt lists packages not installed there): run `sam build` and push .aws-sam/build (or build it yourself)"
	if out, code := cairnRun(t, "validate", api); code != 1 || !strings.Contains(out, want) {
		t.Fatalf("validate of the app whose requirements are not installed: exit %d, want %q:\n%s", code, want, out)
	}
	// What `pip install -r greet/requirements.txt -t greet` leaves: the package and its
	// dist-info (here a stand-in of the package, written by this test).
	writeFiles(t, api, map[string]string{
		"greet/titlecase/__init__.py":               "def titlecase(text):\n    return ' '.join(w[:1].upper() + w[1:] for w in text.split(' '))\n",
		"greet/titlecase-2.4.1.dist-info/METADATA":  "Metadata-Version: 2.1\nName: titlecase\nVersion: 2.4.1\n",
		"greet/titlecase-2.4.1.dist-info/RECORD":    "titlecase/__init__.py,,\ntitlecase-2.4.1.dist-info/METADATA,,\n",
		"greet/titlecase-2.4.1.dist-info/INSTALLER": "pip\n",
	})
	sched := realApp(t, "sam-schedule")
	cairnOK(t, "init", sched, "--from", filepath.Join(sched, "template.yaml"), "--namespace", "sched")
	// The CDK app's assembly in a folder of its own, where cairn.yaml goes for the update.
	deploy := filepath.Join(t.TempDir(), "deploy")
	if err := os.CopyFS(filepath.Join(deploy, "cdk.out"), os.DirFS(filepath.Join(testApps, "cdk-workflow", "cdk.out"))); err != nil {
		t.Fatal(err)
	}

	apps := []struct {
		name, dir, deployment, stack string
		outputs                      []string                  // regexps of the output lines push prints
		update                       func(t *testing.T) string // edits the app, returns what to push
	}{
		{"sam-api-python", api, "api", "api-template",
			[]string{`GreetApi = https://\w+\.execute-api\.us-east-1\.amazonaws\.com/Prod/greet/`, `GreetFunctionArn = arn:aws:lambda:us-east-1:000000000000:function:\S+`},
			func(t *testing.T) string {
				edit(t, api, "greet/app.py", `"hello, "`, `"hello there, "`)
				return api
			}},
		{"sam-schedule", sched, "sched", "sched-template",
			[]string{`ScheduleArn = arn:aws:scheduler:us-east-1:000000000000:schedule/default/sched-template-tick`, `DeadLetterQueueUrl = http\S+/000000000000/sched-template-tick-dlq`, `TickFunctionName = \S+`},
			func(t *testing.T) string {
				edit(t, sched, "src/tick/app.py", "import json", "import json  # touched")
				return sched
			}},
		{"cdk-workflow", filepath.Join(deploy, "cdk.out"), "flow", "WorkflowStack",
			[]string{`StateMachineArn = arn:aws:states:us-east-1:000000000000:stateMachine:cairn-order-workflow`},
			func(t *testing.T) string {
				writeFiles(t, deploy, map[string]string{"cairn.yaml": "assembly: cdk.out\nnamespace: flow\nstacks:\n  - name: WorkflowStack\n    tags: {team: real-apps}\n"})
				return deploy
			}},
	}
	for _, app := range apps {
		t.Run(app.name, func(t *testing.T) {
			if out := cairnOK(t, "validate", app.dir); !strings.Contains(out, ": ok: 1 stacks") {
				t.Fatalf("validate: %s", out)
			}
			out := cairnOK(t, append([]string{"push", app.dir, "--deployment", app.deployment}, followFlags...)...)
			if !strings.Contains(out, ": 1 created, 0 updated, 0 deleted, 0 unchanged, 0 failed") {
				t.Fatalf("push:\n%s", out)
			}
			for _, re := range app.outputs {
				if !regexp.MustCompile(`(?m)^    ` + re + `$`).MatchString(out) {
					t.Errorf("push prints no output line matching %s:\n%s", re, out)
				}
			}
			live := liveStacks(t, cfn)[app.stack]
			if live.StackStatus != "CREATE_COMPLETE" || len(live.Outputs) != len(app.outputs) {
				t.Fatalf("stack %s: %s with outputs %v", app.stack, live.StackStatus, outputsOf(live))
			}
			if app.name == "cdk-workflow" {
				// cairn published the assembly's file assets where the manifest says.
				for _, key := range []string{workflowCodeKey, workflowTemplateKey} {
					if _, err := s3c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(cdkStaging), Key: aws.String(key)}); err != nil {
						t.Errorf("the asset %s is not in the CDK staging bucket: %v", key, err)
					}
				}
			}

			// An update touching the one stack.
			dir := app.update(t)
			if out := cairnOK(t, append([]string{"push", dir, "--deployment", app.deployment}, followFlags...)...); !strings.Contains(out, ": 0 created, 1 updated, 0 deleted, 0 unchanged, 0 failed") {
				t.Fatalf("update push:\n%s", out)
			}
			live = liveStacks(t, cfn)[app.stack]
			if live.StackStatus != "UPDATE_COMPLETE" {
				t.Errorf("stack %s is %s after the update", app.stack, live.StackStatus)
			}
			if app.name == "cdk-workflow" && tagsOf(live)["team"] != "real-apps" {
				t.Errorf("stack %s has tags %v after cairn.yaml added one", app.stack, tagsOf(live))
			}

			// The same content again: nothing written.
			resetCalls(t, em)
			before := objectVersions(t, s3c)
			if out := cairnOK(t, append([]string{"push", dir, "--deployment", app.deployment}, followFlags...)...); !strings.Contains(out, ": 0 created, 0 updated, 0 deleted, 1 unchanged, 0 failed") {
				t.Fatalf("unchanged push:\n%s", out)
			}
			writes := 0
			for _, w := range cfnWrites {
				writes += cfnCalls(em, w)
			}
			if writes != 0 {
				t.Errorf("an unchanged push made %d CloudFormation writes: %v", writes, em.Calls())
			}
			if added := newKeys(before, objectVersions(t, s3c)); len(added) != 0 {
				t.Errorf("an unchanged push stored %v", added)
			}
		})
	}
}
