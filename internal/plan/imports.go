package plan

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/graph"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
	"github.com/cairn-dev/cairn/internal/template"
)

// Exports are regional: a stack imports (Fn::ImportValue) only exports of its own account
// and region, and CloudFormation refuses to create an importer before its export exists,
// to drop or change an export while a stack imports it, and to delete its exporter then.
// So an import is a dependency, as real as a `requires`, and a run orders by it:
//
//   - a stack of the config that imports an export another stack of the config makes, and
//     does not have yet, deploys after it; one that stops importing an export goes before
//     the update of the stack that has it (importEdges);
//   - a stack that left the config is deleted before the stacks whose exports it imports
//     are changed (run.Stack.After) or deleted (as their dependent). Its template is no
//     longer in the bundle: what it imports is what the graph recorded when it was applied
//     (state.Stack.Imports). An entry that does not know them (a graph of an older cairn,
//     a rebuilt one, an import whose name is computed) orders its deletion before every
//     change of a stack of its account and region that has exports: it costs that run some
//     concurrency, never a failure, and asks CloudFormation nothing (ListImports names an
//     importer nested in a stack by the nested stack's own name, and would be one more call
//     per export of every changed stack). A deleted exporter is also ordered by what
//     ListImports answered for its exports (Input.Importers), which knows every importer
//     (importerDeletions);
//   - an order no run can keep (an export renamed while a stack that stays moves to the new
//     name: it must stop importing the old one first, and can import the new one only
//     after) is refused before anything changes, saying how to do it in two pushes
//     (orderCycle).

// ImportsOf returns the export names s's templates (nested ones included) import, and
// whether they are all of them (false when one computes its name, or for a template the
// bundle does not hold).
func ImportsOf(s *config.Stack) ([]string, bool) {
	tree := s.Tree
	if tree == nil && s.Template != nil {
		tree = &template.Tree{Template: s.Template}
	}
	if tree == nil {
		return nil, false
	}
	return tree.Imports()
}

// importEdges orders the stacks of the config by their imports, in their account and
// region: a stack that imports an export another stack of the config makes but does not
// have yet deploys after it (an export it has already can be imported at any time: its
// value does not change while it is imported); and a stack whose update stops importing
// an export (the graph recorded the imports it applied) goes before the update of the
// stack that has it, which may drop or change it once it is no longer in use.
func (res *Result) importEdges(in Input, cfg *config.Config, prev *state.Graph) {
	// What the config's templates export, by place and name; names left with
	// ${AWS::Region} are matched as patterns.
	type exporter struct {
		stack   string
		pattern string
	}
	exact := map[string][]string{}
	patterns := map[target.Target][]exporter{}
	for _, s := range cfg.Stacks {
		if s.Template == nil {
			continue
		}
		at := s.Target.Location(in.Home)
		for _, e := range s.Template.Exports(s.StackName) {
			if strings.Contains(e.Name, "${AWS::Region}") {
				patterns[at] = append(patterns[at], exporter{s.Name, e.Name})
			} else {
				exact[target.Key(at, e.Name)] = append(exact[target.Key(at, e.Name)], s.Name)
			}
		}
	}
	// has names the stack of the run that has export x in place at now ("" when none).
	live := map[string]string{}
	for name, s := range res.Run.Stacks {
		if s.Intent != run.IntentDelete {
			for _, x := range in.Live[s.Key()].Exports {
				live[target.Key(s.At, x)] = name
			}
		}
	}
	has := func(at target.Target, x string) string { return live[target.Key(at, x)] }
	for _, name := range res.Run.Names() {
		rs := res.Run.Stacks[name]
		if rs.Intent == run.IntentDelete {
			continue
		}
		for _, imp := range rs.Imports {
			if has(rs.At, imp) != "" {
				continue
			}
			makers := slices.Clone(exact[target.Key(rs.At, imp)])
			for _, e := range patterns[rs.At] {
				if template.ExportMatches(e.pattern, imp) {
					makers = append(makers, e.stack)
				}
			}
			for _, m := range makers {
				if m != name && !slices.Contains(rs.Requires, m) {
					rs.Requires = append(rs.Requires, m)
				}
			}
		}
		slices.Sort(rs.Requires)
	}
	for _, name := range res.Run.Names() {
		rs, p := res.Run.Stacks[name], prev.Stacks[name]
		if rs.Intent == run.IntentDelete || !rs.Exists || p == nil || !p.ImportsKnown || !rs.ImportsKnown {
			continue
		}
		for _, x := range p.Imports {
			if slices.Contains(rs.Imports, x) {
				continue
			}
			if e := has(rs.At, x); e != "" && e != name && !slices.Contains(res.Run.Stacks[e].Requires, name) {
				es := res.Run.Stacks[e]
				es.Requires = append(es.Requires, name)
				slices.Sort(es.Requires)
			}
		}
	}
}

// importerDeletions orders the deletions of the stacks that left the config (deleting)
// before the changes of the stacks whose exports they import: run.Stack.After for a stack
// the run deploys, a dependent's place (Requires) for one it deletes.
// A removed stack whose deletion is refused or cannot start (run.Failed) is ordered too:
// its exporters are then blocked, saying why, rather than refused by CloudFormation.
func (res *Result) importerDeletions(in Input, prev *state.Graph, deleting map[string]bool) {
	for _, name := range res.Run.Names() {
		imp, ps := res.Run.Stacks[name], prev.Stacks[name]
		if imp.Intent != run.IntentDelete || ps == nil {
			continue
		}
		var waiting []string
		for _, other := range res.Run.Names() {
			e := res.Run.Stacks[other]
			if other == name || e.At != imp.At || e.Phase != run.Pending {
				continue
			}
			exports := in.Live[e.Key()].Exports
			if len(exports) == 0 {
				continue
			}
			holds := false
			for _, x := range sortedValues(exports) {
				if ps.ImportsKnown && slices.Contains(ps.Imports, x) || !ps.ImportsKnown && e.Intent != run.IntentDelete ||
					e.Intent == run.IntentDelete && res.importedBy(in, prev, e.At, x, name) {
					holds = true
					break
				}
			}
			switch {
			case !holds:
			case e.Intent == run.IntentDelete:
				if deleting[name] && deleting[other] && !slices.Contains(e.Requires, name) {
					e.Requires = append(e.Requires, name)
				}
			case e.Intent == run.IntentDeploy || e.Intent == run.IntentRecreate:
				if !slices.Contains(e.After, name) {
					e.After = append(e.After, name)
					waiting = append(waiting, other)
				}
			}
		}
		if len(waiting) == 0 {
			continue
		}
		for i := range res.Decisions {
			if d := &res.Decisions[i]; d.Stack == name && d.Action == Delete {
				d.Reason += fmt.Sprintf("; deleted first: it imports exports of %s, which change only once it is gone", strings.Join(waiting, ", "))
			}
		}
	}
}

// importedBy reports whether ListImports named stack name (a stack of the run) as an
// importer of export x of place at (see holder).
func (res *Result) importedBy(in Input, prev *state.Graph, at target.Target, x, name string) bool {
	for _, imp := range in.Importers[target.Key(at, x)] {
		if res.holder(prev, at, imp, x) == name {
			return true
		}
	}
	return false
}

// holder is the config name of the run's stack of place at that imports export x as
// stackName, the name ListImports gives: the stack of that name, else the stack it is
// nested in (CloudFormation names a nested stack ROOT-LOGICALID-SUFFIX: the run's stack
// whose name is the longest such prefix), unless the graph knows that one imports
// nothing of that name. "" when none is.
func (res *Result) holder(prev *state.Graph, at target.Target, stackName, x string) string {
	best, bestLen := "", 0
	for name, s := range res.Run.Stacks {
		if s.At != at {
			continue
		}
		if s.StackName == stackName {
			return name
		}
		if ps := prev.Stacks[name]; ps != nil && ps.ImportsKnown && !slices.Contains(ps.Imports, x) {
			continue
		}
		if strings.HasPrefix(stackName, s.StackName+"-") && len(s.StackName) > bestLen {
			best, bestLen = name, len(s.StackName)
		}
	}
	return best
}

// orderCycle refuses a run whose orders cannot all be kept: a cycle through requires,
// imports and the deletions that go first. It names the cycle and what to do.
func (res *Result) orderCycle(file string) {
	var cycle *graph.CycleError
	if err := res.Run.Graph().Validate(); errors.As(err, &cycle) {
		res.Refusals = append(res.Refusals, fmt.Sprintf("the run cannot order its stacks: %s (a stack goes after another it requires, whose export it imports, or that it imports from while it is deleted): no order keeps every one; break the cycle in %s (an export is renamed in two pushes: first export the new name beside the old and move the importers to it, then drop the old)",
			cycle.Error(), file))
	}
}
