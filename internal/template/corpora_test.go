package template

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The corpora of testdata/corpora: upstream template fixtures, pinned (PINNED) with their
// licences, and what cfn-lint (and the SAM translator) said of each (verdicts.json, made by
// verdicts.py: `make corpora`). TestCorpora compares cairn's verdicts with the stored ones,
// so it runs no cfn-lint.
const corporaDir = "../../testdata/corpora"

var corpusNames = []string{"cfn-lint", "sam-translator"}

type lintError struct {
	Rule    string `json:"rule"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

type corpusVerdict struct {
	SHA256     string      `json:"sha256"`
	Errors     []lintError `json:"errors"`
	Crash      string      `json:"crash"`
	Translator *string     `json:"translator"`
}

type corpusVerdicts struct {
	Corpus     string                   `json:"corpus"`
	CfnLint    string                   `json:"cfn-lint"`
	Translator string                   `json:"aws-sam-translator"`
	Day        string                   `json:"day"`
	Templates  map[string]corpusVerdict `json:"templates"`
}

// readCorpus returns the templates of a corpus's archive by their paths, and its verdicts.
func readCorpus(t testing.TB, name string) (map[string][]byte, corpusVerdicts) {
	t.Helper()
	f, err := os.Open(filepath.Join(corporaDir, name, "templates.tar.gz"))
	if err != nil {
		t.Fatalf("corpus %s: %v (make corpora extracts it from a snapshot of its repository)", name, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("corpus %s: %v", name, err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("corpus %s: %v", name, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("corpus %s: %s: %v", name, h.Name, err)
		}
		files[h.Name] = body
	}
	var v corpusVerdicts
	raw, err := os.ReadFile(filepath.Join(corporaDir, name, "verdicts.json"))
	if err == nil {
		err = json.Unmarshal(raw, &v)
	}
	if err != nil {
		t.Fatalf("corpus %s: verdicts: %v (make corpora writes them)", name, err)
	}
	return files, v
}

// corpusTemplate is the template CloudFormation would be given of a corpus file: the SAM
// translator's tests translate every input, most of which do not name the transform, so
// it is named first (as verdicts.py's as_serverless does).
func corpusTemplate(corpus string, body []byte) []byte {
	if corpus != "sam-translator" {
		return body
	}
	lines := bytes.SplitAfter(body, []byte("\n"))
	for _, line := range lines {
		if bytes.HasPrefix(line, []byte("Transform")) {
			return body
		}
	}
	named := []byte("Transform: " + serverless + "\n")
	if bytes.HasPrefix(body, []byte("%")) { // a directive (%YAML 1.1): the document begins after ---
		for i, line := range lines {
			if string(bytes.TrimRight(line, " \r\n")) == "---" {
				head := bytes.Join(lines[:i+1], nil)
				return append(append(append([]byte{}, head...), named...), bytes.Join(lines[i+1:], nil)...)
			}
		}
	}
	return append(named, body...)
}

// cairnVerdict is what cairn says of a template: its errors (a parse error as one), and
// whether the Serverless transform refused it; macro true when the template names a
// transform other than AWS's own (CloudFormation runs the macro first: neither tool judges
// the template it gets).
func cairnVerdict(body []byte, day string) (errs []Problem, samRefused, macro bool) {
	tmpl, err := Parse(body)
	if err != nil {
		return []Problem{{Line: lineOf(err.Error()), Msg: err.Error()}}, false, false
	}
	for _, tr := range tmpl.Transforms {
		macro = macro || tr != languageExtensions && tr != serverless
	}
	macro = macro || containsKey(tmpl.Node, "Fn::Transform", 0) // AWS::Include, a macro of part of it
	for _, p := range tmpl.CheckOn(day) {
		if !p.Warning {
			errs = append(errs, p)
			samRefused = samRefused || strings.HasPrefix(p.Msg, "the Serverless transform refuses it")
		}
	}
	return errs, samRefused, macro
}

// judgedList is a corpus's disagreements.md: each template listed under a "## " heading,
// whose paragraph says why cairn is right, by AWS's behaviour. A heading beginning with
// "translator" lists the templates where cairn's transform and the translator disagree;
// any other, where cairn and cfn-lint do.
type judgedList struct {
	lint, translator map[string]string // template -> its heading
	empty            []string          // headings without a reason
}

func readJudged(t *testing.T, name string) judgedList {
	j := judgedList{lint: map[string]string{}, translator: map[string]string{}}
	md, err := os.ReadFile(filepath.Join(corporaDir, name, "disagreements.md"))
	if os.IsNotExist(err) {
		return j
	} else if err != nil {
		t.Fatal(err)
	}
	heading, reason := "", false
	for _, line := range strings.Split(string(md), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			if heading != "" && !reason {
				j.empty = append(j.empty, heading)
			}
			heading, reason = strings.TrimPrefix(line, "## "), false
		case strings.HasPrefix(line, "- `") && heading != "":
			path, _, _ := strings.Cut(strings.TrimPrefix(line, "- `"), "`")
			if strings.HasPrefix(heading, "translator") {
				j.translator[path] = heading
			} else {
				j.lint[path] = heading
			}
		case strings.TrimSpace(line) != "" && heading != "":
			reason = true
		}
	}
	if heading != "" && !reason {
		j.empty = append(j.empty, heading)
	}
	return j
}

// TestCorpora: on every template of the corpora, cairn validate's verdict (refused when it
// reports an error) agrees with cfn-lint's (refused when it reports an error, an E rule;
// warnings are not refusals), and on the SAM translator's inputs cairn's transform refuses
// what the translator refuses; or the template is listed, judged, in the corpus's
// disagreements.md. A listed template that agrees now fails too, so the list stays true.
// It logs the figures: agreements, and disagreements by cfn-lint rule.
func TestCorpora(t *testing.T) {
	for _, name := range corpusNames {
		t.Run(name, func(t *testing.T) {
			files, v := readCorpus(t, name)
			judged := readJudged(t, name)
			for _, h := range judged.empty {
				t.Errorf("disagreements.md: %q lists templates without saying why cairn is right", h)
			}
			if len(files) != len(v.Templates) {
				t.Errorf("%d templates in the archive, %d in verdicts.json: make corpora", len(files), len(v.Templates))
			}
			day := v.Day
			if day == "" {
				day = Today()
			}
			var agree, macros, crashes, missed, extra, samAgree, samTotal, calendar, byTranslator int
			missedBy := map[string]int{}
			var unjudged []string
			paths := make([]string, 0, len(files))
			for p := range files {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			for _, p := range paths {
				body := files[p]
				vd, ok := v.Templates[p]
				sum := sha256.Sum256(body)
				if !ok || vd.SHA256 != hex.EncodeToString(sum[:]) {
					t.Errorf("%s: no verdict for these bytes in verdicts.json: make corpora", p)
					continue
				}
				errs, samRefused, macro := cairnVerdict(corpusTemplate(name, body), day)
				// The translator needs AWS (the Serverless Application Repository) to read
				// an Application's location: no verdict without credentials.
				if vd.Translator != nil && !strings.HasPrefix(*vd.Translator, "NoCredentialsError") {
					samTotal++
					switch refused := *vd.Translator != ""; {
					case refused == samRefused && judged.translator[p] != "":
						t.Errorf("%s: listed under %q, but cairn's transform and the translator agree now: remove it", p, judged.translator[p])
					case refused == samRefused:
						samAgree++
					case judged.translator[p] == "":
						unjudged = append(unjudged, fmt.Sprintf("translator %s: %s: the translator %s (%s), cairn's transform %s", verdict(refused), p, verdict(refused), *vd.Translator, verdict(samRefused)))
					}
				}
				if macro || vd.Crash != "" {
					if macro {
						macros++
					} else {
						crashes++
					}
					if h := judged.lint[p]; h != "" {
						t.Errorf("%s: listed under %q, but left out of the comparison (a macro, or it crashes cfn-lint): remove it", p, h)
					}
					continue
				}
				lintRefuses, cairnRefuses := len(vd.Errors) > 0, len(errs) > 0
				_, listed := judged.lint[p]
				switch {
				case lintRefuses == cairnRefuses && listed:
					t.Errorf("%s: listed under %q, but cairn and cfn-lint agree now (both %s it): remove it", p, judged.lint[p], verdict(cairnRefuses))
				case lintRefuses == cairnRefuses:
					agree++
				case lintRefuses:
					missed++
					rules := lintRules(vd.Errors)
					for _, r := range rules {
						missedBy[r]++
					}
					if !listed && runtimesJudged(vd.Errors, day) {
						calendar++
					} else if !listed {
						unjudged = append(unjudged, fmt.Sprintf("missed %s: %s: cfn-lint refuses (%s), cairn accepts", strings.Join(rules, ","), p, vd.Errors[0].Message))
					}
				default:
					extra++
					if !listed && samRefused && vd.Translator != nil && *vd.Translator != "" {
						byTranslator++ // AWS's translator refuses it too: CloudFormation would
					} else if !listed {
						unjudged = append(unjudged, fmt.Sprintf("cairn only: %s: cfn-lint accepts, cairn refuses: %s", p, errs[0]))
					}
				}
			}
			t.Logf("corpus %s (cfn-lint %s, aws-sam-translator %s): %d templates, %d of macro transforms and %d that crash cfn-lint left out; %d agreements with cfn-lint, %d disagreements (%d listed, %d judged by the calendar of Lambda runtimes, %d by the translator refusing them too): cfn-lint refuses and cairn accepts %d (by rule: %s), cairn refuses and cfn-lint accepts %d",
				name, v.CfnLint, v.Translator, len(paths), macros, crashes, agree, missed+extra, len(judged.lint), calendar, byTranslator, missed, byRule(missedBy), extra)
			if samTotal > 0 {
				t.Logf("corpus %s: cairn's Serverless transform matches the translator's verdict on %d of %d inputs (%d judged)", name, samAgree, samTotal, len(judged.translator))
			}
			sort.Strings(unjudged)
			for _, u := range unjudged {
				t.Error(u)
			}
		})
	}
}

// runtimesJudged reports whether cfn-lint's errors are all of Lambda runtimes it says AWS
// blocks and AWS's schedule (RuntimeProblem's table) does not block on day: cfn-lint
// 1.51's table has the earlier dates AWS had announced (runtimeDisagreement).
func runtimesJudged(errs []lintError, day string) bool {
	for _, e := range errs {
		if e.Rule != "E2533" {
			return false
		}
		if _, ok := runtimeDisagreement("", e.Message, nil, day); !ok {
			return false
		}
	}
	return len(errs) > 0
}

// lintRules are the distinct rules of cfn-lint's errors, in order.
func lintRules(errs []lintError) []string {
	var rules []string
	for _, e := range errs {
		if !slices.Contains(rules, e.Rule) {
			rules = append(rules, e.Rule)
		}
	}
	sort.Strings(rules)
	return rules
}

func byRule(n map[string]int) string {
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return n[keys[i]] > n[keys[j]] || n[keys[i]] == n[keys[j]] && keys[i] < keys[j] })
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s %d", k, n[k]))
	}
	return strings.Join(out, ", ")
}

func verdict(refuses bool) string {
	if refuses {
		return "refuses"
	}
	return "accepts"
}

// TestCorporaVerdictsCurrent: the stored verdicts are what the installed cfn-lint and
// aws-sam-translator say now, on a sample of each corpus (verdicts.py run on a few
// templates). Skipped when cfn-lint is absent or another version than the one that wrote
// them (make corpora-verdicts rewrites them), and under -short. It runs cfn-lint and the
// translator on six templates: about 12 seconds.
func TestCorporaVerdictsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the stored verdicts are not rechecked against cfn-lint")
	}
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Skip("cfn-lint is not installed (pip install cfn-lint): the stored verdicts are not rechecked")
	}
	out, err := exec.Command(lint, "--version").Output()
	if err != nil {
		t.Skipf("cfn-lint --version: %v", err)
	}
	installed := strings.TrimPrefix(strings.TrimSpace(string(out)), "cfn-lint ")
	for _, name := range corpusNames {
		t.Run(name, func(t *testing.T) {
			files, v := readCorpus(t, name)
			if v.CfnLint != installed {
				t.Skipf("the verdicts are cfn-lint %s's, cfn-lint %s is installed: make corpora-verdicts", v.CfnLint, installed)
			}
			paths := make([]string, 0, len(files))
			for p := range files {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			var sample []string
			for i := 7; i < len(paths); i += len(paths)/3 + 1 {
				sample = append(sample, paths[i])
			}
			cmd := exec.Command("python3", append([]string{filepath.Join(corporaDir, "verdicts.py"), name}, sample...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			raw, err := cmd.Output()
			if err != nil {
				t.Fatalf("verdicts.py %s: %v\n%s", name, err, stderr.String())
			}
			var now corpusVerdicts
			if err := json.Unmarshal(raw, &now); err != nil {
				t.Fatalf("verdicts.py %s: %v", name, err)
			}
			for _, p := range sample {
				a, b := v.Templates[p], now.Templates[p]
				stored, _ := json.Marshal(a)
				current, _ := json.Marshal(b)
				if !bytes.Equal(stored, current) {
					t.Errorf("%s: the stored verdict is not what the installed tools say now: make corpora-verdicts\nstored:  %s\ncurrent: %s", p, stored, current)
				}
			}
		})
	}
}
