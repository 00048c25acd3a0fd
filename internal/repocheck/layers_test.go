package repocheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/cairn-dev/cairn/"

// drivers are the packages that drive AWS for a Lambda function: only the functions
// themselves and the CLI may import them. Everyone else reads the data packages (rundoc,
// plan, state, drift's sweep and reports).
var drivers = []string{"internal/deployer", "internal/sweeper"}

// driverTests are the packages whose tests import a driver: the crash suite runs the
// deployer's handler as its Lambda does, and infra's tests read each function's
// configuration from the environment its stack sets (ConfigFromEnv).
var driverTests = []string{"internal/crashtest", "infra"}

// emulatorUsers are the product packages that may import the emulator (internal/awslocal
// and below): local mode's provisioning and the CLI that serves it. Any package's tests may.
var emulatorUsers = []string{"internal/localcairn", "cmd/cairn"}

// leaves are the packages every layer may use, the emulator included: they import no
// other package of the module, and nothing beyond the standard library, so using them
// brings nothing else along (the dependency graph and its walker, which the run engine
// and the emulator's CloudFormation share).
var leaves = []string{"internal/graph"}

type pkg struct {
	ImportPath, Dir                    string
	Imports, TestImports, XTestImports []string
	// Deps are every package it links (go list's transitive imports).
	Deps  []string
	Error *struct{ Err string }
}

// core are the packages of decisions and data (docs/code.md): plain data and pure
// functions a driver feeds, so none of them may link an AWS SDK service package, whatever
// it imports to get there.
// The data each of them uses is core too: the bucket's key layout and scope rules
// (bucket; its object I/O is objects'), the persistent graph (state; its store and lock
// are statestore's), seals (seal; the key's KMS derivation is sealkey's), the
// classification of AWS errors (awserr) and provenance.
var core = []string{"internal/run", "internal/graph", "internal/plan", "internal/config", "internal/template",
	"internal/drift", "internal/report", "internal/printer", "internal/yamlnode", "internal/resourcespec", "internal/sam",
	"internal/bundle", "internal/artifact", "internal/target", "internal/clock", "internal/assembly",
	"internal/bucket", "internal/state", "internal/seal", "internal/awserr", "internal/provenance", "internal/runpage", "internal/policy", "internal/verdict"}

const sdkServices = "github.com/aws/aws-sdk-go-v2/service/"

// packages lists the module's packages with their imports (go list -json).
func packages(t *testing.T) []pkg {
	t.Helper()
	root, _ := trackedFiles(t) // skips without a git checkout, as there may be no module either
	cmd := exec.Command("go", "list", "-e", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		p.ImportPath = strings.TrimPrefix(p.ImportPath, module)
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages: is this the module root?", len(pkgs))
	}
	return pkgs
}

// under reports whether package path is dir or below it.
func under(path string, dirs ...string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// violations lists, for each package, the imports the layering forbids: a driver imported
// by anything but the functions, the CLI, itself or a driver's crash suite (in its tests);
// the emulator imported by product code other than local mode's.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, set := range []struct {
			kind    string
			imports []string
		}{{"imports", p.Imports}, {"tests import", append(slices.Clone(p.TestImports), p.XTestImports...)}} {
			test := set.kind != "imports"
			for _, imp := range set.imports {
				imp, ok := strings.CutPrefix(imp, module)
				if !ok || imp == p.ImportPath {
					continue
				}
				switch {
				case under(imp, drivers...) && !under(p.ImportPath, "functions", "cmd", imp) && !(test && under(p.ImportPath, driverTests...)):
					out = append(out, fmt.Sprintf("%s %s %s: only functions/ and cmd/ may import a driver; read the run's data from internal/rundoc (or plan, state)", p.ImportPath, set.kind, imp))
				case under(imp, "internal/awslocal") && !test && !under(p.ImportPath, "internal/awslocal") && !under(p.ImportPath, emulatorUsers...):
					out = append(out, fmt.Sprintf("%s %s %s: product code never knows it talks to the emulator (AWS_ENDPOINT_URL decides); only %s may use it", p.ImportPath, set.kind, imp, strings.Join(emulatorUsers, " and ")))
				}
			}
		}
	}
	for _, p := range pkgs {
		if !slices.Contains(leaves, p.ImportPath) {
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) || strings.Contains(strings.Split(imp, "/")[0], ".") {
				out = append(out, fmt.Sprintf("%s imports %s: a leaf imports the standard library only, so every layer (the emulator too) may use it", p.ImportPath, strings.TrimPrefix(imp, module)))
			}
		}
	}
	for _, p := range pkgs {
		if !slices.Contains(core, p.ImportPath) {
			continue
		}
		if i := slices.IndexFunc(p.Deps, func(d string) bool { return strings.HasPrefix(d, sdkServices) }); i >= 0 {
			out = append(out, fmt.Sprintf("%s links %s: the core decides, drivers call AWS; take the data it needs as values, or move what calls AWS to a store", p.ImportPath, p.Deps[i]))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestLayers keeps the layers of "How the code is laid out" (docs/code.md): see the package
// doc and violations.
func TestLayers(t *testing.T) {
	for _, v := range violations(packages(t)) {
		t.Error(v)
	}
}

// TestViolationsFindsWhatTheRulesForbid checks the rules themselves, on made-up packages.
func TestViolationsFindsWhatTheRulesForbid(t *testing.T) {
	pkgs := []pkg{
		{ImportPath: "functions/deployer", Imports: []string{module + "internal/deployer"}},
		{ImportPath: "cmd/cairn", Imports: []string{module + "internal/deployer", module + "internal/awslocal"}},
		{ImportPath: "internal/deployer", Imports: []string{module + "internal/rundoc"}, XTestImports: []string{module + "internal/deployer", module + "internal/awslocal/cfnlocal"}},
		{ImportPath: "internal/crashtest", TestImports: []string{module + "internal/deployer"}},
		{ImportPath: "internal/localcairn", Imports: []string{module + "internal/awslocal"}},
		{ImportPath: "internal/awslocal/sqslocal", Imports: []string{module + "internal/awslocal/statefile"}},
		{ImportPath: "internal/follow", Imports: []string{module + "internal/deployer"}},
		{ImportPath: "internal/history", XTestImports: []string{module + "internal/deployer"}},
		{ImportPath: "internal/changeset", Imports: []string{module + "internal/awslocal/cfnlocal"}},
		{ImportPath: "internal/crashtest", Imports: []string{module + "internal/deployer"}},
		{ImportPath: "internal/run", Imports: []string{module + "internal/bucket"}, Deps: []string{module + "internal/bucket", sdkServices + "s3"}},
		{ImportPath: "internal/graph", Deps: []string{sdkServices + "cloudformation"}},
		{ImportPath: "internal/plan", Deps: []string{sdkServices + "s3"}},
		{ImportPath: "internal/deployer", Deps: []string{sdkServices + "s3"}},
	}
	got := violations(pkgs)
	want := []string{
		"internal/changeset imports internal/awslocal/cfnlocal",
		"internal/crashtest imports internal/deployer",
		"internal/follow imports internal/deployer",
		"internal/graph links " + sdkServices + "cloudformation",
		"internal/history tests import internal/deployer",
		"internal/plan links " + sdkServices + "s3",
		"internal/run links " + sdkServices + "s3",
	}
	if len(got) != len(want) {
		t.Fatalf("violations:\n%s\nwant %d: %v", strings.Join(got, "\n"), len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]+":") {
			t.Errorf("violation %d = %q, want %q...", i, got[i], want[i])
		}
	}
}

// TestLeavesImportNothingOfTheModule checks the leaf rule on made-up packages: a leaf that
// imports a package of the module (a driver, the bucket layout) or a third-party module
// (the AWS SDK) is a violation; one that imports the standard library is not.
func TestLeavesImportNothingOfTheModule(t *testing.T) {
	got := violations([]pkg{
		{ImportPath: "internal/graph", Imports: []string{"slices", "strings", module + "internal/bucket", module + "internal/deployer", sdkServices + "cloudformation"}},
		{ImportPath: "internal/run", Imports: []string{module + "internal/graph"}},
	})
	want := []string{
		"internal/graph imports " + sdkServices + "cloudformation",
		"internal/graph imports internal/bucket",
		"internal/graph imports internal/deployer", // as a leaf
		"internal/graph imports internal/deployer", // as anything but functions/ and cmd/
	}
	if len(got) != len(want) {
		t.Fatalf("violations:\n%s\nwant %d: %v", strings.Join(got, "\n"), len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]+":") {
			t.Errorf("violation %d = %q, want %q...", i, got[i], want[i])
		}
	}
}
