package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/cairn-dev/cairn/internal/bundle"
	cdkapp "github.com/cairn-dev/cairn/testdata/cdkapp/app"
)

// cdkAppDir is the example CDK app of the README's "Deploying a CDK app"; its synthesized
// variants are kept under assemblies/ so the tests that deploy them need no Node.
const cdkAppDir = "../testdata/cdkapp"

// cdkAppVariants are the variants of the example app cairn's tests deploy one after the
// other, each changing one thing of the one before: the app as committed, a code change in
// its function, its audit stack removed, its stage renamed, and an image asset added.
var cdkAppVariants = []struct {
	name string
	opts func(o *cdkapp.Options)
}{
	{"base", func(*cdkapp.Options) {}},
	{"code-v2", func(o *cdkapp.Options) { o.Code = "v2" }},
	{"no-audit", func(o *cdkapp.Options) { o.Code, o.Audit = "v2", false }},
	{"stage-test", func(o *cdkapp.Options) { o.Code, o.Audit, o.Stage = "v2", false, "Test" }},
	{"image", func(o *cdkapp.Options) { o.Code, o.Audit, o.Stage, o.Image = "v2", false, "Test", true }},
}

// synthCDKApp synthesizes a variant of the example app into a new folder and returns it.
func synthCDKApp(t *testing.T, opts func(o *cdkapp.Options)) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "cdk.out")
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out)})
	o := cdkapp.Default(cdkAppDir)
	opts(&o)
	cdkapp.Build(app, o)
	app.Synth(nil)
	return out
}

// TestCDKAppAssemblies synthesizes every variant of testdata/cdkapp and compares it with
// its golden assembly (testdata/cdkapp/assemblies/NAME), by the content hash cairn gives a
// cdk.out it pushes; the app as committed is synthesized twice and must hash the same, the
// property by which `cairn apply cdk.out` finds the plan reviewed for it. Regenerate with
// go test ./infra -run TestCDKAppAssemblies -update.
func TestCDKAppAssemblies(t *testing.T) {
	var first string
	for _, v := range cdkAppVariants {
		got := synthCDKApp(t, v.opts)
		sum := digest(t, got)
		golden := filepath.Join(cdkAppDir, "assemblies", v.name)
		if v.name == "base" {
			first = sum
			again := digest(t, synthCDKApp(t, v.opts))
			if again != sum {
				t.Errorf("two synths of the example app hash differently: %s and %s; what differs must join bundle.assemblyNoise (and the README's list)", sum, again)
			}
			t.Logf("the example app's assembly hashes %s in two synths", sum)
		} else if sum == first {
			t.Errorf("variant %s hashes as the base app does (%s): it changes nothing", v.name, sum)
		}
		if *update {
			writeGolden(t, got, golden)
			continue
		}
		if _, err := os.Stat(golden); err != nil {
			t.Fatalf("%v: run go test ./infra -run TestCDKAppAssemblies -update", err)
		}
		if want := digest(t, golden); want != sum {
			t.Errorf("variant %s: the synthesized assembly (sha256 %s) differs from %s (sha256 %s) in %v: run go test ./infra -run TestCDKAppAssemblies -update and commit the result",
				v.name, sum, golden, want, differing(t, got, golden))
		}
	}
}

func digest(t *testing.T, dir string) string {
	t.Helper()
	sum, err := bundle.Digest(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// contents reads the files of an assembly a bundle holds (those bundle.Zip keeps).
func contents(t *testing.T, dir string) map[string]string {
	t.Helper()
	zipped, err := bundle.Zip(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.FromZip(zipped)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	err = fs.WalkDir(b.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(b.FS, p)
		out[p] = string(body)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// differing lists the files whose content differs between two assemblies.
func differing(t *testing.T, a, b string) []string {
	ca, cb := contents(t, a), contents(t, b)
	var out []string
	for p, body := range ca {
		if cb[p] != body {
			out = append(out, p)
		}
	}
	for p := range cb {
		if _, ok := ca[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// writeGolden replaces the golden assembly with the files of got a bundle holds.
func writeGolden(t *testing.T, got, golden string) {
	t.Helper()
	if err := os.RemoveAll(golden); err != nil {
		t.Fatal(err)
	}
	for p, body := range contents(t, got) {
		dst := filepath.Join(golden, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote %s", golden)
}
