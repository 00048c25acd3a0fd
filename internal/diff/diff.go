// Package diff compares a bundle on disk with what the persistent graph says is applied,
// offline, as Stacker's diff does: per stack, the template's text and the parameters,
// with no change set created and no CloudFormation call made. The graph holds only hashes;
// the applied text comes from the applied bundle (the graph records its version).
package diff

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
	"github.com/cairn-dev/cairn/internal/target"
)

// Kind is what became of a stack between what is applied and the bundle.
type Kind string

const (
	New       Kind = "new"       // in the bundle, not applied
	Changed   Kind = "changed"   // its template or parameters differ
	Unchanged Kind = "unchanged" // same template and parameters
	Removed   Kind = "removed"   // applied, no longer in the bundle: the next run deletes it
	Moved     Kind = "moved"     // it names another stack name, account or region: the next run is refused
)

// Param is one parameter that differs: Old is "" when added, New "" when removed.
type Param struct {
	Name     string
	Old, New string
	// Secret is a NoEcho parameter: its values are never shown.
	Secret bool
}

// Stack is one stack's differences.
type Stack struct {
	Name, StackName string
	Kind            Kind
	// Template is the unified diff of the applied template and the bundle's ("" when they
	// are the same); TemplateNote says why there is no text to compare.
	Template     string
	TemplateNote string
	Params       []Param
	// ParamsNote says the parameters resolve to other values than applied although
	// their text is the same (an output they read changed).
	ParamsNote string
	// Code lists the local artifacts (code, definitions) whose content differs from what
	// was applied, by bundle path.
	Code []run.CodeChange
	// From and To are, for a Moved stack, the graph's stack and the one the bundle names.
	From, To string
}

// Result is the comparison of a bundle with what is applied.
type Result struct {
	Deployment string
	Path       string
	// Graph is the persistent graph (nil: nothing applied yet); Note says why the applied
	// bundle's text could not be read, when it could not.
	Graph  *state.Graph
	Note   string
	Stacks []Stack
}

// Changed reports whether the bundle differs from what is applied.
func (r *Result) Changed() bool {
	for _, s := range r.Stacks {
		if s.Kind != Unchanged {
			return true
		}
	}
	return false
}

// Compare is the pure comparison: the bundle's config at path (local), the applied config
// (nil when it could not be read) and the persistent graph (nil when nothing is applied),
// seen from home (cairn's account and region, its account "" when unknown).
func Compare(deployment, path string, local, applied *config.Config, g *state.Graph, home target.Target) *Result {
	r := &Result{Deployment: deployment, Path: path, Graph: g}
	stacks := map[string]*state.Stack{}
	if g != nil {
		stacks = g.Stacks
	}
	inLocal := map[string]bool{}
	for _, s := range local.Stacks {
		inLocal[s.Name] = true // a disabled stack is kept, never deleted
		if !s.Enabled {
			continue
		}
		gs := stacks[s.Name]
		if gs == nil {
			r.Stacks = append(r.Stacks, Stack{Name: s.Name, StackName: s.StackName, Kind: New, Params: params(nil, s, stacks)})
			continue
		}
		if from, to, moved := plan.Moved(gs, s, home); moved {
			r.Stacks = append(r.Stacks, Stack{Name: s.Name, StackName: s.StackName, Kind: Moved, From: from, To: to})
			continue
		}
		var old *config.Stack
		if applied != nil {
			old = applied.Stack(s.Name)
		}
		d := Stack{Name: s.Name, StackName: s.StackName, Kind: Unchanged}
		if plan.TemplateHash(s) != gs.TemplateHash {
			switch {
			case old == nil:
				d.TemplateNote = fmt.Sprintf("the template changed (sha256 %s, applied %s); the applied text is not readable", short(plan.TemplateHash(s)), short(gs.TemplateHash))
			case s.TemplateURL != "" || old.TemplateURL != "":
				d.TemplateNote = fmt.Sprintf("the template changed: %s, applied %s (a template_url is not fetched)", cmp.Or(s.TemplateURL, s.TemplatePath), cmp.Or(old.TemplateURL, old.TemplatePath))
			default:
				d.Template = unified(string(old.TemplateBody), string(s.TemplateBody), "applied/"+templateName(old), path+"/"+templateName(s))
			}
			applied := gs.Code
			if applied == nil && old != nil {
				applied = plan.Code(old)
			}
			d.Code = run.CodeChanges(applied, plan.Code(s))
			if d.Template == "" && d.TemplateNote == "" && len(d.Code) == 0 {
				d.TemplateNote = "the template's text is the same; its hash differs (rewritten by a newer cairn)"
			}
		}
		d.Params = params(old, s, stacks)
		if len(d.Params) == 0 && gs.ParametersHash != "" && len(s.NoEcho()) == 0 {
			// The graph's hash is of the parameters as the deployer stored them, secrets
			// sealed under its key, which the CLI does not have: a stack with NoEcho
			// parameters is compared by the text of its parameters only (above).
			if resolved, ok := resolve(s, stacks); ok && !holdsSealed(resolved) && run.HashParameters(resolved) != gs.ParametersHash {
				d.ParamsNote = "the parameters resolve to other values than applied: an output they read changed since"
			}
		}
		if d.Template != "" || d.TemplateNote != "" || len(d.Params) > 0 || d.ParamsNote != "" || len(d.Code) > 0 {
			d.Kind = Changed
		}
		r.Stacks = append(r.Stacks, d)
	}
	for _, name := range slices.Sorted(maps.Keys(stacks)) {
		if !inLocal[name] {
			r.Stacks = append(r.Stacks, Stack{Name: name, StackName: stacks[name].StackName, Kind: Removed})
		}
	}
	return r
}

// params lists the parameters of s that differ from old's (every one when old is nil),
// by name. A value reading another stack's output is shown as written, with the value
// the graph has for that output now.
func params(old, s *config.Stack, stacks map[string]*state.Stack) []Param {
	var before map[string]string
	if old != nil {
		before = old.Parameters
	}
	names := slices.Sorted(maps.Keys(s.Parameters))
	for n := range before {
		if _, ok := s.Parameters[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []Param
	for _, n := range names {
		o, n2 := before[n], s.Parameters[n]
		if old != nil && o == n2 && loaded(old, n) == loaded(s, n) {
			continue
		}
		p := Param{Name: n, Old: o, New: annotate(s, n, n2, stacks), Secret: secret(s, n) || (old != nil && secret(old, n))}
		if old != nil {
			p.Old = annotate(old, n, o, stacks)
		}
		out = append(out, p)
	}
	return out
}

// loaded is what the ${var} and ${file} lookups of parameter param of s read when its
// bundle was loaded (the variables of cairn.yaml, of the bundle's cairn.vars.yaml, and
// --var-file), "" when it has none: a parameter written the same reads other values when
// a variable changed.
func loaded(s *config.Stack, param string) string {
	var parts []string
	for _, l := range s.Lookups {
		if l.Param == param && (l.Kind == config.KindVar || l.Kind == config.KindFile) {
			parts = append(parts, string(l.Kind)+" "+l.Arg+" = "+l.Value)
		}
	}
	return strings.Join(parts, "; ")
}

// annotate shows a parameter value holding lookups as written, followed by what the
// graph's outputs resolve it to now, or that they cannot be resolved offline; a value
// reading variables or files says what they read.
func annotate(s *config.Stack, param, value string, stacks map[string]*state.Stack) string {
	var lookups, others bool
	for _, l := range s.Lookups {
		if l.Param == param {
			lookups = true
			others = others || l.Kind != config.KindVar && l.Kind != config.KindFile
		}
	}
	if !lookups || value == "" {
		return value
	}
	if v := loaded(s, param); v != "" {
		value += " (" + v + ")"
	}
	if !others {
		return value
	}
	one := &config.Stack{Name: s.Name, Parameters: map[string]string{param: value}, Lookups: s.Lookups}
	if v, ok := resolve(one, stacks); ok {
		return value + " (now " + v[param] + ")"
	}
	return value + " (unresolved: read at deploy time)"
}

// resolve resolves s's parameters from the outputs the graph recorded, if it has them all.
func resolve(s *config.Stack, stacks map[string]*state.Stack) (map[string]string, bool) {
	byStackName := map[string]*state.Stack{}
	for _, gs := range stacks {
		byStackName[gs.StackName] = gs
	}
	v, err := config.ResolveParameters(s, config.Values{Outputs: func(stackName, output string) (string, bool) {
		if gs := byStackName[stackName]; gs != nil {
			o, ok := gs.Outputs[output]
			return o, ok
		}
		return "", false
	}})
	return v, err == nil
}

func secret(s *config.Stack, name string) bool {
	if s == nil || s.Template == nil {
		return false
	}
	return s.Template.Parameters[name].NoEcho
}

func templateName(s *config.Stack) string {
	if s.TemplatePath != "" {
		return s.TemplatePath
	}
	return "cairn.yaml (template_body of " + s.Name + ")"
}

func unified(a, b, from, to string) string {
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(b), FromFile: from, ToFile: to, Context: 3,
	})
	if err != nil {
		return ""
	}
	return text
}

func short(h string) string {
	if len(h) > 12 && !strings.HasPrefix(h, "url:") {
		return h[:12]
	}
	return h
}

// Write prints r for a terminal, every value of the bundle, the graph or a template
// through the printer (one line each, escaped):
//
//	stack network (shop-network): changed
//	--- applied/templates/network.yaml
//	+++ deploy/templates/network.yaml
//	...
//	  ~ Size: small -> large
func (r *Result) Write(w io.Writer) error {
	var b strings.Builder
	if r.Graph == nil {
		printer.Fprintf(&b, "deployment %s: nothing is applied yet; every stack of %s is new\n", r.Deployment, r.Path)
	} else {
		printer.Fprintf(&b, "deployment %s: %s against graph %s/%s at generation %d (%s)\n", r.Deployment, r.Path, r.Graph.Namespace, r.Graph.Key, r.Graph.Generation, applied(r.Graph.Bundle))
	}
	if r.Note != "" {
		printer.Fprintf(&b, "note: %s\n", r.Note)
	}
	counts := map[Kind]int{}
	for _, s := range r.Stacks {
		counts[s.Kind]++
		switch s.Kind {
		case Unchanged:
			continue
		case New:
			printer.Fprintf(&b, "\nstack %s (%s): new, created by the next run\n", s.Name, s.StackName)
		case Removed:
			printer.Fprintf(&b, "\nstack %s (%s): applied, no longer in the bundle: the next run deletes it\n", s.Name, s.StackName)
			continue
		case Moved:
			printer.Fprintf(&b, "\nstack %s: moved from %s to %s: the next run is refused: %s\n", s.Name, s.From, s.To, plan.MovedFix(r.Path+"/cairn.yaml"))
			continue
		default:
			printer.Fprintf(&b, "\nstack %s (%s): changed\n", s.Name, s.StackName)
		}
		if s.TemplateNote != "" {
			printer.Fprintf(&b, "  %s\n", s.TemplateNote)
		}
		printer.Lines(&b, s.Template) // a unified diff of the template, each line escaped
		for _, c := range s.Code {
			printer.Fprintf(&b, "  %s\n", c)
		}
		if len(s.Params) > 0 {
			b.WriteString("  parameters:\n")
		}
		for _, p := range s.Params {
			old, new := p.Old, p.New
			if p.Secret {
				old, new = mask(old), mask(new)
			}
			switch {
			case s.Kind == New:
				printer.Fprintf(&b, "    %s: %s\n", p.Name, new)
			case p.Old == "":
				printer.Fprintf(&b, "  + %s: %s\n", p.Name, new)
			case p.New == "":
				printer.Fprintf(&b, "  - %s: %s\n", p.Name, old)
			default:
				printer.Fprintf(&b, "  ~ %s: %s -> %s\n", p.Name, old, new)
			}
		}
		if s.ParamsNote != "" {
			printer.Fprintf(&b, "  %s\n", s.ParamsNote)
		}
	}
	printer.Fprintf(&b, "\n%d changed, %d new, %d removed, %d unchanged", counts[Changed], counts[New], counts[Removed], counts[Unchanged])
	if counts[Moved] > 0 {
		printer.Fprintf(&b, ", %d moved", counts[Moved])
	}
	b.WriteString("\n")
	_, err := w.Write([]byte(b.String())) // all of it printed through printer above
	return err
}

func mask(v string) string {
	if v == "" {
		return ""
	}
	return "****"
}

func applied(b state.BundleRef) string {
	var parts []string
	if b.VersionID != "" {
		parts = append(parts, "bundle version "+report.ShortVersion(b.VersionID))
	}
	if b.GitRef != "" {
		parts = append(parts, "git "+short(b.GitRef))
	}
	if len(parts) == 0 {
		return "bundle unknown"
	}
	return strings.Join(parts, ", ")
}

// Reader reads what is applied from cairn's bucket.
type Reader struct {
	S3     objects.Getter
	Bucket string
	State  interface {
		Show(ctx context.Context, namespace, key, version string) (*state.Graph, error)
	}
	// Home is cairn's account and region (its account "" when unknown).
	Home target.Target
}

// Diff compares the bundle whose config is local (read from path) with what deployment
// applied to the graph the config names.
func (rd *Reader) Diff(ctx context.Context, deployment, path string, local *config.Config) (*Result, error) {
	g, err := rd.State.Show(ctx, local.Namespace, local.PersistentGraphKey, "")
	if errors.Is(err, statestore.ErrNotFound) {
		return Compare(deployment, path, local, nil, nil, rd.Home), nil
	}
	if err != nil {
		return nil, err
	}
	version := g.Bundle.VersionID
	if version == "null" {
		version = ""
	}
	lb, key, err := rundoc.DownloadApplied(ctx, rd.S3, rd.Bucket, deployment, version, g.Bundle.SHA256)
	var note string
	var appliedConfig *config.Config
	switch {
	case err != nil:
		return nil, fmt.Errorf("read the applied bundle of deployment %s: %w", deployment, err)
	case lb == nil:
		note = fmt.Sprintf("the applied bundle (%s) is in none of %s (expired by a lifecycle rule?): templates are compared by hash only", applied(g.Bundle), strings.Join(bucket.AppliedKeys(deployment), ", "))
	case lb.Config == nil:
		note = fmt.Sprintf("the applied bundle %s does not load (%s): templates are compared by hash only", bucket.URI(rd.Bucket, key), strings.Join(lb.Errors, "; "))
	default:
		appliedConfig = lb.Config
	}
	r := Compare(deployment, path, local, appliedConfig, g, rd.Home)
	r.Note = note
	return r, nil
}

// holdsSealed reports whether resolved parameters hold a sealed value (a secret output
// the graph records sealed): their hash cannot be compared offline.
func holdsSealed(params map[string]string) bool {
	for _, v := range params {
		if config.HoldsSealed(v) {
			return true
		}
	}
	return false
}
