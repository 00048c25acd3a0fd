package config

import (
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/template"
)

type templateResult struct {
	t   *template.Template
	err error
	// reported: the template's own problems were reported (once per file or body).
	reported bool
	// checked is l.check(t), kept here for the next stack of this file or body.
	checked *checkResult
}

type checkResult struct {
	problems []template.Problem
	needs    []template.Need
	uses     map[string][]template.ParameterUse // by parameter
}

// templatePath is what the stacks naming one template_path share: its label in messages,
// its file in the bundle, and its clean path, which starts its chain of nested templates.
type templatePath struct {
	label, file, clean string
	chain              []string
}

// templatePath returns what stacks naming template_path p share, made once per path.
func (l *loader) templatePath(p string) *templatePath {
	if tp, ok := l.paths[p]; ok {
		return tp
	}
	clean := path.Clean(p)
	tp := &templatePath{label: "template " + p, file: filepath.Join(filepath.Dir(l.file), p), clean: clean, chain: []string{clean}}
	if l.paths == nil {
		l.paths = map[string]*templatePath{}
	}
	l.paths[p] = tp
	return tp
}

// template reads, parses and checks a stack's template, checks the stack's parameters
// against it, and grants the capabilities it needs.
func (l *loader) template(c *Config, d *stackDef) {
	s := d.s
	if !d.templateOK || d.templateKey == "template_url" {
		l.capabilities(c, d, nil, "")
		return
	}
	label := "the inline template_body"
	file := l.file
	var tp *templatePath
	if d.templateKey == "template_path" {
		tp = l.templatePath(s.TemplatePath)
		label, file = tp.label, tp.file
		body, ok := l.readTemplate(d)
		if !ok {
			return
		}
		s.TemplateBody = body // shared by the stacks using this file
	}
	r := l.parse(s.TemplateBody, s.TemplatePath, d.inline)
	if r.err != nil {
		l.errorf(d.templateNode, d.templateKeyPath(), "%s: %v", label, r.err)
		return
	}
	s.Template = r.t
	if r.checked == nil {
		r.checked = l.check(r.t)
	}
	cr := r.checked
	line, col := 0, 0
	if d.templateKey == "template_body" && d.inline == nil {
		// A string body: its lines follow the template_body key's.
		line, col = d.templateNode.Line, l.indent(d.templateNode.Line+1)
		if d.templateNode.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			line, col = d.templateNode.Line-1, d.templateNode.Column
		}
	}
	l.namespace = c.Namespace
	l.s3Locations(r.t, d, file, line, col)
	if !r.reported {
		r.reported = true
		for _, p := range cr.problems {
			e := &Error{File: file, Line: p.Line + line, Col: p.Col + col, Key: p.Path, Msg: p.Msg}
			if p.Warning {
				e.Msg = "warning: " + e.Msg
				l.warnings = append(l.warnings, e)
			} else {
				l.errs = append(l.errs, e)
			}
		}
	}
	for _, gp := range d.params {
		name := gp.name
		p, ok := r.t.Parameters[name]
		if !ok {
			l.errorf(gp.k, d.key+".parameters."+name, "%s declares no parameter %q%s; it declares %s", label, name, suggestList(name, r.t.ParameterNames()), list(r.t.ParameterNames(), "none"))
			continue
		}
		if v, at := gp.static, gp.at; gp.known {
			if err := p.CheckValue(v); err != nil {
				l.errorf(at, d.key+".parameters."+name, "%v (%s)", err, label)
			} else if u, why := firstRefusal(cr.uses[name], v); why != "" {
				shown := strconv.Quote(v)
				if p.NoEcho {
					shown = "(NoEcho, not shown)"
				}
				tfile := s.TemplatePath
				if tfile == "" {
					tfile = l.file
				}
				l.errorf(at, d.key+".parameters."+name, "parameter %s: value %s goes to %s (%s:%d:%d), which refuses it: %s", name, shown, u.Path, tfile, u.Line, u.Col, redact(why, v, p.NoEcho))
			}
		}
	}
	if missing := missingParameters(r.t, d.given); len(missing) > 0 {
		at, atKey := d.paramsNode, d.key+".parameters"
		if at == nil {
			at, atKey = d.node, d.key
		}
		l.errorf(at, atKey, "stack %s: %s requires parameter %s (no Default): set a value under parameters", s.Name, label, strings.Join(missing, ", "))
	}
	// the templates its nested stacks name in the bundle, their needs counting for it
	tpath, chain := "", []string(nil)
	if s.TemplatePath != "" {
		if tp == nil {
			tp = l.templatePath(s.TemplatePath)
		}
		tpath, chain = tp.clean, tp.chain
	}
	tree, nestedNeeds := l.nested(r.t, tpath, file, chain)
	s.Tree = tree
	l.checkNestedCount(d, label, tree)
	l.capabilities(c, d, template.MergeNeeds(cr.needs, nestedNeeds), file)
}

// firstRefusal returns the first place a parameter's value goes that refuses it, and why.
func firstRefusal(uses []template.ParameterUse, v string) (template.ParameterUse, string) {
	for _, u := range uses {
		if why := u.Check(v); why != "" {
			return u, why
		}
	}
	return template.ParameterUse{}, ""
}

// redact keeps a NoEcho value out of a message.
func redact(msg, v string, noEcho bool) string {
	if !noEcho || v == "" {
		return msg
	}
	return strings.ReplaceAll(strings.ReplaceAll(msg, strconv.Quote(v), "(NoEcho, not shown)"), v, "(NoEcho, not shown)")
}

// indent is the indentation of line (1-based) of the config, as a column offset.
func (l *loader) indent(line int) int {
	rest := l.b.Config
	for i := 1; i < line && len(rest) > 0; i++ {
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			return 0
		}
		rest = rest[j+1:]
	}
	n := 0
	for n < len(rest) && rest[n] == ' ' {
		n++
	}
	return n
}

// capabilities grants a stack naming none the capabilities its template needs, and checks
// that a stack naming some covers the need.
func (l *loader) capabilities(c *Config, d *stackDef, needs []template.Need, file string) {
	s := d.s
	where := func(n template.Need) string {
		f := file
		if n.File != "" {
			f = n.File
		}
		return fmt.Sprintf("%s (%s:%d:%d)", n.Why, f, n.Line, n.Col)
	}
	if d.capsNode == nil {
		if c.ExplicitCapabilities {
			want := "capabilities: []"
			why := ""
			if len(needs) > 0 {
				want = "capabilities: [" + strings.Join(template.Capabilities(needs), ", ") + "]"
				var ws []string
				for _, n := range needs {
					ws = append(ws, n.Capability+" for "+where(n))
				}
				why = "; its template needs " + strings.Join(ws, " and ")
			}
			l.errorf(d.node, d.key+".capabilities", "stack %s names no capabilities, and capabilities: explicit requires every stack to name its own%s: add %s", s.Name, why, want)
			return
		}
		s.Capabilities, s.CapabilitiesFromTemplate = template.Capabilities(needs), true
		return
	}
	for _, n := range template.Uncovered(needs, s.Capabilities) {
		l.errorf(d.capsNode, d.key+".capabilities", "stack %s: capabilities [%s] do not cover %s, which %s needs: add %s, or leave capabilities out to grant what the template needs", s.Name, strings.Join(s.Capabilities, ", "), n.Capability, where(n), n.Capability)
	}
}

// check checks a template once per content.
func (l *loader) check(t *template.Template) *checkResult {
	if l.checked == nil {
		l.checked = map[string]*checkResult{}
	}
	if r, ok := l.checked[t.SHA256]; ok {
		return r
	}
	in := t.InspectOn(l.day)
	r := &checkResult{problems: in.Problems, needs: t.Needs(), uses: map[string][]template.ParameterUse{}}
	for _, u := range in.Uses {
		r.uses[u.Parameter] = append(r.uses[u.Parameter], u)
	}
	l.checked[t.SHA256] = r
	return r
}

// parse parses a template body once per file (by path) or inline body (by content); an
// inline mapping is parsed from its node, so positions are the config's.
func (l *loader) parse(body []byte, file string, inline *yaml.Node) *templateResult {
	cacheKey := source{path: file}
	if file == "" {
		cacheKey = source{body: string(body)}
	}
	r, ok := l.templates[cacheKey]
	if !ok {
		r = &templateResult{}
		if inline != nil {
			r.t, r.err = template.ParseNode(body, deepCopy(inline))
		} else {
			r.t, r.err = template.Parse(body)
		}
		l.templates[cacheKey] = r
	}
	return r
}

func deepCopy(n *yaml.Node) *yaml.Node {
	cp := *n
	cp.Content = make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		cp.Content[i] = deepCopy(c)
	}
	return &cp
}

// readTemplate reads the template file of stack d from the bundle, refusing paths that
// leave it. Each file is read once; stacks sharing a template share its bytes.
func (l *loader) readTemplate(d *stackDef) ([]byte, bool) {
	p := d.s.TemplatePath
	if body, ok := l.files[p]; ok {
		return body, true
	}
	body, err := l.bundleFile("template", "templates/app.yaml", "put the template inline with template_body, or bundle a directory", p)
	if err != nil {
		l.errorf(d.templateNode, d.templateKeyPath(), "%v", err)
		return nil, false
	}
	l.files[p] = body
	return body, true
}
