package repocheck

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The emulator is a test double of AWS, kept apart from the product by these rules (the
// boundary a separate module would draw, without module cycles: the emulator's own tests
// compare it with config, template and bundle, which would import it back):
//
//   - emulator: internal/awslocal and below. It links only itself and emulatorLeaves;
//   - localMode: the packages that start a local cairn in the emulator. Only the CLI
//     imports them, and in the CLI only the files of its local commands (localModeFiles);
//   - the emulator is imported only by emulatorUsers (layers_test.go);
//   - the Lambda functions' binaries, built as make lambdas builds them, link neither.
//
// Any package's tests may use both.
const emulator = "internal/awslocal"

// emulatorLeaves are the cairn packages the emulator may link: each links nothing of cairn
// but the others of the list (a clock, the SDK's configuration and error classes, the
// SAM transform and the resource specification its CloudFormation shares with the
// validator, and the dependency graph's walker it shares with the run engine).
var emulatorLeaves = []string{"internal/clock", "internal/awsclient", "internal/sam", "internal/resourcespec", "internal/graph"}

// localMode are the packages of local mode, which only the CLI imports.
var localMode = []string{"internal/localcairn", "internal/localdir"}

// localModeFiles are the files of cmd/cairn that may import the emulator or local mode:
// the local commands (cairn local up, invoke, ...) and cairn demo, which runs in a local
// cairn.
var localModeFiles = []string{"cmd/cairn/local.go", "cmd/cairn/local_functions.go", "cmd/cairn/demo.go"}

// lambdaBuild is how make lambdas builds the functions (see the Makefile's LAMBDA_TAGS).
var lambdaBuild = struct {
	tags string
	env  []string
}{"lambda.norpc,nethttpomithttp2,cairn.lambda", []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0"}}

// emulatorViolations lists what breaks the emulator's boundary among pkgs (their Imports
// and Deps; their tests are free).
func emulatorViolations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		if under(p.ImportPath, emulator) || slices.Contains(emulatorLeaves, p.ImportPath) {
			for _, d := range p.Deps {
				d, ok := strings.CutPrefix(d, module)
				if ok && d != p.ImportPath && !under(d, emulator) && !slices.Contains(emulatorLeaves, d) {
					out = append(out, fmt.Sprintf("%s links %s: the emulator links only itself and the leaf packages %s; pass what it needs as values, or move it to a leaf", p.ImportPath, d, strings.Join(emulatorLeaves, ", ")))
				}
			}
		}
		for _, imp := range p.Imports {
			imp, ok := strings.CutPrefix(imp, module)
			if ok && under(imp, localMode...) && p.ImportPath != "cmd/cairn" && !under(p.ImportPath, imp) {
				out = append(out, fmt.Sprintf("%s imports %s: only cmd/cairn's local commands start local mode", p.ImportPath, imp))
			}
		}
		if under(p.ImportPath, "functions") {
			if d := emulatorLinked(p.Deps); d != "" {
				out = append(out, fmt.Sprintf("%s links %s: a Lambda function never carries the emulator or local mode", p.ImportPath, d))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// emulatorLinked returns the first of deps (import paths) that is the emulator or local
// mode, or "".
func emulatorLinked(deps []string) string {
	for _, d := range deps {
		if rel, ok := strings.CutPrefix(d, module); ok && under(rel, append([]string{emulator}, localMode...)...) {
			return rel
		}
	}
	return ""
}

// localModeImports lists the imports of the emulator or local mode of src (a Go file
// named name, of cmd/cairn) when it is not one of localModeFiles.
func localModeImports(name string, src any) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	if slices.Contains(localModeFiles, filepath.ToSlash(name)) {
		return nil, nil
	}
	var out []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if d := emulatorLinked([]string{p}); d != "" {
			out = append(out, fmt.Sprintf("%s imports %s: in the CLI only the local commands (%s) use the emulator and local mode", filepath.ToSlash(name), d, strings.Join(localModeFiles, ", ")))
		}
	}
	return out, nil
}

// TestEmulatorBoundary: see emulator.
func TestEmulatorBoundary(t *testing.T) {
	pkgs := packages(t)
	for _, v := range emulatorViolations(pkgs) {
		t.Error(v)
	}
	root, files := trackedFiles(t)
	checked := 0
	for _, f := range files {
		if path.Dir(f) != "cmd/cairn" || !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		checked++
		got, err := localModeImports(f, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range got {
			t.Error(v)
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d files of cmd/cairn: are they still there?", checked)
	}
	for _, f := range localModeFiles {
		if !slices.Contains(files, f) {
			t.Errorf("%s is not in the repository: remove it from localModeFiles", f)
		}
	}
}

// TestFunctionsLinkNoEmulator builds the functions' dependencies as make lambdas builds
// them (the tags and platform of LAMBDA_TAGS): none is the emulator or local mode, and
// only the policy function links the Open Policy Agent (it would double the deployer:
// docs/policy.md#where-policies-run-the-policy-function), and none links regexp2.
func TestFunctionsLinkNoEmulator(t *testing.T) {
	root, _ := trackedFiles(t)
	entries, err := os.ReadDir(filepath.Join(root, "functions"))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		fn := "functions/" + e.Name()
		deps := functionDeps(t, root, "./"+fn)
		all = append(all, deps...)
		opa := slices.IndexFunc(deps, func(d string) bool { return strings.HasPrefix(d, opaModule) })
		switch {
		case fn == policyFunction && opa < 0:
			t.Errorf("%s does not link OPA: is go list's answer (%d packages) the policy function's?", fn, len(deps))
		case fn != policyFunction && opa >= 0:
			t.Errorf("%s built for Lambda links %s: OPA more than doubles a Lambda (the deployer's 15 MB goal); policies run in %s alone (docs/policy.md#where-policies-run-the-policy-function)", fn, deps[opa], policyFunction)
		}
	}
	// regexp2 judges Java's patterns for `cairn validate`; a Lambda leaves them to
	// CloudFormation (internal/template/javaregex_lambda.go): 260 KB of the deployer.
	if i := slices.IndexFunc(all, func(d string) bool { return strings.HasPrefix(d, "github.com/dlclark/regexp2") }); i >= 0 {
		t.Errorf("a function built for Lambda links %s: patterns Go's regexp cannot read are CloudFormation's to judge there (javaregex_lambda.go)", all[i])
	}
	if !slices.Contains(all, module+"internal/deployer") {
		t.Fatalf("the functions do not link internal/deployer: is go list's answer (%d packages) theirs?", len(all))
	}
	if d := emulatorLinked(all); d != "" {
		t.Errorf("a function built for Lambda links %s: a Lambda function never carries the emulator or local mode", d)
	}
}

// policyFunction is the one function that links the policy engine.
const policyFunction = "functions/policy"

// functionDeps lists the packages pkg links, built as make lambdas builds it.
func functionDeps(t *testing.T, root, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", lambdaBuild.tags, "-f", "{{.ImportPath}}", pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), lambdaBuild.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pkg, err, stderr.String())
	}
	return strings.Fields(string(out))
}

// opaModule is the Open Policy Agent's module path.
const opaModule = "github.com/open-policy-agent/opa/"

// TestEmulatorViolationsFindWhatTheRulesForbid checks the rules themselves, on made-up
// packages and files.
func TestEmulatorViolationsFindWhatTheRulesForbid(t *testing.T) {
	pkgs := []pkg{
		{ImportPath: "internal/awslocal", Deps: []string{module + "internal/clock", module + "internal/awslocal/s3local", "net/http"}},
		{ImportPath: "internal/awslocal/cfnlocal", Deps: []string{module + "internal/resourcespec", module + "internal/template"}},
		{ImportPath: "internal/sam", Deps: []string{module + "internal/config"}},
		{ImportPath: "internal/localcairn", Imports: []string{module + "internal/awslocal"}, Deps: []string{module + "internal/config"}},
		{ImportPath: "cmd/cairn", Imports: []string{module + "internal/localcairn", module + "internal/localdir"}},
		{ImportPath: "internal/deployer", Imports: []string{module + "internal/localdir"}, TestImports: []string{module + "internal/localcairn"}},
		{ImportPath: "functions/ports", Deps: []string{module + "internal/ports"}},
		{ImportPath: "functions/deployer", Deps: []string{module + "internal/deployer", module + "internal/awslocal/s3local"}},
	}
	got := emulatorViolations(pkgs)
	want := []string{
		"functions/deployer links internal/awslocal/s3local:",
		"internal/awslocal/cfnlocal links internal/template:",
		"internal/deployer imports internal/localdir:",
		"internal/sam links internal/config:",
	}
	if len(got) != len(want) {
		t.Fatalf("violations:\n%s\nwant %d: %v", strings.Join(got, "\n"), len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("violation %d = %q, want %q...", i, got[i], want[i])
		}
	}
	for _, tc := range []struct {
		name, src string
		want      int
	}{
		{"cmd/cairn/local.go", `package main; import ("github.com/cairn-dev/cairn/internal/awslocal"; "github.com/cairn-dev/cairn/internal/localdir")`, 0},
		{"cmd/cairn/push.go", `package main; import ("fmt"; "github.com/cairn-dev/cairn/internal/upload")`, 0},
		{"cmd/cairn/push.go", `package main; import ("github.com/cairn-dev/cairn/internal/awslocal/s3local"; lc "github.com/cairn-dev/cairn/internal/localcairn")`, 2},
	} {
		got, err := localModeImports(tc.name, tc.src)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.want {
			t.Errorf("%s: %d violations %v, want %d", tc.name, len(got), got, tc.want)
		}
	}
}
