package config

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/template"
)

// nestedResult is what checking a template's nested stacks found, once per template.
type nestedResult struct {
	tree  *template.Tree
	needs []template.Need
}

// nested reads, parses and checks the bundle templates that the nested stacks of t (the
// template at bundle path tpath, "" for an inline body; file in messages) name as their
// TemplateURL, recursively: each child as any template, the parameters its nested stack
// passes against the child's declarations. It returns the tree (nil when t names no
// bundle template) and what the children need of capabilities.
func (l *loader) nested(t *template.Template, tpath, file string, chain []string) (*template.Tree, []template.Need) {
	cacheKey := "path:" + tpath
	if tpath == "" {
		cacheKey = "body:" + t.SHA256
	}
	if r, ok := l.nestedDone[cacheKey]; ok && len(chain) <= 1 {
		return r.tree, r.needs
	}
	stacks := t.NestedStacks()
	if len(stacks) == 0 {
		return nil, nil
	}
	tree := &template.Tree{Template: t, Path: tpath, Children: map[string]*template.Tree{}}
	var needs []template.Need
	dir := "."
	if tpath != "" {
		dir = path.Dir(tpath)
	}
	for _, ns := range stacks {
		key := "Resources." + ns.LogicalID + ".Properties.TemplateURL"
		fail := func(format string, args ...any) {
			l.errs = append(l.errs, &Error{File: file, Line: ns.Line, Col: ns.Col, Key: key, Msg: fmt.Sprintf(format, args...)})
		}
		p := path.Clean(path.Join(dir, ns.Path))
		if path.IsAbs(ns.Path) || p == ".." || strings.HasPrefix(p, "../") || !fs.ValidPath(p) {
			fail("nested stack %s: template %q leaves the bundle: name a file of the bundle, relative to the template's folder", ns.LogicalID, ns.Path)
			continue
		}
		if slices.Contains(chain, p) {
			fail("nested stack %s: %s nests itself: %s", ns.LogicalID, p, strings.Join(append(slices.Clone(chain), p), " -> "))
			continue
		}
		body, ok := l.files[p]
		if !ok {
			var err error
			if body, err = l.bundleFile("template", "templates/network.yaml", "bundle a directory, or give an https:// TemplateURL", p); err != nil {
				fail("nested stack %s: %v (its TemplateURL %q is relative to the folder of %s)", ns.LogicalID, err, ns.Path, orDot(tpath))
				continue
			}
			l.files[p] = body
		}
		r := l.parse(body, p, nil)
		if r.err != nil {
			fail("nested stack %s: template %s: %v", ns.LogicalID, p, r.err)
			continue
		}
		childFile := filepath.Join(filepath.Dir(l.file), filepath.FromSlash(p))
		cr := l.check(r.t)
		if !r.reported {
			r.reported = true
			l.errs = append(l.errs, l.remoteURLs(r.t, childFile)...)
			for _, pr := range cr.problems {
				e := &Error{File: childFile, Line: pr.Line, Col: pr.Col, Key: pr.Path, Msg: pr.Msg}
				if pr.Warning {
					e.Msg = "warning: " + e.Msg
					l.warnings = append(l.warnings, e)
				} else {
					l.errs = append(l.errs, e)
				}
			}
		}
		for _, name := range sortedNames(ns.Parameters) {
			np := ns.Parameters[name]
			pkey := "Resources." + ns.LogicalID + ".Properties.Parameters." + name
			decl, ok := r.t.Parameters[name]
			if !ok {
				l.errs = append(l.errs, &Error{File: file, Line: np.Line, Col: np.Col, Key: pkey,
					Msg: fmt.Sprintf("nested stack %s passes parameter %q, which %s does not declare%s; it declares %s", ns.LogicalID, name, p, suggestList(name, r.t.ParameterNames()), list(r.t.ParameterNames(), "none"))})
				continue
			}
			if np.Literal {
				if err := decl.CheckValue(np.Value); err != nil {
					l.errs = append(l.errs, &Error{File: file, Line: np.Line, Col: np.Col, Key: pkey, Msg: fmt.Sprintf("%v (nested stack %s, template %s)", err, ns.LogicalID, p)})
				}
			}
		}
		if missing := missingParameters(r.t, func(name string) bool { _, ok := ns.Parameters[name]; return ok }); len(missing) > 0 {
			fail("nested stack %s: template %s requires parameter %s (no Default): pass it under the nested stack's Parameters", ns.LogicalID, p, strings.Join(missing, ", "))
		}
		child, childNeeds := l.nested(r.t, p, childFile, append(slices.Clone(chain), p))
		if child == nil {
			child = &template.Tree{Template: r.t, Path: p}
		}
		tree.Children[ns.LogicalID] = child
		for _, n := range append(slices.Clone(cr.needs), childNeeds...) {
			n.Why = "nested stack " + ns.LogicalID + " (" + p + "): " + n.Why
			if n.File == "" {
				n.File = childFile
			}
			needs = append(needs, n)
		}
	}
	if len(chain) <= 1 {
		if l.nestedDone == nil {
			l.nestedDone = map[string]nestedResult{}
		}
		l.nestedDone[cacheKey] = nestedResult{tree, needs}
	}
	return tree, needs
}

func orDot(p string) string {
	if p == "" {
		return "the bundle root"
	}
	return p
}

// missingParameters are the template's parameters without a default that given lacks,
// sorted.
func missingParameters(t *template.Template, given func(name string) bool) []string {
	var missing []string
	for name, p := range t.Parameters {
		if !given(name) && !p.HasDefault {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	return missing
}
