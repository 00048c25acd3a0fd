package template

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// peerRoots are where the peer check finds templates: the project's testdata (bundles and
// the broken corpus) and the shared real-world templates beside the repository.
var peerRoots = []string{"../../testdata", "../../../shared/templates"}

// inCategory reports whether a cfn-lint finding is of a kind cairn checks: then cairn must
// report an error on the same line of the same file.
func inCategory(rule, msg string) bool {
	notOneOf := strings.Contains(msg, "is not one of")
	switch rule {
	case "E0000", "E1001", "E1002", "E2002", "E2015", "E3004", "E3005", "E3006", "E3003", "E3015", "E6005", "E1010",
		"E3010", "E2010", "E6010", "E7010":
		return true
	case "E3001", "E3002":
		return strings.HasPrefix(msg, "Additional properties are not allowed")
	case "E1019", "E1020", "E6101":
		return notOneOf
	case "E3012":
		// A literal list or mapping where a single value goes, or the reverse; the types
		// of intrinsic functions' results are not checked by cairn.
		lit := regexp.MustCompile(`^(\[.*\]|\{.*\}|'[^']*'|[0-9.]+|True|False) is not of type '(array|object|string|integer|number|boolean)'`)
		m := lit.FindStringSubmatch(msg)
		if m == nil || strings.HasPrefix(msg, "{'Fn::") || strings.HasPrefix(msg, "{'Ref'") {
			return false
		}
		literalCollection := strings.HasPrefix(m[1], "[") || strings.HasPrefix(m[1], "{")
		wantCollection := m[2] == "array" || m[2] == "object"
		return literalCollection != wantCollection
	}
	return false
}

type finding struct {
	file string
	line int
	rule string
	msg  string
}

// TestPeerCfnLint runs cfn-lint, the standard CloudFormation linter, once over every
// template of testdata and the shared corpus, and compares: every cfn-lint error of a kind
// cairn checks is found by cairn on the same line, and cairn refuses no template that
// cfn-lint passes. Templates of macro transforms other than AWS's own are left out of the
// first figure: cfn-lint checks them before the macro runs, CloudFormation after.
func TestPeerCfnLint(t *testing.T) {
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Skip("cfn-lint is not installed (pip install cfn-lint): the peer check is skipped")
	}
	var files []string
	for _, root := range peerRoots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && (d.Name() == "fuzz" || d.Name() == "testdata" && p != root) {
				return filepath.SkipDir
			}
			ext := filepath.Ext(p)
			if d.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") || d.Name() == "cairn.yaml" || d.Name() == "parameters.json" {
				return nil
			}
			files = append(files, p)
			return nil
		})
	}
	if len(files) < 10 {
		t.Fatalf("only %d templates found under %v", len(files), peerRoots)
	}
	if _, err := os.Stat(peerRoots[1]); err != nil {
		t.Logf("the shared templates are absent (%v): only testdata is compared", err)
	}
	cmd := exec.Command(lint, append([]string{"--format", "parseable", "--"}, files...)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("cfn-lint: %v", err)
		}
	}
	lintErrors := map[string][]finding{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		// FILE:LINE:COL:ENDLINE:ENDCOL:RULE:MESSAGE
		parts := strings.SplitN(sc.Text(), ":", 7)
		if len(parts) < 7 || !strings.HasPrefix(parts[5], "E") {
			continue
		}
		line, _ := strconv.Atoi(parts[1])
		lintErrors[parts[0]] = append(lintErrors[parts[0]], finding{parts[0], line, parts[5], parts[6]})
	}
	var inCat, found, passed, falseRefusals, macroSkipped int
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cairnLines []int
		refused := false
		macro := false
		tmpl, perr := Parse(body)
		if perr != nil {
			refused = true
			cairnLines = append(cairnLines, lineOf(perr.Error()))
		} else {
			for _, tr := range tmpl.Transforms {
				macro = macro || tr != languageExtensions && tr != serverless
			}
			for _, p := range tmpl.Check() {
				if !p.Warning {
					refused = true
					cairnLines = append(cairnLines, p.Line)
				}
			}
		}
		lerrs := lintErrors[f]
		if len(lerrs) == 0 {
			passed++
			if refused {
				falseRefusals++
				t.Errorf("%s: cfn-lint passes it, cairn refuses it: %v", f, problemsOf(tmpl, perr))
			}
			continue
		}
		for _, le := range lerrs {
			if !inCategory(le.rule, le.msg) {
				continue
			}
			if macro {
				macroSkipped++
				continue
			}
			inCat++
			if slices.Contains(cairnLines, le.line) || perr != nil {
				found++
			} else {
				t.Errorf("%s:%d: cfn-lint %s %s: cairn reports nothing on that line (it reports %v)", f, le.line, le.rule, le.msg, problemsOf(tmpl, perr))
			}
		}
	}
	t.Logf("peer check over %d templates: cairn found %d of the %d cfn-lint errors in the categories it checks (%d more in macro templates left out); of the %d templates cfn-lint passes, cairn refused %d",
		len(files), found, inCat, macroSkipped, passed, falseRefusals)
}

var lineRE = regexp.MustCompile(`line (\d+)`)

func lineOf(msg string) int {
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 1
}

func problemsOf(t *Template, err error) []string {
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, p := range t.Check() {
		out = append(out, p.String())
	}
	return out
}
