package deployer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
)

// push uploads the bundle directory as deployments/NAME.zip and returns the version id.
func (w *world) push(name, dir string) string {
	w.t.Helper()
	data, err := bundle.Zip(dir)
	if err != nil {
		w.t.Fatal(err)
	}
	return w.pushBytes(name, data)
}

func (w *world) pushBytes(name string, data []byte) string {
	w.t.Helper()
	out, err := w.s3.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String("deployments/" + name + ".zip"), Body: bytes.NewReader(data),
		Metadata: map[string]string{"git-ref": "0123456789abcdef0123456789abcdef01234567", "git-remote": "https://example.com/shop.git"},
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return aws.ToString(out.VersionId)
}

// runs returns every run document of a deployment, oldest first.
func (w *world) runs(name string) []*rundoc.Document {
	w.t.Helper()
	ctx := context.Background()
	out, err := w.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("runs/" + name + "/")})
	if err != nil {
		w.t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		if strings.HasSuffix(aws.ToString(o.Key), ".json") {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	sort.Strings(keys)
	var docs []*rundoc.Document
	for _, k := range keys {
		docs = append(docs, w.doc(k))
	}
	return docs
}

func (w *world) doc(key string) *rundoc.Document {
	w.t.Helper()
	body := w.object(key)
	doc, err := rundoc.DecodeDocument([]byte(body))
	if err != nil {
		w.t.Fatalf("%s: %v", key, err)
	}
	return doc
}

func (w *world) object(key string) string {
	w.t.Helper()
	out, err := w.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		w.t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

// wait returns the finished run of the upload of version, waiting up to three minutes of
// wall time for it: runs of a few virtual hours finish in seconds on an idle machine, and
// a loaded one (make test runs three packages at once) starves the clock's ticks.
func (w *world) wait(name, version string) *rundoc.Document {
	w.t.Helper()
	return w.waitRun(name, version, 3*time.Minute)
}

func (w *world) waitRun(name, version string, timeout time.Duration) *rundoc.Document {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, d := range w.runs(name) {
			if d.Bundle.VersionID == version && d.Run.Status != run.Running {
				return d
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	var states []string
	for _, d := range w.runs(name) {
		b, _ := json.MarshalIndent(d.Run, "", " ")
		states = append(states, string(b))
	}
	w.t.Fatalf("run of %s version %s did not finish; runs:\n%s", name, version, strings.Join(states, "\n"))
	return nil
}

// graph returns the persistent graph of namespace/key.
func (w *world) graph(namespace, key string) *state.Graph {
	w.t.Helper()
	g, err := state.Decode([]byte(w.object(layout.StateKey(namespace, key))))
	if err != nil {
		w.t.Fatal(err)
	}
	return g
}

// stacks returns the live stacks by name, with their status.
func (w *world) stacks() map[string]cfntypes.Stack {
	w.t.Helper()
	out := map[string]cfntypes.Stack{}
	p := cloudformation.NewDescribeStacksPaginator(w.cfnc, &cloudformation.DescribeStacksInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			w.t.Fatal(err)
		}
		for _, s := range page.Stacks {
			out[aws.ToString(s.StackName)] = s
		}
	}
	return out
}

// cfnCalls returns the emulator's CloudFormation call counts, from GET /_local/calls.
func (w *world) cfnCalls() map[string]int {
	w.t.Helper()
	resp, err := http.Get(w.em.URL() + "/_local/calls")
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var calls map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&calls); err != nil {
		w.t.Fatalf("GET /_local/calls: %v", err)
	}
	out := map[string]int{}
	for k, v := range calls {
		if a, ok := strings.CutPrefix(k, "cloudformation."); ok {
			out[a] = v
		}
	}
	return out
}

func phases(d *rundoc.Document) map[string]run.Phase {
	out := map[string]run.Phase{}
	for n, s := range d.Run.Stacks {
		out[n] = s.Phase
	}
	return out
}
