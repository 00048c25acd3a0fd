package deployer_test

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
)

const lookupsBundle = "testdata/lookups"

// The SecureString values of the tests: never to be found in the bucket or the logs.
const (
	secret1 = "Corr3ct-Horse-Battery-1"
	secret2 = "Corr3ct-Horse-Battery-2"
)

// ssmClient talks to the emulator's Parameter Store as a user's tools do.
func (w *world) ssmClient() *ssm.Client {
	w.t.Helper()
	cfg, err := w.em.AWSConfig(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	return ssm.NewFromConfig(cfg)
}

func (w *world) putParameter(name, typ, value string) {
	w.t.Helper()
	_, err := w.ssmClient().PutParameter(context.Background(), &ssm.PutParameterInput{
		Name: aws.String(name), Type: ssmtypes.ParameterType(typ), Value: aws.String(value), Overwrite: aws.Bool(true),
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

// parameterValue is the value of the SSM parameter a stack created (its Name output).
func (w *world) parameterValue(doc *rundoc.Document, stack string) string {
	w.t.Helper()
	name := doc.Run.Stacks[stack].Outputs["Name"]
	out, err := w.ssmClient().GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		w.t.Fatalf("stack %s: parameter %q: %v", stack, name, err)
	}
	return aws.ToString(out.Parameter.Value)
}

func (w *world) putLookupParameters() {
	w.putParameter("/shop/prod/size", "String", "small")
	w.putParameter("/shop/prod/other", "StringList", "a,b")
	w.putParameter("/shop/prod/db/password", "SecureString", secret1)
}

// TestSSMValueChangeUpdatesExactlyItsStacks deploys stacks reading SSM parameters; an
// unchanged value costs no change set, and a changed one updates exactly the stack
// reading it.
func TestSSMValueChangeUpdatesExactlyItsStacks(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.putLookupParameters()
	dir := copyBundle(t, lookupsBundle)
	first := w.wait("shop", w.push("shop", dir))
	if first.Run.Status != run.Succeeded {
		t.Fatalf("first run: %s (%s); stacks %v", first.Run.Status, first.Run.Reason, phases(first))
	}
	for stack, want := range map[string]string{"sized": "small", "other": "a,b", "plain": "fixed", "db": "admin:" + secret1} {
		if got := w.parameterValue(first, stack); got != want {
			t.Errorf("stack %s made a parameter of %q, want %q", stack, got, want)
		}
	}

	before := w.cfnCalls()
	again := w.wait("shop", w.push("shop", dir))
	for _, n := range again.Run.Names() {
		if s := again.Run.Stacks[n]; s.Phase != run.Unchanged {
			t.Errorf("unchanged values: stack %s is %s (%s), want unchanged", n, s.Phase, s.Reason)
		}
	}
	if n := w.cfnCalls()["CreateChangeSet"] - before["CreateChangeSet"]; n != 0 {
		t.Errorf("unchanged values made %d change set(s), want none", n)
	}

	w.putParameter("/shop/prod/size", "String", "large")
	before = w.cfnCalls()
	changed := w.wait("shop", w.push("shop", dir))
	if changed.Run.Status != run.Succeeded {
		t.Fatalf("run after the change: %s (%s); stacks %v", changed.Run.Status, changed.Run.Reason, phases(changed))
	}
	for _, n := range changed.Run.Names() {
		want := run.Unchanged
		if n == "sized" {
			want = run.Done
		}
		if s := changed.Run.Stacks[n]; s.Phase != want {
			t.Errorf("after /shop/prod/size changed: stack %s is %s (%s), want %s", n, s.Phase, s.Reason, want)
		}
	}
	if n := w.cfnCalls()["CreateChangeSet"] - before["CreateChangeSet"]; n != 1 {
		t.Errorf("the change made %d change sets, want 1 (stack sized)", n)
	}
	if got := w.parameterValue(changed, "sized"); got != "large" {
		t.Errorf("stack sized holds %q after the update, want large", got)
	}
}

// TestMissingSSMParameterFailsItsStackOnly: a stack reading a parameter that does not
// exist fails with the reason before any change set; its dependents are blocked, the
// others deploy.
func TestMissingSSMParameterFailsItsStackOnly(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.putLookupParameters()
	dir := copyBundle(t, lookupsBundle)
	edit(t, dir, "cairn.yaml", "Value: ${ssm /shop/${var env}/other}", "Value: ${ssm /shop/${var env}/missing}")
	edit(t, dir, "cairn.yaml", "      Value: fixed", "      Value: ${output other::Name}")
	doc := w.wait("shop", w.push("shop", dir))
	if doc.Run.Status != run.RunFailed {
		t.Fatalf("run: %s, want failed", doc.Run.Status)
	}
	other, plain := doc.Run.Stacks["other"], doc.Run.Stacks["plain"]
	want := "parameters: stack other: parameter Value: ${ssm /shop/${var env}/missing}: SSM parameter /shop/prod/missing not found: create it (aws ssm put-parameter --name /shop/prod/missing --type String --value ...) or fix the name"
	if other.Phase != run.Failed || other.Reason != want || other.ChangeSetName != "" {
		t.Errorf("stack other: %s %q (change set %q), want failed %q before any change set", other.Phase, other.Reason, other.ChangeSetName, want)
	}
	if plain.Phase != run.Blocked || plain.Reason != "dependency other failed" {
		t.Errorf("stack plain: %s %q, want blocked by other", plain.Phase, plain.Reason)
	}
	if s := doc.Run.Stacks["sized"]; s.Phase != run.Done {
		t.Errorf("stack sized: %s (%s), want done", s.Phase, s.Reason)
	}
}

// TestSecureStringIsNeverStored deploys, plans and updates a stack fed a SecureString:
// CloudFormation gets the value, and no version of any object cairn wrote to its bucket,
// nor the logs, ever holds it.
func TestSecureStringIsNeverStored(t *testing.T) {
	w := newReviewWorld(t)
	w.putLookupParameters()
	dir := copyBundle(t, lookupsBundle)
	first := w.wait("shop", w.push("shop", dir))
	if first.Run.Status != run.Succeeded {
		t.Fatalf("first run: %s (%s); stacks %v", first.Run.Status, first.Run.Reason, phases(first))
	}
	if got := w.parameterValue(first, "db"); got != "admin:"+secret1 {
		t.Errorf("stack db made %q: CloudFormation did not get the SecureString", got)
	}
	if p := first.Run.Stacks["db"].Parameters["Password"]; !strings.HasPrefix(p, "{{cairn:ssm-secure:/shop/prod/db/password@") {
		t.Errorf("run document: Password = %q, want the sealed reference", p)
	}

	w.putParameter("/shop/prod/db/password", "SecureString", secret2)
	p := w.planOf("shop", w.uploadPlan("shop", dir))
	if s := p.Run.Stacks["db"]; s == nil || s.ChangeSetID == "" {
		t.Fatalf("plan: stack db %+v, want a change set for the new SecureString", s)
	}
	applied := w.approve("shop", p.ID)
	if applied.Run.Status != run.Succeeded {
		t.Fatalf("apply: %s (%s); stacks %v", applied.Run.Status, applied.Run.Reason, phases(applied))
	}
	if got := w.parameterValue(applied, "db"); got != "admin:"+secret2 {
		t.Errorf("after the apply stack db holds %q, want the new SecureString", got)
	}
	for _, n := range applied.Run.Names() {
		if s := applied.Run.Stacks[n]; n != "db" && s.Phase != run.Unchanged {
			t.Errorf("apply: stack %s is %s, want unchanged (only db reads the SecureString)", n, s.Phase)
		}
	}

	scanned := w.scanBucket(secret1, secret2)
	if scanned < 10 {
		t.Errorf("scanned only %d object versions", scanned)
	}
	for _, s := range []string{secret1, secret2} {
		if strings.Contains(w.logs.String(), s) {
			t.Errorf("the logs hold the SecureString %q", s)
		}
	}
}

// scanBucket reads every version of every object of the bucket (the entries of zips
// too) and fails the test where one holds a secret; it returns how many it read.
func (w *world) scanBucket(secrets ...string) int {
	w.t.Helper()
	return w.scanObjects(func(string) bool { return true }, secrets...)
}

// scanObjects is scanBucket of the keys scan says to read.
func (w *world) scanObjects(scan func(key string) bool, secrets ...string) int {
	w.t.Helper()
	ctx := context.Background()
	n := 0
	p := s3.NewListObjectVersionsPaginator(w.s3, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, v := range page.Versions {
			if !scan(aws.ToString(v.Key)) {
				continue
			}
			out, err := w.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: v.Key, VersionId: v.VersionId})
			if err != nil {
				w.t.Fatalf("get %s version %s: %v", aws.ToString(v.Key), aws.ToString(v.VersionId), err)
			}
			body, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil {
				w.t.Fatal(err)
			}
			n++
			texts := [][]byte{body}
			if zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body))); err == nil {
				for _, f := range zr.File {
					rc, err := f.Open()
					if err != nil {
						w.t.Fatal(err)
					}
					b, _ := io.ReadAll(rc)
					rc.Close()
					texts = append(texts, b)
				}
			}
			for _, s := range secrets {
				for _, b := range texts {
					if bytes.Contains(b, []byte(s)) {
						w.t.Errorf("%s (version %s) holds the SecureString %q", aws.ToString(v.Key), aws.ToString(v.VersionId), s)
					}
				}
			}
		}
	}
	return n
}

const migrationBundle = "../../testdata/bundles/stacker-migration"
