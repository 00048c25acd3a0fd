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

// TestGraphTargets: a stack outside cairn's account and region is shown with where it
// lives, in every format; cairn's region is the one of the AWS configuration, so a stack
// there is shown as at home.
func TestGraphTargets(t *testing.T) {
	bundle := filepath.Join(testBundles, "targets")
	tests := []struct {
		region string
		args   []string
		want   []string
	}{
		{"us-east-1", []string{"graph", bundle}, []string{`../../testdata/bundles/targets/cairn.yaml: 4 stacks, 3 dependencies (3 drawn by --format dot, which leaves out those implied by longer paths); deploy order:
  1. network  shop-network
  2. replica  shop-replica (cairn's account, us-west-2)  <- network
  3. remote   shop-remote (111111111111, eu-west-1)      <- replica
  4. summary  shop-summary                               <- remote
`}},
		{"us-west-2", []string{"graph", bundle}, []string{`deploy order:
  1. network  shop-network
  2. replica  shop-replica                           <- network
  3. remote   shop-remote (111111111111, eu-west-1)  <- replica
  4. summary  shop-summary                           <- remote
`}},
		{"us-east-1", []string{"graph", "--format", "dot", bundle}, []string{"\t\"network\";\n\t\"remote\" [label=\"remote (111111111111, eu-west-1)\"];\n\t\"replica\" [label=\"replica (cairn's account, us-west-2)\"];\n\t\"summary\";\n"}},
		{"us-east-1", []string{"graph", "--format", "json", bundle}, []string{
			`{"name":"network","stack_name":"shop-network","requires":[]}`,
			`{"name":"replica","stack_name":"shop-replica","requires":["network"],"region":"us-west-2"}`,
			`{"name":"remote","stack_name":"shop-remote","requires":["replica"],"account":"111111111111","region":"eu-west-1"}`}},
	}
	for _, tc := range tests {
		t.Run(tc.region+" "+strings.Join(tc.args[1:len(tc.args)-1], " "), func(t *testing.T) {
			t.Setenv("AWS_REGION", tc.region)
			var out, errOut bytes.Buffer
			if code := run(tc.args, &out, &errOut); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			got := out.String()
			if tc.args[1] == "json" || (len(tc.args) > 2 && tc.args[2] == "json") {
				var compact bytes.Buffer
				if err := json.Compact(&compact, out.Bytes()); err != nil {
					t.Fatal(err)
				}
				got = compact.String()
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks\n%s\ngot:\n%s", w, got)
				}
			}
		})
	}
}
