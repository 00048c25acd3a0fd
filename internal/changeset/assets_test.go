package changeset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/artifact"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
	"github.com/cairn-dev/cairn/internal/template"
)

// fakeAssets is an assets bucket: objects by key with their time, the calls made.
type fakeAssets struct {
	mu       sync.Mutex
	objects  map[string]time.Time
	bodies   map[string][]byte
	calls    []string
	noBucket bool
}

func (f *fakeAssets) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "HEAD "+aws.ToString(in.Key))
	at, ok := f.objects[aws.ToString(in.Key)]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "NotFound", Message: "Not Found"}
	}
	return &s3.HeadObjectOutput{LastModified: aws.Time(at)}, nil
}

func (f *fakeAssets) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "GET "+aws.ToString(in.Key))
	b, ok := f.bodies[aws.ToString(in.Key)]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "NoSuchKey", Message: "Not Found"}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(strings.NewReader(string(b)))}, nil
}

func (f *fakeAssets) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "PUT "+aws.ToString(in.Key))
	if f.noBucket {
		return nil, &smithy.GenericAPIError{Code: "NoSuchBucket", Message: "The specified bucket does not exist"}
	}
	b, _ := io.ReadAll(in.Body)
	f.bodies[aws.ToString(in.Key)] = b
	return &s3.PutObjectOutput{}, nil
}

func (f *fakeAssets) CopyObject(_ context.Context, in *s3.CopyObjectInput, _ ...func(*s3.Options)) (*s3.CopyObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "COPY "+aws.ToString(in.CopySource)+" -> "+aws.ToString(in.Key)+" "+string(in.MetadataDirective))
	return &s3.CopyObjectOutput{}, nil
}

// CreateChangeSet of a template naming local code stores each artifact in the assets
// bucket of the stack's place before the change set is made: a missing one is built and
// uploaded (its bytes, its sha256), one already there is left alone, one a month old is
// written again (the lifecycle expires what no deploy wrote for a year), and a place
// without an assets bucket fails the stack, permanently, saying how to make one.
func TestCreateChangeSetStoresArtifacts(t *testing.T) {
	files := fstest.MapFS{
		"src/app.py": {Data: []byte("def handler(e, c): return 1\n")},
		"sm.json":    {Data: []byte(`{"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`)},
	}
	tpl, err := template.Parse([]byte("Resources:\n  Fn:\n    Type: AWS::Lambda::Function\n    Properties: {Code: src}\n  Sm:\n    Type: AWS::StepFunctions::StateMachine\n    Properties: {DefinitionS3Location: sm.json}\n"))
	if err != nil {
		t.Fatal(err)
	}
	set := artifact.NewSet(files)
	code, err := set.Digest(artifact.Source{Path: "src", Zip: true})
	if err != nil {
		t.Fatal(err)
	}
	def, err := set.Digest(artifact.Source{Path: "sm.json"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	codeKey, defKey := "assets/"+code.SHA256+".zip", "assets/"+def.SHA256+".json"
	built := map[string][]byte{}
	for key, src := range map[string]artifact.Source{codeKey: {Path: "src", Zip: true}, defKey: {Path: "sm.json"}} {
		o, err := set.Build(src, artifact.Digest{})
		if err != nil {
			t.Fatal(err)
		}
		body, err := o.Body()
		if err != nil {
			t.Fatal(err)
		}
		built[key], _ = io.ReadAll(body)
		o.Close()
	}
	for _, tc := range []struct {
		name    string
		objects map[string]time.Time
		forged  string // an object whose content is not its key's
		want    []string
		err     string
	}{
		{"none there", nil, "", []string{"HEAD " + codeKey, "PUT " + codeKey, "HEAD " + defKey, "PUT " + defKey}, ""},
		{"both there", map[string]time.Time{codeKey: now.Add(-time.Hour), defKey: now.Add(-29 * 24 * time.Hour)}, "", []string{"HEAD " + codeKey, "GET " + codeKey, "HEAD " + defKey, "GET " + defKey}, ""},
		{"one a month old", map[string]time.Time{codeKey: now.Add(-31 * 24 * time.Hour), defKey: now}, "", []string{"HEAD " + codeKey, "GET " + codeKey, "COPY assets-eu/" + codeKey + " -> " + codeKey + " REPLACE", "HEAD " + defKey, "GET " + defKey}, ""},
		{"one holding other content", map[string]time.Time{codeKey: now.Add(-time.Hour), defKey: now}, codeKey, []string{"HEAD " + codeKey, "GET " + codeKey, "PUT " + codeKey, "HEAD " + defKey, "GET " + defKey}, ""},
		{"no assets bucket", nil, "", []string{"HEAD " + codeKey, "PUT " + codeKey}, "the assets bucket assets-eu does not exist (account 111111111111, eu-west-1): stacks outside cairn's own account and region"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &fakeAssets{objects: map[string]time.Time{}, bodies: map[string][]byte{}, noBucket: tc.err != ""}
			for k, v := range tc.objects {
				store.objects[k] = v
				store.bodies[k] = built[k]
				if k == tc.forged {
					store.bodies[k] = []byte("an attacker's code")
				}
			}
			cfn := &fakeCFN{t: t}
			var asked target.Spec
			c := &Client{CFN: cfn, Clock: clock.NewFake(now), Assets: func(_ context.Context, t target.Spec) (*Assets, error) {
				asked = t
				return &Assets{S3: store, Bucket: "assets-eu", Where: "account 111111111111, eu-west-1"}, nil
			}, Reach: func(context.Context, target.Spec) (API, *rate.Limiter, error) { return cfn, nil, nil }}
			spec := target.Spec{Region: "eu-west-1", RoleARN: "arn:aws:iam::111111111111:role/cairn-deploy-eu-west-1"}
			in := &Inputs{TemplateBody: tpl.Body, Tree: &template.Tree{Template: tpl, Assets: set}}
			o := c.Perform(context.Background(), run.Action{Kind: run.CreateChangeSet, Stack: "app", StackName: "shop-app", ChangeSetName: "cairn-r1-1", ChangeSetType: "CREATE", Target: spec}, in)
			if asked != spec {
				t.Errorf("assets asked for %+v, want the stack's place", asked)
			}
			if strings.Join(store.calls, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("calls\n%s\nwant\n%s", strings.Join(store.calls, "\n"), strings.Join(tc.want, "\n"))
			}
			if tc.err != "" {
				if !strings.Contains(o.Err, tc.err) || !o.Permanent || len(cfn.created) != 0 {
					t.Errorf("observation %+v, want a permanent failure with %q and no change set", o, tc.err)
				}
				return
			}
			if o.Err != "" || len(cfn.created) != 1 {
				t.Fatalf("observation %+v", o)
			}
			if b, ok := store.bodies[codeKey]; ok {
				if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != code.SHA256 {
					t.Error("the stored code is not the bytes of its digest")
				}
			}
			body := aws.ToString(cfn.created[0].TemplateBody)
			if !strings.Contains(body, `Code: {"S3Bucket": "assets-eu", "S3Key": "`+codeKey+`"}`) || !strings.Contains(body, `DefinitionS3Location: {"Bucket": "assets-eu", "Key": "`+defKey+`"}`) {
				t.Errorf("sent\n%s", body)
			}
		})
	}
}
