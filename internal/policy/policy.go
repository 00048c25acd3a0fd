package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/cairn-dev/cairn/internal/verdict"
)

// Origins of a policy set: the platform team's (read from where only the policy role
// writes) or the bundle's own (written by whoever writes the pull request).
const (
	Team   = "team"
	Bundle = "bundle"
)

// Levels of a result: a denial blocks, a warning is shown.
const (
	Deny = verdict.Deny
	Warn = verdict.Warn
)

// Limits of a policy set and of its evaluation.
const (
	// MaxBytes bounds the Rego and data of one set, MaxFiles its files.
	MaxBytes = 1 << 20
	MaxFiles = 500
	// DefaultTimeout bounds the evaluation of one set against one input.
	DefaultTimeout = 5 * time.Second
)

// File is one file of a policy set: a Rego module, or a JSON data document.
type File struct {
	// Name is the file's path as errors name it (DIR/s3.rego).
	Name   string
	Source string
}

// Set is the policies of one origin: their modules (tests apart) and data.
type Set struct {
	Origin string
	// Dir is where the set was read from, as messages name it.
	Dir     string
	Modules []File
	// Tests are the _test.rego modules: run by Test, never evaluated against a plan.
	Tests []File
	// Data is the set's data documents (*.json) merged at the root of its data.
	Data map[string]any
}

// Load reads a policy set from fsys: every .rego file (those ending _test.rego are its
// tests) and every .json file (a JSON object merged at the root of data), under dir,
// bounded by MaxBytes and MaxFiles.
func Load(fsys fs.FS, dir, origin string) (Set, error) {
	b := NewBuilder(dir, origin)
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !Holds(p) {
			return nil
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		return b.Add(p, body)
	})
	if err != nil {
		return Set{}, fmt.Errorf("read %s policies: %w", origin, err)
	}
	return b.Set(), nil
}

// Holds reports whether a file named p belongs to a policy set: a .rego or .json file.
func Holds(p string) bool { return strings.HasSuffix(p, ".rego") || strings.HasSuffix(p, ".json") }

// Builder makes a set from its files one by one, wherever they are read from (a
// directory, cairn's bucket), bounded by MaxBytes and MaxFiles.
type Builder struct {
	set          Set
	total, files int
}

// NewBuilder starts the set of origin read from dir (as messages name it).
func NewBuilder(dir, origin string) *Builder {
	return &Builder{set: Set{Origin: origin, Dir: dir, Data: map[string]any{}}}
}

// Add adds the file p (relative to the set's directory) holding body.
func (b *Builder) Add(p string, body []byte) error {
	name := path.Join(b.set.Dir, p)
	b.total += len(body)
	b.files++
	if b.total > MaxBytes || b.files > MaxFiles {
		return fmt.Errorf("%s policies in %s exceed %d files or %d bytes (at %s): keep a policy set small, or split out what no rule reads", b.set.Origin, b.set.Dir, MaxFiles, MaxBytes, name)
	}
	switch {
	case strings.HasSuffix(p, "_test.rego"):
		b.set.Tests = append(b.set.Tests, File{Name: name, Source: string(body)})
	case strings.HasSuffix(p, ".rego"):
		b.set.Modules = append(b.set.Modules, File{Name: name, Source: string(body)})
	default:
		return mergeData(b.set.Data, name, body)
	}
	return nil
}

// Set is the set made so far.
func (b *Builder) Set() Set { return b.set }

func mergeData(data map[string]any, name string, b []byte) error {
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: not a JSON object (%v): a policy data file holds one object, merged at the root of data", name, err)
	}
	for k, v := range doc {
		if _, dup := data[k]; dup {
			return fmt.Errorf("%s: key %q is set by another data file of the same policies too: set each top-level key in one file", name, k)
		}
		data[k] = v
	}
	return nil
}

// Capabilities are the built-ins a policy may call: OPA's, but those that reach outside
// (http.send, net.lookup_ip_addr) or read the process (opa.runtime). A policy judges its
// input and data, nothing else.
func Capabilities() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	denied := []string{"http.send", "net.lookup_ip_addr", "opa.runtime"}
	caps.Builtins = slices.DeleteFunc(caps.Builtins, func(b *ast.Builtin) bool { return slices.Contains(denied, b.Name) })
	return caps
}

// parse parses files as Rego v1 modules with Capabilities; errors name file and line.
func parse(files []File, origin string) (map[string]*ast.Module, error) {
	caps := Capabilities()
	mods := make(map[string]*ast.Module, len(files))
	var errs []error
	for _, f := range files {
		m, err := ast.ParseModuleWithOpts(f.Name, f.Source, ast.ParserOptions{RegoVersion: ast.RegoV1, Capabilities: caps})
		if err != nil {
			errs = append(errs, located(origin, err))
			continue
		}
		mods[f.Name] = m
	}
	return mods, errors.Join(errs...)
}

// compile compiles modules with Capabilities, alone: nothing of another set is visible.
func compile(mods map[string]*ast.Module, origin string) (*ast.Compiler, error) {
	c := compilerFor()
	c.Compile(mods)
	if c.Failed() {
		return nil, located(origin, c.Errors)
	}
	return c, nil
}

// located says which file and line of which policies an OPA error is at, and what to do.
func located(origin string, err error) error {
	var aerrs ast.Errors
	if !errors.As(err, &aerrs) {
		return fmt.Errorf("%s policy: %w: fix the policy (`cairn policy test DIR` checks it offline)", origin, err)
	}
	var out []error
	for _, e := range aerrs {
		where := "?"
		if e.Location != nil {
			where = fmt.Sprintf("%s:%d", e.Location.File, e.Location.Row)
		}
		out = append(out, fmt.Errorf("%s policy %s: %s (%s): fix the policy (`cairn policy test DIR` checks it offline)", origin, where, e.Message, e.Code))
	}
	return errors.Join(out...)
}

// compilerFor is a new compiler of Capabilities.
func compilerFor() *ast.Compiler { return ast.NewCompiler().WithCapabilities(Capabilities()) }

// Engine evaluates compiled policy sets, each with its own compiler and data.
type Engine struct {
	// Timeout bounds the evaluation of each set against one input (DefaultTimeout).
	Timeout time.Duration
	sets    []*compiled
}

type compiled struct {
	origin  string
	queries []query
}

type query struct {
	rule, level string
	prepared    rego.PreparedEvalQuery
}

// Compile compiles each set apart (its own compiler and data store) and prepares the
// deny and warn of every package its modules declare.
func Compile(ctx context.Context, sets ...Set) (*Engine, error) {
	e := &Engine{Timeout: DefaultTimeout}
	for _, s := range sets {
		c, err := compileSet(ctx, s)
		if err != nil {
			return nil, err
		}
		e.sets = append(e.sets, c)
	}
	return e, nil
}

func compileSet(ctx context.Context, s Set) (*compiled, error) {
	mods, err := parse(s.Modules, s.Origin)
	if err != nil {
		return nil, err
	}
	c, err := compile(mods, s.Origin)
	if err != nil {
		return nil, err
	}
	store := inmem.NewFromObject(s.Data)
	out := &compiled{origin: s.Origin}
	for _, r := range rulesOf(mods) {
		pq, err := rego.New(rego.Compiler(c), rego.Store(store), rego.Query(r.ref), rego.StrictBuiltinErrors(true),
			rego.Capabilities(Capabilities())).PrepareForEval(ctx)
		if err != nil {
			return nil, located(s.Origin, err)
		}
		out.queries = append(out.queries, query{rule: r.rule, level: r.level, prepared: pq})
	}
	return out, nil
}

type ruleRef struct{ rule, level, ref string }

// rulesOf lists each package's deny and warn that its modules define, by package.
func rulesOf(mods map[string]*ast.Module) []ruleRef {
	var out []ruleRef
	for _, m := range mods {
		pkg := m.Package.Path.String()
		for _, r := range m.Rules {
			ref := r.Head.Ref()
			if len(ref) == 0 {
				continue
			}
			name := ref[0].Value.String()
			if name != Deny && name != Warn {
				continue
			}
			rr := ruleRef{rule: strings.TrimPrefix(pkg, "data."), level: name, ref: pkg + "." + name}
			if !slices.Contains(out, rr) {
				out = append(out, rr)
			}
		}
	}
	slices.SortFunc(out, func(a, b ruleRef) int { return strings.Compare(a.ref, b.ref) })
	return out
}

// Evaluate judges in with every set, each within the engine's timeout, and returns the
// union of their results: what any set denies is denied. An error of any set is an error
// of the evaluation (a caller treats it as a denial).
func (e *Engine) Evaluate(ctx context.Context, in Input) ([]Result, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("policy input: %w", err)
	}
	v, err := ast.ValueFromReader(strings.NewReader(string(b)))
	if err != nil {
		return nil, fmt.Errorf("policy input: %w", err)
	}
	var out []Result
	for _, s := range e.sets {
		rs, err := e.evaluate(ctx, s, v)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	slices.SortStableFunc(out, compareResults)
	return out, nil
}

func (e *Engine) evaluate(ctx context.Context, s *compiled, input ast.Value) ([]Result, error) {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out []Result
	for _, q := range s.queries {
		rs, err := q.prepared.Eval(ctx, rego.EvalParsedInput(input))
		if perr := parent.Err(); perr != nil {
			return nil, fmt.Errorf("%s policies: evaluating %s.%s: %w", s.origin, q.rule, q.level, perr)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s policies: evaluating %s.%s took longer than %s: make the rule cheaper (no iteration over large ranges), or split it", s.origin, q.rule, q.level, timeout)
		}
		if err != nil {
			return nil, located(s.origin, err)
		}
		for _, r := range rs {
			for _, ex := range r.Expressions {
				got, err := results(s.origin, q, ex.Value)
				if err != nil {
					return nil, err
				}
				out = append(out, got...)
			}
		}
	}
	return out, nil
}
