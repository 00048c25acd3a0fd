package sam_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws-cloudformation/rain/cft/parse"

	"github.com/cairn-dev/cairn/internal/sam"
)

// translate runs testdata/translate.py (the installed aws-sam-translator) over templates
// with their parameter values, or skips the test when Python or the translator is absent;
// it returns per template the processed template, or {"error": message}.
func translate(t *testing.T, templates []map[string]any, params []map[string]any) []map[string]any {
	t.Helper()
	if err := exec.Command("python3", "-c", "import samtranslator").Run(); err != nil {
		t.Skip("the SAM translator is not installed (pip install aws-sam-translator): ", err)
	}
	var reqs []map[string]any
	for i, tpl := range templates {
		reqs = append(reqs, map[string]any{"template": tpl, "parameters": params[i]})
	}
	in, err := json.Marshal(reqs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", "testdata/translate.py")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("translate.py: %v\n%s", err, stderr.String())
	}
	var res []map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("translate.py answered %.200s: %v", out, err)
	}
	return res
}

// load parses a template file into its tree, with parameter values: defaults, and a
// placeholder for the others.
func load(file string) (map[string]any, map[string]any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	tpl, err := parse.String(string(b))
	if err != nil {
		return nil, nil, err
	}
	var m map[string]any
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		m = tpl.Map()
	}()
	if err != nil || m == nil {
		return nil, nil, fmt.Errorf("not a template: %v", err)
	}
	// round trip through JSON: both sides see the same plain tree
	j, err := json.Marshal(m)
	if err != nil {
		return nil, nil, err
	}
	m = nil
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, nil, err
	}
	sam.AssumePackaged(m)
	params := map[string]any{}
	decls, _ := m["Parameters"].(map[string]any)
	for n, d := range decls {
		dm, _ := d.(map[string]any)
		if v, ok := dm["Default"]; ok {
			params[n] = v
		} else if av, ok := dm["AllowedValues"].([]any); ok && len(av) > 0 {
			params[n] = av[0]
		} else {
			params[n] = "cairn" + strings.ToLower(n)
		}
	}
	return m, params, nil
}

// isServerless reports whether the template names the Serverless transform.
func isServerless(m map[string]any) bool {
	switch t := m["Transform"].(type) {
	case string:
		return t == "AWS::Serverless-2016-10-31"
	case []any:
		return slices.Contains(t, any("AWS::Serverless-2016-10-31"))
	}
	return false
}

// hashed are the logical ids SAM suffixes with a hash of content (versions, deployments,
// layers): compared without the suffix, whose input differs by design (see the package doc).
var hashed = regexp.MustCompile(`^(.*(?:Version|Deployment|[A-Za-z]))[0-9a-f]{10}$`)

func resourceSet(res map[string]string) []string {
	var out []string
	for id, typ := range res {
		if m := hashed.FindStringSubmatch(id); m != nil && (typ == "AWS::Lambda::Version" || typ == "AWS::ApiGateway::Deployment" || typ == "AWS::Lambda::LayerVersion") {
			id = m[1] + "#"
		}
		out = append(out, id+" "+typ)
	}
	sort.Strings(out)
	return out
}

// corpusFiles are the SAM templates of testdata/corpus, and of $CAIRN_SAM_CORPUS when set.
func corpusFiles(t *testing.T) []string {
	dirs := []string{"../../testdata/corpus"}
	if d := os.Getenv("CAIRN_SAM_CORPUS"); d != "" {
		dirs = append(dirs, d)
	}
	var files []string
	for _, d := range dirs {
		for _, ext := range []string{"*.yaml", "*.yml", "*.json"} {
			m, _ := filepath.Glob(filepath.Join(d, ext))
			files = append(files, m...)
		}
	}
	return files
}

func diff(a, b []string) (onlyA, onlyB []string) {
	for _, x := range a {
		if !slices.Contains(b, x) {
			onlyA = append(onlyA, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			onlyB = append(onlyB, x)
		}
	}
	return
}

// TestCoverageAgainstTranslator expands every Serverless template of the corpus with
// cairn's transform and with the installed SAM translator, and compares the resources
// each makes (logical ids and types; a content hash suffix is not compared). A template
// the translator accepts must expand to the same resources, and one it refuses must be
// refused.
func TestCoverageAgainstTranslator(t *testing.T) {
	var names []string
	var tpls, params []map[string]any
	for _, f := range corpusFiles(t) {
		m, p, err := load(f)
		if err != nil || !isServerless(m) {
			continue
		}
		names = append(names, f)
		tpls = append(tpls, m)
		params = append(params, p)
	}
	if len(names) == 0 {
		t.Skip("no Serverless templates in the corpus")
	}
	theirs := translate(t, tpls, params)
	var report strings.Builder
	agree, accepted := 0, 0
	for i, f := range names {
		// cairn's copy of the template: translate.py had its own through JSON
		m, p, _ := load(f)
		err := sam.Transform(m, p)
		ours := map[string]string{}
		res, _ := m["Resources"].(map[string]any)
		for id, r := range res {
			typ, _ := r.(map[string]any)["Type"].(string)
			ours[id] = typ
		}
		trErr, _ := theirs[i]["error"].(string)
		name := filepath.Base(f)
		switch {
		case trErr != "" && err != nil:
			agree++
			fmt.Fprintf(&report, "%-60s both refuse\n", name)
		case trErr != "":
			fmt.Fprintf(&report, "%-60s translator refuses, cairn accepts: %.300s\n", name, trErr)
			t.Errorf("%s: the translator refuses it (%s), cairn expands it", name, trErr)
		case err != nil:
			accepted++
			fmt.Fprintf(&report, "%-60s cairn refuses: %.300s\n", name, err)
			t.Errorf("%s: cairn refuses it: %v", name, err)
		default:
			accepted++
			want := map[string]string{}
			for id, r := range object(theirs[i]["Resources"]) {
				typ, _ := object(r)["Type"].(string)
				want[id] = typ
			}
			missing, extra := diff(resourceSet(want), resourceSet(ours))
			if len(missing)+len(extra) == 0 {
				agree++
				fmt.Fprintf(&report, "%-60s same %d resources\n", name, len(want))
				continue
			}
			fmt.Fprintf(&report, "%-60s differ: translator only %v; cairn only %v\n", name, missing, extra)
			t.Errorf("%s: translator only %v; cairn only %v", name, missing, extra)
		}
	}
	t.Logf("SAM corpus: %d templates, %d the translator accepts, %d where cairn agrees with it\n%s", len(names), accepted, agree, report.String())
}

// canonical renders a resource for comparison: JSON with sorted keys, hashed logical ids
// (versions, deployments, layers) without their hash, and the OpenAPI bodies of APIs
// (which cairn writes its own way, see the package doc) left out.
func canonical(r any, hashedIDs []string) string {
	m, _ := r.(map[string]any)
	if props, ok := m["Properties"].(map[string]any); ok {
		switch m["Type"] {
		case "AWS::ApiGateway::RestApi", "AWS::ApiGatewayV2::Api":
			delete(props, "Body")
		case "AWS::ApiGateway::Deployment":
			delete(props, "Description")
		}
	}
	b, _ := json.MarshalIndent(r, "", " ")
	s := string(b)
	for _, id := range hashedIDs {
		s = strings.ReplaceAll(s, `"`+id+`"`, `"`+hashed.FindStringSubmatch(id)[1]+`#"`)
		s = strings.ReplaceAll(s, "${"+id, "${"+hashed.FindStringSubmatch(id)[1]+"#")
	}
	return s
}

func hashedIDs(res map[string]any) []string {
	var out []string
	for id, r := range res {
		typ, _ := object(r)["Type"].(string)
		if hashed.MatchString(id) && (typ == "AWS::Lambda::Version" || typ == "AWS::ApiGateway::Deployment" || typ == "AWS::Lambda::LayerVersion") {
			out = append(out, id)
		}
	}
	return out
}

func object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// TestExpansionMatchesTranslator expands the templates of testdata/expand (state machines
// and their events, the function event sources, policy templates, references to generated
// resources such as Fn.Alias, API endpoint configurations, RestApiId of an Api resource)
// with cairn's transform and the installed SAM translator, and requires the same
// resources, property by property, and the same outputs.
func TestExpansionMatchesTranslator(t *testing.T) {
	files, _ := filepath.Glob("testdata/expand/*.yaml")
	var tpls, params []map[string]any
	for _, f := range files {
		m, p, err := load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		tpls, params = append(tpls, m), append(params, p)
	}
	raw := translate(t, tpls, params)
	for i, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if e, ok := raw[i]["error"]; ok {
				t.Fatalf("the translator refuses it: %v", e)
			}
			m, p, _ := load(f)
			if err := sam.Transform(m, p); err != nil {
				t.Fatalf("cairn refuses it: %v", err)
			}
			theirs, ours := object(raw[i]["Resources"]), object(m["Resources"])
			th, oh := hashedIDs(theirs), hashedIDs(ours)
			norm := func(id string, ids []string) string {
				if slices.Contains(ids, id) {
					return hashed.FindStringSubmatch(id)[1] + "#"
				}
				return id
			}
			byNorm := map[string]string{}
			for id := range ours {
				byNorm[norm(id, oh)] = id
			}
			for _, id := range slices.Sorted(maps.Keys(theirs)) {
				oid, ok := byNorm[norm(id, th)]
				if !ok {
					t.Errorf("cairn lacks %s (%s)", id, object(theirs[id])["Type"])
					continue
				}
				delete(byNorm, norm(id, th))
				if want, got := canonical(theirs[id], th), canonical(ours[oid], oh); want != got {
					t.Errorf("%s differs:\ntranslator: %s\ncairn:      %s", id, want, got)
				}
			}
			for _, id := range slices.Sorted(maps.Values(byNorm)) {
				t.Errorf("cairn makes %s (%s), the translator does not", id, object(ours[id])["Type"])
			}
			if want, got := canonical(raw[i]["Outputs"], th), canonical(m["Outputs"], oh); want != got {
				t.Errorf("outputs differ:\ntranslator: %s\ncairn:      %s", want, got)
			}
		})
	}
}

// TestPolicyTemplatesMatchTranslator uses every policy template of the translator's data
// (translator.json.gz) in one function's Policies and requires the role the
// translator makes, policy by policy.
func TestPolicyTemplatesMatchTranslator(t *testing.T) {
	var d struct {
		PolicyTemplates map[string]struct {
			Parameters []string `json:"parameters"`
		} `json:"policyTemplates"`
	}
	if err := json.Unmarshal(sam.TranslatorJSON(), &d); err != nil {
		t.Fatal(err)
	}
	var policies []any
	for _, name := range slices.Sorted(maps.Keys(d.PolicyTemplates)) {
		params := map[string]any{}
		for _, p := range d.PolicyTemplates[name].Parameters {
			params[p] = strings.ToLower(p) + "-value"
		}
		policies = append(policies, map[string]any{name: params})
	}
	if len(policies) < 80 {
		t.Fatalf("only %d policy templates in translator.json.gz", len(policies))
	}
	tpl := func() map[string]any {
		return map[string]any{"Transform": "AWS::Serverless-2016-10-31", "Resources": map[string]any{"Fn": map[string]any{
			"Type": "AWS::Serverless::Function", "Properties": map[string]any{"Runtime": "python3.12", "Handler": "a.b", "InlineCode": "x",
				"Policies": policies}}}}
	}
	full := translate(t, []map[string]any{tpl()}, []map[string]any{{}})
	if e, ok := full[0]["error"]; ok {
		t.Fatal(e)
	}
	m := tpl()
	if err := sam.Transform(m, nil); err != nil {
		t.Fatal(err)
	}
	want := object(object(object(full[0]["Resources"])["FnRole"])["Properties"])["Policies"].([]any)
	got := object(object(object(m["Resources"])["FnRole"])["Properties"])["Policies"].([]any)
	if len(got) != len(want) {
		t.Fatalf("%d inline policies, the translator makes %d", len(got), len(want))
	}
	for i := range want {
		if w, g := canonical(want[i], nil), canonical(got[i], nil); w != g {
			t.Errorf("policy %d (%v) differs:\ntranslator: %s\ncairn:      %s", i, slices.Collect(maps.Keys(object(policies[i]))), w, g)
		}
	}
}
