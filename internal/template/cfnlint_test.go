package template

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/resourcespec"
)

// peerRoots are where the peer check finds templates: the project's testdata (bundles and
// the broken corpus) and the shared real-world templates beside the repository
// ($CAIRN_SHARED_TEMPLATES when the checkout is elsewhere, as a worktree is).
// $CAIRN_PEER_TEMPLATES (directories separated by colons) adds corpora whose disagreements
// are listed without failing the test.
var peerRoots = append([]string{"../../testdata", sharedTemplates()}, extraPeerRoots()...)

func extraPeerRoots() []string {
	if v := os.Getenv("CAIRN_PEER_TEMPLATES"); v != "" {
		return strings.Split(v, ":")
	}
	return nil
}

func sharedTemplates() string {
	if d := os.Getenv("CAIRN_SHARED_TEMPLATES"); d != "" {
		return d
	}
	return "../../../shared/templates"
}

// category names the kind of a cfn-lint error, as issue 32 counts them, or "" for a kind
// cairn does not check (cfn-lint's own best practices, service rules of its own making).
func category(rule, msg string) string {
	switch rule {
	case "E0000", "E1001", "E1002", "E1010", "E1019", "E1020", "E2001", "E2002", "E2010", "E2015",
		"E3001", "E3002", "E3003", "E3004", "E3006", "E3010", "E3015", "E6005", "E6010", "E7010", "E8002":
		if rule == "E3002" && !strings.HasPrefix(msg, "Additional properties") {
			return "values" // E3002 is also cfn-lint's id for a format a property breaks
		}
		return "structure"
	case "E3005":
		if strings.Contains(msg, "will not exist") {
			return "conditions"
		}
		return "structure"
	case "E3012", "E3030", "E3031", "E3032", "E3033", "E3034", "E3037", "E3008", "E1103",
		"E1150", "E1151", "E1152", "E1153", "E1154", "E1155", "E1156", "E1157", "E1158", "E1159",
		"E1160", "E1161", "E1162", "E1163", "E1164":
		return "values"
	case "E3014", "E3017", "E3018", "E3020", "E3021", "E3058":
		return "combinations"
	case "E3016", "E3035", "E3036", "E3055":
		return "attributes"
	case "E2531", "E2533":
		return "runtimes"
	case "E3045", "E1050", "E1051", "E1052", "E1027":
		return "lesser"
	}
	return ""
}

var categoryOrder = []string{"structure", "values", "combinations", "conditions", "attributes", "runtimes", "lesser"}

type finding struct {
	file string
	line int
	rule string
	msg  string
}

// disagreement is a known difference between cairn and cfn-lint, with who is right by
// AWS's documentation. The key is FILE:LINE (FILE relative to its peer root).
type disagreement struct{ right, why string }

// disagreements are the differences left, each judged. The peer check fails on any other.
var disagreements = map[string]disagreement{
	// testdata
	"templates/broken/parameters.yaml:17": {"both", "the parameter Size has the unknown type Numbr; cairn reports it once, at its Type (line 9), cfn-lint again where ${Size} is used"},
	"templates/broken/parameters.yaml:12": {"cairn", "an AllowedPattern must be a regular expression: CloudFormation compiles it (Java's syntax) to check any value, and an unterminated [ does not compile; cfn-lint does not compile it"},
	"templates/broken/structure.yaml:8":   {"cairn", "CloudFormation refuses a null property value ('null' values are not allowed in templates); cfn-lint passes it"},
	// the shared corpus
	"corpus/awscft-ecs-schedule.yaml:125": {"cairn", "192.168.1.0/0 is a CIDR with host bits set: EC2 takes a security group rule's CIDR and canonicalizes it (its API reference, IpRange: 100.68.0.18/18 becomes 100.68.0.0/18), where cfn-lint requires a canonical network"},
	"corpus/awscft-apigw-lambda.yaml:108": {"cairn", "!Rain::Embed is rain's packaging directive, which CloudFormation refuses (cairn's emulator fails it too); the template silences cfn-lint's E3012 there with its own Metadata (cfn-lint: config: ignore_checks)"},
}

// Messages about a Lambda runtime: cairn's (RuntimeProblem) and cfn-lint's (E2531, E2533).
var (
	cairnRuntimeRE = regexp.MustCompile(`^Lambda runtime (\S+) is deprecated`)
	lintRuntimeRE  = regexp.MustCompile(`^Runtime '([^']+)'`)
)

// runtimeDisagreement judges a disagreement over a Lambda runtime by AWS's schedule on day
// (the table RuntimeProblem reads: AWS's Lambda runtimes page, genspec.py), so the verdict
// follows the calendar as both tools do, where a list of lines would hold for one day:
//   - cairn's error at the Runtime of a Serverless template (a function's or Globals') for
//     a runtime AWS blocks creating functions with on day, where cfn-lint reports the same
//     runtime in the file: both are right, they place it apart: cfn-lint checks the
//     translated template, where the function has no line of its own, and reports at the
//     Serverless resource; cairn at the Runtime key that sets it.
//   - cfn-lint's error for a runtime AWS still creates functions with on day (cairn warns
//     that it is deprecated): cfn-lint 1.51's table has the dates AWS had before it moved
//     the blocks later (to 2027 for most Amazon Linux 2 runtimes), so cairn is right.
func runtimeDisagreement(cairnMsg, lintMsg string, lintRuntimes []string, day string) (disagreement, bool) {
	if m := cairnRuntimeRE.FindStringSubmatch(cairnMsg); m != nil {
		rt := m[1]
		if _, warning, ok := RuntimeProblem(rt, day); ok && !warning && slices.Contains(lintRuntimes, rt) {
			life, _ := resourcespec.LookupRuntime(rt)
			return disagreement{"both", fmt.Sprintf("AWS blocked creating functions with %s on %s (its Lambda runtimes page); cfn-lint reports it at the Serverless function (its SAM translation has no line for the property), cairn at the Runtime that sets it", rt, life.CreateBlocked)}, true
		}
	}
	if m := lintRuntimeRE.FindStringSubmatch(lintMsg); m != nil {
		rt := m[1]
		if _, warning, ok := RuntimeProblem(rt, day); !ok || warning {
			life, _ := resourcespec.LookupRuntime(rt)
			return disagreement{"cairn", fmt.Sprintf("AWS blocks creating functions with %s on %s, by its Lambda runtimes page (cairn warns that it is deprecated); cfn-lint 1.51's table has the earlier date AWS had announced", rt, life.CreateBlocked)}, true
		}
	}
	return disagreement{}, false
}

// TestPeerCfnLint runs cfn-lint, the standard CloudFormation linter, once over every
// template of testdata and the shared corpus, and compares by category (issue 32): the
// cfn-lint errors cairn misses (no error of cairn's on that line), and cairn's false
// positives (an error of cairn's on a line where cfn-lint finds none, and templates cfn-lint
// passes that cairn refuses). Templates of macro transforms other than AWS's own are left
// out: cfn-lint checks them before the macro runs, CloudFormation after. Serverless
// templates are counted apart: cfn-lint checks them after the SAM translation.
func TestPeerCfnLint(t *testing.T) {
	var files []string
	rel := map[string]string{}
	rootOf := map[string]string{}
	for _, root := range peerRoots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			// testdata/validate holds issue 43's fixtures, whose verdicts cmd/cairn's
			// TestValidateFixturesAgainstCfnLint compares, its disagreements judged in
			// testdata/validate/disagreements.md.
			// testdata/corpora holds the upstream corpora TestCorpora compares.
			if d.IsDir() && (d.Name() == "fuzz" || d.Name() == "testdata" && p != root || p == "../../testdata/validate" || p == "../../testdata/corpora") {
				return filepath.SkipDir
			}
			ext := filepath.Ext(p)
			if d.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") || d.Name() == "cairn.yaml" || d.Name() == "parameters.json" {
				return nil
			}
			files = append(files, p)
			r, _ := filepath.Rel(root, p)
			rel[p], rootOf[p] = r, root
			return nil
		})
	}
	if len(files) < 10 {
		t.Fatalf("only %d templates found under %v", len(files), peerRoots)
	}
	if _, err := os.Stat(peerRoots[1]); err != nil {
		t.Logf("the shared templates are absent (%v): only testdata is compared", err)
	}
	// cfn-lint's errors, stored (peercache_test.go) or from cfn-lint for templates new to
	// the cache; day is the day cfn-lint judged runtimes on, and cairn judges them on it.
	lintErrors, day := peerLintErrors(t, files)
	type tally struct{ lint, found int }
	type figures struct {
		templates, passed, refusedPassed, falsePositives, macroSkipped, stoppedEarly int
		byCat                                                                        map[string]*tally
	}
	perRoot := map[string]*figures{}
	for _, root := range peerRoots {
		fg := &figures{byCat: map[string]*tally{}}
		for _, c := range append(categoryOrder, "sam") {
			fg.byCat[c] = &tally{}
		}
		perRoot[root] = fg
	}
	var unexplained []string
	// note reports a disagreement: known when the list has its line or when judged (a
	// runtime's, by runtimeDisagreement), else unexplained.
	note := func(f string, line int, judged *disagreement, format string, args ...any) {
		key := fmt.Sprintf("%s:%d", rel[f], line)
		msg := fmt.Sprintf("%s:%d: ", f, line) + fmt.Sprintf(format, args...)
		d, ok := disagreements[key]
		if judged != nil {
			d, ok = *judged, true
		}
		if ok {
			t.Logf("%s\n    known: %s is right: %s", msg, d.right, d.why)
			return
		}
		if slices.Contains(extraPeerRoots(), rootOf[f]) {
			t.Log(msg)
			return
		}
		unexplained = append(unexplained, msg)
	}
	for _, f := range files {
		fg := perRoot[rootOf[f]]
		fg.templates++
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cairnErrors []Problem
		macro, sam := false, false
		tmpl, perr := Parse(body)
		if perr != nil {
			cairnErrors = append(cairnErrors, Problem{Line: lineOf(perr.Error()), Msg: perr.Error()})
		} else {
			for _, tr := range tmpl.Transforms {
				macro = macro || tr != languageExtensions && tr != serverless
				sam = sam || tr == serverless
			}
			for _, p := range tmpl.CheckOn(day) {
				if !p.Warning {
					cairnErrors = append(cairnErrors, p)
				}
			}
		}
		if macro {
			fg.macroSkipped++
			continue
		}
		lerrs := lintErrors[f]
		var lintRuntimes []string
		for _, le := range lerrs {
			if m := lintRuntimeRE.FindStringSubmatch(le.msg); m != nil && category(le.rule, le.msg) == "runtimes" {
				lintRuntimes = append(lintRuntimes, m[1])
			}
		}
		judge := func(cairnMsg, lintMsg string) *disagreement {
			if d, ok := runtimeDisagreement(cairnMsg, lintMsg, lintRuntimes, day); ok {
				return &d
			}
			return nil
		}
		if len(lerrs) == 0 {
			fg.passed++
			if len(cairnErrors) > 0 {
				fg.refusedPassed++
			}
		}
		if perr != nil && len(lerrs) > 1 {
			fg.stoppedEarly++
		}
		// A key and its value may be on two lines, and cfn-lint points at one or the
		// other: a finding within a line of the other's counts as the same.
		near := func(a, b int) bool { return a-b <= 1 && b-a <= 1 }
		onLine := func(line int) bool {
			return slices.ContainsFunc(cairnErrors, func(p Problem) bool { return near(p.Line, line) })
		}
		if perr != nil && slices.ContainsFunc(lerrs, func(le finding) bool { return le.rule == "E0000" }) {
			// Both refuse the text; YAML parsers place the error differently.
			onLine = func(int) bool { return true }
			cairnErrors = nil
		}
		for _, le := range lerrs {
			cat := category(le.rule, le.msg)
			if cat == "" {
				continue
			}
			if sam {
				cat = "sam"
			}
			fg.byCat[cat].lint++
			if onLine(le.line) {
				fg.byCat[cat].found++
			} else if cat != "sam" {
				var judged *disagreement
				if cat == "runtimes" {
					judged = judge("", le.msg)
				}
				note(f, le.line, judged, "missed: cfn-lint %s (%s) %s; cairn reports %s", le.rule, cat, le.msg, describeProblems(cairnErrors))
			}
		}
		for _, p := range cairnErrors {
			if slices.ContainsFunc(lerrs, func(le finding) bool { return near(le.line, p.Line) }) {
				continue
			}
			fg.falsePositives++
			var judged *disagreement
			if sam {
				judged = judge(p.Msg, "")
			}
			note(f, p.Line, judged, "false positive: cairn %s: %s; cfn-lint reports no error on that line", p.Path, p.Msg)
		}
	}
	var table strings.Builder
	for _, root := range peerRoots {
		fg := perRoot[root]
		if fg.templates == 0 {
			continue
		}
		fmt.Fprintf(&table, "\npeer check over the %d templates of %s (%d of macro transforms left out):\n", fg.templates, root, fg.macroSkipped)
		fmt.Fprintf(&table, "  %-13s %8s %8s %8s\n", "category", "cfn-lint", "found", "missed")
		for _, c := range append(categoryOrder, "sam") {
			tl := fg.byCat[c]
			fmt.Fprintf(&table, "  %-13s %8d %8d %8d\n", c, tl.lint, tl.found, tl.lint-tl.found)
		}
		fmt.Fprintf(&table, "  false positives: %d errors on lines where cfn-lint finds none; of the %d templates cfn-lint passes, cairn refuses %d\n", fg.falsePositives, fg.passed, fg.refusedPassed)
		fmt.Fprintf(&table, "  stopped early: %d templates with several cfn-lint errors got cairn's one parse error\n", fg.stoppedEarly)
	}
	t.Log(table.String())
	for _, u := range unexplained {
		t.Error(u)
	}
}

func describeProblems(ps []Problem) string {
	if len(ps) == 0 {
		return "nothing"
	}
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return strings.Join(out, "; ")
}

var lineRE = regexp.MustCompile(`line (\d+)`)

func lineOf(msg string) int {
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 1
}
