package bundle

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cdkApp is the example CDK app's synthesized assembly (infra's tests keep it up to date).
const cdkApp = "../../testdata/cdkapp/assemblies/base"

// writeFiles writes files (slash paths) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenCloudAssembly opens a cdk.out folder, and a zip of one, as bundles: without a
// cairn.yaml they have no config and are named by their manifest.json.
func TestOpenCloudAssembly(t *testing.T) {
	b, err := Open(cdkApp)
	if err != nil {
		t.Fatal(err)
	}
	if b.Config != nil || b.ConfigFile != filepath.Join(cdkApp, AssemblyManifest) {
		t.Errorf("Open(cdk.out): config %q named %s, want none named by its manifest.json", b.Config, b.ConfigFile)
	}
	z, err := Zip(cdkApp)
	if err != nil {
		t.Fatal(err)
	}
	zipped := filepath.Join(t.TempDir(), "cdk.out.zip")
	if err := os.WriteFile(zipped, z, 0o644); err != nil {
		t.Fatal(err)
	}
	bz, err := Open(zipped)
	if err != nil {
		t.Fatal(err)
	}
	if bz.Config != nil || bz.ConfigFile != filepath.Join(zipped, AssemblyManifest) || bz.SHA256 != b.SHA256 {
		t.Errorf("Open(cdk.out.zip): config %q named %s, sha256 %s; want none named by its manifest.json, sha256 %s as the folder's", bz.Config, bz.ConfigFile, bz.SHA256, b.SHA256)
	}
	if _, err := fs.Stat(bz.FS, "assembly-Dev/manifest.json"); err != nil {
		t.Errorf("the zip's nested assembly: %v", err)
	}
}

// TestZipLeavesOutWhatChangesBetweenSynths: in a folder holding a cloud assembly's
// manifest.json, tree.json, the stacks' *.metadata.json, the CDK CLI's lock files and
// performance-counters.json are not part of the
// bundle, so two synths of the same app zip to the same bytes; the same names elsewhere
// are kept.
func TestZipLeavesOutWhatChangesBetweenSynths(t *testing.T) {
	want, err := Zip(cdkApp)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(cdkApp)); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{
		"tree.json":           `{"version":"tree-0.1","tree":{"id":"App"}}`,
		"Audit.metadata.json": `{"/Audit":[{"type":"aws:cdk:warning","trace":["at /tmp/jsii-kernel-x1/a.js:1"]}]}`,
		"assembly-Dev/DevDataF961E460.metadata.json": `{"/Dev/Data":[]}`,
		"synth.lock":                "1234",
		"read.5678.1.lock":          "5678",
		"performance-counters.json": `{"counters":{"synth":{"count":1,"total":4242}}}`,
	})
	got, err := Zip(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		b, _ := FromZip(got)
		var names []string
		_ = fs.WalkDir(b.FS, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				names = append(names, p)
			}
			return err
		})
		t.Fatalf("the zip of an assembly with a construct tree, metadata and lock files differs from the one without: it holds %v", names)
	}
	// Not an assembly's folder: every file is content.
	plain := t.TempDir()
	writeFiles(t, plain, map[string]string{"cairn.yaml": "stacks: []\n", "data/tree.json": "{}", "data/x.metadata.json": "{}", "data/y.lock": "1", "data/performance-counters.json": "{}"})
	z, err := Zip(plain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := FromZip(z)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"data/tree.json", "data/x.metadata.json", "data/y.lock", "data/performance-counters.json"} {
		if _, err := fs.Stat(b.FS, p); err != nil {
			t.Errorf("%s of a folder that is no assembly was left out: %v", p, err)
		}
	}
}

// TestOpenAssemblyBesideConfig: a cairn.yaml wins over a manifest.json beside it (the
// config names its assembly with its assembly key).
func TestOpenAssemblyBesideConfig(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cairn.yaml": "assembly: .\n", "manifest.json": `{"version":"55.0.0"}`})
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.ConfigFile, ConfigName) || string(b.Config) != "assembly: .\n" {
		t.Errorf("config %q named %s, want cairn.yaml's", b.Config, b.ConfigFile)
	}
}
