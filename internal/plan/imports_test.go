package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

// Templates of the import tests: one that exports shop-X (or shop-Y), one that imports it.
const (
	exportsX  = `"Resources: {T: {Type: AWS::SNS::Topic}}\nOutputs: {Out: {Value: {Ref: T}, Export: {Name: shop-X}}}"`
	exportsY  = `"Resources: {T: {Type: AWS::SNS::Topic}}\nOutputs: {Out: {Value: {Ref: T}, Export: {Name: shop-Y}}}"`
	exportsXY = `"Resources: {T: {Type: AWS::SNS::Topic}}\nOutputs: {Out: {Value: {Ref: T}, Export: {Name: shop-X}}, Two: {Value: {Ref: T}, Export: {Name: shop-Y}}}"`
	noExports = `"Resources: {T: {Type: AWS::SNS::Topic}}"`
	importsX  = `"Resources: {P: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: {\"Fn::ImportValue\": shop-X}}}}"`
	importsY  = `"Resources: {P: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: {\"Fn::ImportValue\": shop-Y}}}}"`
	importsYX = `"Resources: {P: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: {\"Fn::ImportValue\": shop-Y}}}}\nOutputs: {Out: {Value: x, Export: {Name: shop-X}}}"`
	importsXY = `"Resources: {P: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: {\"Fn::ImportValue\": shop-X}}}}\nOutputs: {Out: {Value: x, Export: {Name: shop-Y}}}"`
)

// TestImportsOrderTheRun: an import (Fn::ImportValue) orders a run as a dependency does,
// in its account and region only: a stack of the config deploys after the stack of the
// config whose export it imports; a stack that left the config is deleted before the
// stacks whose exports it imports (as the graph recorded them when it was applied) are
// changed (After) or deleted (Requires: dependents first), with every change of its
// place's exporters when the graph does not know its imports; ListImports' answer orders
// (and clears) the deletion of an exporter whose importer is nested in a removed stack;
// an order no run can keep is refused.
func TestImportsOrderTheRun(t *testing.T) {
	removed := func(name string, imports []string, known bool) *state.Stack {
		return &state.Stack{Name: name, StackName: "shop-" + name, Imports: imports, ImportsKnown: known}
	}
	for _, tc := range []struct {
		name      string
		stacks    string              // the config's stacks
		graph     []*state.Stack      // more stacks of the graph, removed from the config
		exports   map[string][]string // live exports, by stack name (key)
		importers map[string][]string // ListImports' answers
		after     map[string][]string // want, by config name
		requires  map[string][]string // want, by config name
		refusal   string              // want, a part of one
		recorded  map[string][]string // the imports the graph recorded of the config's stacks that exist
	}{
		{name: "removed importer, exporter drops the export",
			stacks:  "  - {name: exporter, template_body: " + noExports + "}\n",
			graph:   []*state.Stack{removed("importer", []string{"shop-X"}, true)},
			exports: map[string][]string{"shop-exporter": {"shop-X"}},
			after:   map[string][]string{"exporter": {"importer"}}},
		{name: "removed importer, exporter keeps it (its value may change)",
			stacks:  "  - {name: exporter, template_body: " + exportsX + "}\n",
			graph:   []*state.Stack{removed("importer", []string{"shop-X"}, true)},
			exports: map[string][]string{"shop-exporter": {"shop-X"}},
			after:   map[string][]string{"exporter": {"importer"}}},
		{name: "removed stack imports another export: no order",
			stacks:  "  - {name: exporter, template_body: " + noExports + "}\n",
			graph:   []*state.Stack{removed("importer", []string{"shop-Z"}, true)},
			exports: map[string][]string{"shop-exporter": {"shop-X"}},
			after:   map[string][]string{"exporter": nil}},
		{name: "renamed export: removed importer first, new importer after",
			stacks:   "  - {name: exporter, template_body: " + exportsY + "}\n  - {name: newcomer, template_body: " + importsY + "}\n",
			graph:    []*state.Stack{removed("importer", []string{"shop-X"}, true)},
			exports:  map[string][]string{"shop-exporter": {"shop-X"}},
			after:    map[string][]string{"exporter": {"importer"}, "newcomer": nil},
			requires: map[string][]string{"newcomer": {"exporter"}}},
		{name: "an older graph that does not know the imports: before every exporter of its place",
			stacks: "  - {name: exporter, template_body: " + noExports + "}\n  - {name: plain, template_body: " + noExports + "}\n" +
				"  - {name: west, region: us-west-2, template_body: " + noExports + "}\n",
			graph:   []*state.Stack{removed("importer", nil, false)},
			exports: map[string][]string{"shop-exporter": {"shop-X"}, "/us-west-2/shop-west": {"shop-X"}},
			after:   map[string][]string{"exporter": {"importer"}, "plain": nil, "west": nil}},
		{name: "exports are regional: an importer in another region does not order",
			stacks: "  - {name: exporter, template_body: " + noExports + "}\n",
			graph: []*state.Stack{{Name: "importer", StackName: "shop-importer", Imports: []string{"shop-X"}, ImportsKnown: true,
				Target: target.Spec{Region: "us-west-2"}}},
			exports: map[string][]string{"shop-exporter": {"shop-X"}, "/us-west-2/shop-importer": nil},
			after:   map[string][]string{"exporter": nil}},
		{name: "both removed: the importer is deleted first",
			stacks:    "  - {name: keep, template_body: " + noExports + "}\n",
			graph:     []*state.Stack{removed("importer", []string{"shop-X"}, true), removed("exporter", nil, true)},
			exports:   map[string][]string{"shop-exporter": {"shop-X"}},
			importers: map[string][]string{"shop-X": {"shop-importer"}},
			requires:  map[string][]string{"exporter": {"importer"}, "importer": nil}},
		{name: "both removed, importer nested in the removed root (an older graph): ListImports orders it",
			stacks:    "  - {name: keep, template_body: " + noExports + "}\n",
			graph:     []*state.Stack{removed("root", nil, false), removed("exporter", nil, false)},
			exports:   map[string][]string{"shop-exporter": {"shop-X"}},
			importers: map[string][]string{"shop-X": {"shop-root-Child-1AB2C3"}},
			requires:  map[string][]string{"exporter": {"root"}, "root": nil}},
		{name: "an importer nested in a stack that stays still refuses the deletion",
			stacks:    "  - {name: root, template_body: " + noExports + "}\n",
			graph:     []*state.Stack{removed("exporter", nil, true)},
			exports:   map[string][]string{"shop-exporter": {"shop-X"}},
			importers: map[string][]string{"shop-X": {"shop-root-Child-1AB2C3"}},
			refusal:   "export shop-X is imported by shop-root-Child-1AB2C3"},
		{name: "an importer that stays stops importing: it updates before the exporter drops the export",
			stacks:   "  - {name: exporter, template_body: " + noExports + "}\n  - {name: importer, template_body: " + noExports + "}\n",
			exports:  map[string][]string{"shop-exporter": {"shop-X"}, "shop-importer": nil},
			recorded: map[string][]string{"importer": {"shop-X"}},
			requires: map[string][]string{"exporter": {"importer"}, "importer": nil}},
		{name: "an importer that stays imports an export the exporter has: no order",
			stacks:   "  - {name: exporter, template_body: " + exportsX + "}\n  - {name: importer, template_body: " + importsX + "}\n",
			exports:  map[string][]string{"shop-exporter": {"shop-X"}, "shop-importer": nil},
			recorded: map[string][]string{"importer": {"shop-X"}},
			requires: map[string][]string{"exporter": nil, "importer": nil}},
		{name: "an importer that stays moves to the renamed export in the same push: refused",
			stacks:   "  - {name: exporter, template_body: " + exportsY + "}\n  - {name: importer, template_body: " + importsY + "}\n",
			exports:  map[string][]string{"shop-exporter": {"shop-X"}, "shop-importer": nil},
			recorded: map[string][]string{"importer": {"shop-X"}},
			refusal:  "the run cannot order its stacks: dependency cycle: exporter -> importer -> exporter"},
		{name: "a stack of the config imports an export of a removed stack: its deletion is refused",
			stacks:  "  - {name: newcomer, template_body: " + importsX + "}\n",
			graph:   []*state.Stack{removed("exporter", nil, true)},
			exports: map[string][]string{"shop-exporter": {"shop-X"}},
			refusal: "deletion refused: export shop-X is imported by shop-newcomer in the config: remove the imports first"},
		{name: "new stacks: the importer deploys after the exporter",
			stacks:   "  - {name: exporter, template_body: " + exportsXY + "}\n  - {name: importer, template_body: " + importsX + "}\n",
			requires: map[string][]string{"importer": {"exporter"}, "exporter": nil}},
		{name: "an import in another region is not of that exporter",
			stacks:   "  - {name: exporter, template_body: " + exportsX + "}\n  - {name: importer, region: us-west-2, template_body: " + importsX + "}\n",
			requires: map[string][]string{"importer": nil}},
		{name: "an importer of an importer deploys after both",
			stacks:   "  - {name: a, template_body: " + importsYX + "}\n  - {name: b, template_body: " + exportsY + "}\n  - {name: c, template_body: " + importsX + "}\n",
			requires: map[string][]string{"a": {"b"}, "c": {"a"}}},
		{name: "stacks importing each other's exports are refused",
			stacks:  "  - {name: a, template_body: " + importsYX + "}\n  - {name: b, template_body: " + importsXY + "}\n",
			refusal: "the run cannot order its stacks: dependency cycle: a -> b -> a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.LoadOptions{Deployment: "shop"}.Load(bundle.FromYAML("cairn.yaml", []byte("namespace: shop\nstacks:\n"+tc.stacks)))
			if err != nil {
				t.Fatal(err)
			}
			home := target.Target{Account: "000000000000", Region: "us-east-1"}
			g := &state.Graph{Namespace: "shop", Key: "shop", Stacks: map[string]*state.Stack{}}
			live := map[string]Live{}
			own := func(name string) map[string]string {
				return map[string]string{state.TagNamespace: "shop", state.TagGraphKey: "shop", state.TagName: name}
			}
			for _, st := range tc.graph {
				g.Stacks[st.Name] = st
				k := target.Key(st.Target.Location(home), st.StackName)
				live[k] = Live{StackName: st.StackName, StackID: "id-" + st.Name, Status: "CREATE_COMPLETE", Tags: own(st.Name)}
			}
			for _, s := range cfg.Stacks {
				k := target.Key(s.Target.Location(home), s.StackName)
				if _, ok := tc.exports[k]; !ok {
					continue // a stack to create
				}
				g.Stacks[s.Name] = &state.Stack{Name: s.Name, StackName: s.StackName, TemplateHash: "old", Target: s.Target,
					Imports: tc.recorded[s.Name], ImportsKnown: true}
				live[k] = Live{StackName: s.StackName, StackID: "id-" + s.Name, Status: "CREATE_COMPLETE", Tags: own(s.Name)}
			}
			for k, xs := range tc.exports {
				l := live[k]
				l.Exports = map[string]string{}
				for i, x := range xs {
					l.Exports[string(rune('A'+i))] = x
				}
				live[k] = l
			}
			res := mustMake(t, Input{Config: cfg, Graph: g, Live: live, Home: home, Importers: tc.importers})
			if tc.refusal == "" && len(res.Refusals) > 0 {
				t.Fatalf("refused: %v", res.Refusals)
			}
			for name, want := range tc.after {
				if got := res.Run.Stacks[name].After; !slices.Equal(got, want) {
					t.Errorf("%s: after %v, want %v", name, got, want)
				}
			}
			for name, want := range tc.after {
				for _, imp := range want {
					if r := decisionOf(res, imp).Reason; !strings.Contains(r, "deleted first: it imports exports of "+name) {
						t.Errorf("%s: the plan says %q, not that it is deleted before %s changes", imp, r, name)
					}
				}
			}
			for name, want := range tc.requires {
				if got := res.Run.Stacks[name].Requires; !slices.Equal(got, want) {
					t.Errorf("%s: requires %v, want %v", name, got, want)
				}
			}
			if tc.refusal != "" && !slices.ContainsFunc(res.Refusals, func(r string) bool { return strings.Contains(r, tc.refusal) }) &&
				!slices.ContainsFunc(res.Run.Names(), func(n string) bool { return strings.Contains(res.Run.Stacks[n].Reason, tc.refusal) }) {
				t.Errorf("refusals %v, want one saying %q", res.Refusals, tc.refusal)
			}
			for _, n := range res.Run.Names() {
				if s := res.Run.Stacks[n]; s.Intent == run.IntentDelete && tc.refusal == "" && s.Phase != run.Pending {
					t.Errorf("deletion of %s is %s: %s", n, s.Phase, s.Reason)
				}
			}
		})
	}
}

func decisionOf(res *Result, name string) Decision {
	for _, d := range res.Decisions {
		if d.Stack == name {
			return d
		}
	}
	return Decision{}
}
