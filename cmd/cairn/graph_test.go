package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
)

func writeZipOf(t *testing.T, dir, path string) {
	t.Helper()
	z, err := bundle.Zip(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zip.NewReader(bytes.NewReader(z), int64(len(z))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, z, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGraphJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"graph", "--format", "json", filepath.Join(testBundles, "webshop")}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, out.Bytes()); err != nil {
		t.Fatal(err)
	}
	want := `{"stacks":[` +
		`{"name":"network","stack_name":"shop-network","requires":[]},` +
		`{"name":"database","stack_name":"shop-database","requires":["network"]},` +
		`{"name":"cache","stack_name":"shop-cache","requires":["network"]},` +
		`{"name":"service","stack_name":"shop-service","requires":["cache","database","network"]},` +
		`{"name":"edge","stack_name":"shop-edge","requires":["service"]}],` +
		`"order":["network","cache","database","service","edge"]}`
	if compact.String() != want {
		t.Errorf("json:\n%s\nwant:\n%s", compact.String(), want)
	}
}

func TestGraphText(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"graph", filepath.Join(testBundles, "webshop")}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want := `../../testdata/bundles/webshop/cairn.yaml: 5 stacks, 6 dependencies (5 drawn by --format dot, which leaves out those implied by longer paths); deploy order:
  1. network   shop-network
  2. cache     shop-cache     <- network
  3. database  shop-database  <- network
  4. service   shop-service   <- cache, database, network
  5. edge      shop-edge      <- service
`
	if out.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestGraphDOT(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"graph", "--format=dot", filepath.Join(testBundles, "webshop")}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	got := out.String()
	// Transitively reduced: service -> network is implied by service -> cache -> network.
	for _, edge := range []string{`"service" -> "cache";`, `"cache" -> "network";`, `"edge" -> "service";`} {
		if !strings.Contains(got, edge) {
			t.Errorf("DOT lacks %s:\n%s", edge, got)
		}
	}
	if strings.Contains(got, `"service" -> "network"`) || !strings.Contains(got, "\ndigraph cairn {\n") || strings.Count(got, `" -> "`) != 5 {
		t.Errorf("DOT is not the reduced graph:\n%s", got)
	}
	// It says so, with the text format's count of dependencies.
	if first, _, _ := strings.Cut(got, "\n"); first != "// ../../testdata/bundles/webshop/cairn.yaml: 5 stacks, 6 dependencies, transitively reduced to the 5 drawn: the others are implied by longer paths" {
		t.Errorf("DOT's first line %q does not say it is reduced", first)
	}
}

func TestGraphErrors(t *testing.T) {
	tests := []struct {
		args       []string
		wantCode   int
		wantStderr string
	}{
		{[]string{"graph", "--format", "svg", filepath.Join(testBundles, "webshop")}, 2, "cairn: unknown --format \"svg\": use text, json or dot\n"},
		{[]string{"graph", filepath.Join(testBundles, "invalid", "cycle")}, 1, "../../testdata/bundles/invalid/cycle/cairn.yaml:5:16: stacks[0].requires[0]: dependency cycle: app -> db -> cache -> app: remove one of these dependencies\n"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		if code := run(tt.args, &out, &errOut); code != tt.wantCode || errOut.String() != tt.wantStderr || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d, stderr %q", tt.args, code, out.String(), errOut.String(), tt.wantCode, tt.wantStderr)
		}
	}
}
