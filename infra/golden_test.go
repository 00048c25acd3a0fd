package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// goldenPath is the synthesized template `cairn local up` deploys into the emulator
// (internal/localcairn embeds it), so local mode runs exactly the wiring `make deploy` creates.
const goldenPath = "../internal/localcairn/cairn.template.json"

var update = flag.Bool("update", false, "rewrite "+goldenPath+" from the synthesized template (make synth does)")

// TestGoldenTemplate synthesizes cairn's stack as `make synth` does — the context of
// cdk.json — and compares it with the golden file local mode deploys. The Lambda code is
// a fixed placeholder, so the asset hashes in the template do not change with every build
// of the functions. Regenerate with `make synth` (go test ./infra -run TestGoldenTemplate -update).
func TestGoldenTemplate(t *testing.T) {
	ctx, err := cdkJSONContext("cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx[ctxLambdaDir] = lambdaDir(t, dir)
	out := filepath.Join(dir, "cdk.out")
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(out)})
	if _, err := NewCairnStack(app, "Cairn", &CairnStackProps{StackProps: awscdk.StackProps{StackName: jsii.String(stackName)}}); err != nil {
		t.Fatal(err)
	}
	app.Synth(nil)
	raw, err := os.ReadFile(filepath.Join(out, "Cairn.template.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", goldenPath, len(got))
		return
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("%v: run `make synth` to write it", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the synthesized template differs from %s, which local mode deploys: run `make synth` and commit the result", goldenPath)
	}
}
