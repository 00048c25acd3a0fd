package config

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/artifact"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/template"
)

// treeResult is what walking a template's nested stacks and artifacts found, once per
// distinct template.
type treeResult struct {
	tree  *template.Tree // nil: it names no bundle template and no artifact
	needs []template.Need
	done  bool // false while its children are walked: meeting it again is a cycle
}

// nested reads, parses and checks the bundle templates that the nested stacks of t (the
// template at bundle path tpath, "" for an inline body; file in messages) name as their
// TemplateURL, recursively, and the local artifacts every template of them names. Each
// distinct template is walked once however often it is nested, so a tree of templates
// nesting each other twice costs as many walks as it has templates, not nested stacks. It
// returns the tree (nil when t names no bundle template and no artifact) and what the
// children need of capabilities.
func (l *loader) nested(t *template.Template, tpath, file string, chain []string) (*template.Tree, []template.Need) {
	cacheKey := source{path: tpath}
	if tpath == "" {
		cacheKey = source{body: t.SHA256}
	}
	if l.trees == nil {
		l.trees = map[source]*treeResult{}
	}
	if r, ok := l.trees[cacheKey]; ok {
		return r.tree, r.needs // a cycle back to a template still walked is reported by its parent
	}
	r := &treeResult{}
	l.trees[cacheKey] = r
	defer func() { r.done = true }()
	stacks := t.NestedStacks()
	hasArtifacts := l.artifacts(t, tpath, file)
	if len(stacks) == 0 && !hasArtifacts {
		return nil, nil
	}
	tree := &template.Tree{Template: t, Path: tpath, Children: map[string]*template.Tree{}, Assets: l.assetSet()}
	r.tree = tree
	var needs []template.Need
	dir := "."
	if tpath != "" {
		dir = path.Dir(tpath)
	}
	for _, ns := range stacks {
		key := "Resources." + ns.LogicalID + ".Properties." + ns.Property
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
		if prev, ok := l.trees[source{path: p}]; ok && !prev.done {
			fail("nested stack %s: %s nests itself: %s", ns.LogicalID, p, strings.Join(append(slices.Clone(chain), p), " -> "))
			continue
		}
		body, ok := l.files[p]
		if !ok {
			var err error
			if body, err = l.bundleFile("template", "templates/network.yaml", "bundle a directory, or give an https:// TemplateURL", p); err != nil {
				fail("nested stack %s: %v (its %s %q is relative to the folder of %s)", ns.LogicalID, err, ns.Property, ns.Path, orDot(tpath))
				continue
			}
			l.files[p] = body
		}
		cr := l.parse(body, p, nil)
		if cr.err != nil {
			fail("nested stack %s: template %s: %v", ns.LogicalID, p, cr.err)
			continue
		}
		childFile := filepath.Join(filepath.Dir(l.file), filepath.FromSlash(p))
		checked := l.check(cr.t)
		if !cr.reported {
			cr.reported = true
			// A nested template's parameters come from its parent's template: none is
			// known here, nor checked again by the deployer.
			l.locationErrors(cr.t, "", childFile, 0, 0, nil, nil)
			l.dynamicReferenceErrors(cr.t, "", childFile, 0, 0, nil, nil)
			for _, pr := range checked.problems {
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
			decl, ok := cr.t.Parameters[name]
			if !ok {
				l.errs = append(l.errs, &Error{File: file, Line: np.Line, Col: np.Col, Key: pkey,
					Msg: fmt.Sprintf("nested stack %s passes parameter %q, which %s does not declare%s; it declares %s", ns.LogicalID, name, p, suggestList(name, cr.t.ParameterNames()), list(cr.t.ParameterNames(), "none"))})
				continue
			}
			if np.Literal {
				if err := decl.CheckValue(np.Value); err != nil {
					l.errs = append(l.errs, &Error{File: file, Line: np.Line, Col: np.Col, Key: pkey, Msg: fmt.Sprintf("%v (nested stack %s, template %s)", err, ns.LogicalID, p)})
				}
			}
		}
		if ns.Choices == nil {
			if missing := missingParameters(cr.t, func(name string) bool { _, ok := ns.Parameters[name]; return ok }); len(missing) > 0 {
				fail("nested stack %s: template %s requires parameter %s (no Default): pass it under the nested stack's Parameters", ns.LogicalID, p, strings.Join(missing, ", "))
			}
		}
		for i, set := range ns.Choices {
			if missing := missingParameters(cr.t, func(name string) bool { _, ok := set[name]; return ok }); len(missing) > 0 {
				fail("nested stack %s: template %s requires parameter %s (no Default), which choice %d of the Fn::If of its Parameters does not pass: pass it in every choice", ns.LogicalID, p, strings.Join(missing, ", "), i+1)
			}
		}
		child, childNeeds := l.nested(cr.t, p, childFile, append(slices.Clone(chain), p))
		if child == nil {
			child = &template.Tree{Template: cr.t, Path: p}
		}
		tree.Children[ns.LogicalID] = child
		for _, n := range append(slices.Clone(checked.needs), childNeeds...) {
			n.Why = "nested stack " + ns.LogicalID + " (" + p + "): " + n.Why
			if n.File == "" {
				n.File = childFile
			}
			needs = append(needs, n)
		}
	}
	// One need per capability is all a stack's grant shows: keeping more would grow with
	// every level a template is nested twice.
	r.needs = template.MergeNeeds(needs)
	return tree, r.needs
}

// assetSet is the bundle's artifact set, made on first use.
func (l *loader) assetSet() *artifact.Set {
	if l.assets == nil {
		l.assets = artifact.NewSet(l.b.FS)
	}
	return l.assets
}

// artifacts checks the local artifacts template t (at bundle path tpath, file in messages)
// names: each inside the bundle, there, of the kind its property takes, within its
// service's quotas. It builds nothing. It reports whether t names any.
func (l *loader) artifacts(t *template.Template, tpath, file string) bool {
	list := t.Artifacts()
	if len(list) == 0 {
		return false
	}
	tree := &template.Tree{Template: t, Path: tpath}
	infos := map[string]artifact.Info{} // of the layers, by logical id
	for _, a := range list {
		fail := func(format string, args ...any) {
			l.errs = append(l.errs, &Error{File: file, Line: a.Line, Col: a.Col, Key: a.At, Msg: fmt.Sprintf(format, args...)})
		}
		what := a.Property + " of " + a.LogicalID
		if a.LogicalID == "" {
			what = "AWS::Include's Location"
		}
		src := tree.Source(a)
		if l.b.SingleFile {
			fail("%s names %q, a local path: a single-file bundle holds no files; bundle a directory or zip, or give an s3:// location", what, a.Path)
			continue
		}
		if path.IsAbs(a.Path) || strings.HasPrefix(a.Path, `\`) || len(a.Path) > 1 && a.Path[1] == ':' || src.Path == ".." || strings.HasPrefix(src.Path, "../") || !fs.ValidPath(src.Path) {
			fail("%s: %q leaves the bundle: name a file or folder of the bundle, relative to the folder of %s", what, a.Path, orDot(tpath))
			continue
		}
		if bundle.Excluded(src.Path) {
			fail("%s: %q names %s, in a folder no bundle holds (cairn leaves .git, .hg, .svn and .cairn out of every bundle it pushes, so the deployer would not find it): name a file or folder the bundle carries", what, a.Path, src.Path)
			continue
		}
		info, err := artifact.Stat(l.b.FS, src)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			fail("%s: %s does not exist in the bundle (%q is relative to the folder of %s): add it, or give an s3:// location", what, src.Path, a.Path, orDot(tpath))
			continue
		case err != nil:
			fail("%s: %s cannot be read: %v", what, src.Path, err)
			continue
		case info.Dir && a.Type == template.Include.Type:
			fail("%s: %s is a folder; AWS::Include takes a template snippet file", what, src.Path)
			continue
		}
		if err := a.Kind.Check(info); err != nil {
			fail("%s (%s): %v", what, src.Path, err)
			continue
		}
		if info.Dir && (a.Kind == artifact.FunctionCode || a.Kind == artifact.LayerContent) {
			if why := needsBuilding(l.b.FS, a, t.BuildOf(a), src.Path); why != "" {
				kind := "function"
				if a.Kind == artifact.LayerContent {
					kind = "layer"
				}
				fail("%s %s: %s %s needs building (%s): run `sam build` and push .aws-sam/build (or build it yourself)", kind, a.LogicalID, a.Property, cmp.Or(a.Path, "(left out: the template's folder)"), why)
				continue
			}
		}
		if a.Kind == artifact.LayerContent {
			infos[a.LogicalID] = info
		}
	}
	for _, a := range list {
		if a.Kind != artifact.FunctionCode || a.LayerCount == 0 {
			continue
		}
		if a.LayerCount > artifact.MaxLayers {
			l.errs = append(l.errs, &Error{File: file, Line: a.Line, Col: a.Col, Key: a.At,
				Msg: fmt.Sprintf("function %s names %d layers, more than Lambda's %d", a.LogicalID, a.LayerCount, artifact.MaxLayers)})
		}
		info, err := artifact.Stat(l.b.FS, tree.Source(a))
		if err != nil {
			continue // reported above
		}
		total := info.Unzipped
		for _, id := range a.Layers {
			total += infos[id].Unzipped
		}
		if total > artifact.MaxLambdaUnzipped {
			l.errs = append(l.errs, &Error{File: file, Line: a.Line, Col: a.Col, Key: a.At,
				Msg: fmt.Sprintf("function %s: its code and its layers %s hold %d bytes unzipped, more than Lambda's %d (250 MB) for a function's code and layers together", a.LogicalID, strings.Join(a.Layers, ", "), total, artifact.MaxLambdaUnzipped)})
		}
	}
	return true
}

// checkNestedCount refuses a stack whose nested stacks, counted as often as they are
// nested, hold more resources than CloudFormation creates, updates or deletes in one
// operation: such a stack can never deploy, and expanding it would exhaust whoever tried.
func (l *loader) checkNestedCount(d *stackDef, label string, tree *template.Tree) {
	if tree == nil || len(tree.Children) == 0 {
		return
	}
	stacks, resources := tree.Count()
	if resources <= template.MaxNestedResources {
		return
	}
	l.errorf(d.templateNode, d.templateKeyPath(), "stack %s: %s makes %s nested stacks holding %s resources in all (a template nested twice counts twice), more than the %s resources CloudFormation creates, updates or deletes in one operation of a stack and its nested stacks: nest fewer, or split them into stacks of the config",
		d.s.Name, label, count(stacks), count(resources), count(template.MaxNestedResources))
}

// count shows a large number with thousands separators ("more than" past what counting
// saturates at).
func count(n int64) string {
	if n == 1<<63-1 {
		return "more than 9,223,372,036,854,775,806"
	}
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
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
