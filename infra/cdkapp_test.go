package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/cairn-dev/cairn/internal/bundle"
	cdkapp "github.com/cairn-dev/cairn/testdata/cdkapp/app"
)

// cdkAppDir is the example CDK app of "Deploying a CDK app" (docs/cdk.md); its synthesized
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
				t.Errorf("two synths of the example app hash differently: %s and %s; what differs must join bundle.assemblyNoise (and the list of docs/cdk.md)", sum, again)
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

func TestCDKContext(t *testing.T) {
	for _, tt := range []struct {
		name          string
		envs, q       interface{}
		want, wantErr string
	}{
		{"none", nil, nil, "hnb659fds:", ""},
		{"a -c string, sorted", "222222222222:eu-west-1,111111111111:us-east-1", nil, "hnb659fds:111111111111:us-east-1 222222222222:eu-west-1", ""},
		{"a qualifier", []interface{}{"111111111111:us-east-1"}, "orders", "orders:111111111111:us-east-1", ""},
		{"twice", []interface{}{"111111111111:us-east-1", "111111111111:us-east-1"}, nil, "", "context cairn:cdkEnvironments: 111111111111:us-east-1 is listed twice"},
		{"not an environment", "111111111111", nil, "", `context cairn:cdkEnvironments: "111111111111" is not ACCOUNT:REGION`},
		{"bad qualifier", nil, "much-too-long-q", "", "context cairn:cdkQualifier: much-too-long-q is not a bootstrap qualifier"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxMap{ctxNamespaces: "shop"}
			if tt.envs != nil {
				ctx[ctxCDKEnvironments] = tt.envs
			}
			if tt.q != nil {
				ctx[ctxCDKQualifier] = tt.q
			}
			cfg, err := LoadConfig(ctx)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadConfig = %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var envs []string
			for _, e := range cfg.CDKEnvironments {
				envs = append(envs, e.String())
			}
			if got := cfg.CDKQualifier + ":" + strings.Join(envs, " "); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestCDKEnvironmentsGrantBootstrapRoles: cairn:cdkEnvironments lets the deployer assume
// the deploy, file-publishing and image-publishing roles of each environment's bootstrap
// (and the drift function the deploy role), by name, and nothing else; cdk-nag passes.
func TestCDKEnvironmentsGrantBootstrapRoles(t *testing.T) {
	dir := t.TempDir()
	s := synth(t, map[string]interface{}{ctxNamespaces: "orders", ctxLambdaDir: lambdaDir(t, dir),
		ctxCDKEnvironments: []interface{}{"111111111111:eu-west-1", "000000000000:us-east-1"}}, dir)
	for _, e := range s.nagErrors {
		t.Errorf("cdk-nag: %s", e)
	}
	role := func(kind, account, region string) string {
		return "arn:<AWS::Partition>:iam::" + account + ":role/cdk-hnb659fds-" + kind + "-role-" + account + "-" + region
	}
	want := map[string][]string{
		"DeployerAssumeCDKRoles": {role("deploy", "000000000000", "us-east-1"), role("file-publishing", "000000000000", "us-east-1"), role("image-publishing", "000000000000", "us-east-1"),
			role("deploy", "111111111111", "eu-west-1"), role("file-publishing", "111111111111", "eu-west-1"), role("image-publishing", "111111111111", "eu-west-1")},
		"DriftAssumeCDKRoles": {role("deploy", "000000000000", "us-east-1"), role("deploy", "111111111111", "eu-west-1")},
	}
	got := map[string][]string{}
	for _, st := range s.statements() {
		if _, ok := want[st.sid]; ok {
			if !slices.Equal(st.actions, []string{"sts:AssumeRole"}) {
				t.Errorf("%s: actions %v", st.sid, st.actions)
			}
			got[st.sid] = append(got[st.sid], st.resources...)
		}
	}
	for sid, w := range want {
		slices.Sort(w)
		g := got[sid]
		slices.Sort(g)
		if !slices.Equal(g, w) {
			t.Errorf("%s allows %v, want %v", sid, g, w)
		}
	}
}
