package cfnlocal

import (
	"sort"
)

func (s *Service) listExports(f form) (any, error) {
	type xExport struct{ ExportingStackId, Name, Value string }
	var out []xExport
	for _, st := range s.st.Stacks {
		if st.deleted() {
			continue
		}
		for _, o := range st.Outputs {
			if o.ExportName != "" {
				out = append(out, xExport{st.ID, o.ExportName, o.Value})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	pg, next, err := page(out, f.get("NextToken"), s.o.PageSize)
	if err != nil {
		return nil, err
	}
	return struct {
		Exports   []xExport `xml:"Exports>member"`
		NextToken string    `xml:",omitempty"`
	}{pg, next}, nil
}

func (s *Service) listImports(f form) (any, error) {
	name := f.get("ExportName")
	users := s.importers(name)
	if len(users) == 0 {
		return nil, validation("Export '%s' is not imported by any stack.", name)
	}
	var names []string
	for _, u := range users {
		names = append(names, u.Name)
	}
	pg, next, err := page(names, f.get("NextToken"), s.o.PageSize)
	if err != nil {
		return nil, err
	}
	return struct {
		Imports   []string `xml:"Imports>member"`
		NextToken string   `xml:",omitempty"`
	}{pg, next}, nil
}

// importsOf lists the exports the stack's template imports (best effort).
func importsOf(st *stack, tpl *template, s *Service) []string {
	var names []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if iv, ok := x["Fn::ImportValue"]; ok && len(x) == 1 {
				if n, ok := iv.(string); ok {
					names = append(names, n)
					return
				}
				e, err := s.evaluator(st, tpl, st.Params, st.NotificationARNs)
				if err == nil {
					if n, err := e.evalString(iv, "Fn::ImportValue"); err == nil {
						names = append(names, n)
					}
				}
				return
			}
			for _, vv := range x {
				walk(vv)
			}
		case []any:
			for _, vv := range x {
				walk(vv)
			}
		}
	}
	for _, r := range tpl.Resources {
		walk(r.Properties)
	}
	for _, o := range tpl.Outputs {
		walk(o.Value)
	}
	sort.Strings(names)
	return dedupe(names)
}

// checkExportNames refuses exports another stack already has.
func (s *Service) checkExportNames(st *stack, outs []output) error {
	ex := s.exports()
	for _, o := range outs {
		if o.ExportName == "" {
			continue
		}
		if e, ok := ex[o.ExportName]; ok && e.stack != st {
			return invalidf("Export with name %s is already exported by stack %s", o.ExportName, e.stack.Name)
		}
	}
	return nil
}

// checkExportsInUse refuses removing or changing exports that other stacks import.
func (s *Service) checkExportsInUse(st *stack, outs []output) error {
	next := map[string]string{}
	for _, o := range outs {
		if o.ExportName != "" {
			next[o.ExportName] = o.Value
		}
	}
	for _, o := range st.Outputs {
		if o.ExportName == "" {
			continue
		}
		users := s.importers(o.ExportName)
		if len(users) == 0 {
			continue
		}
		v, ok := next[o.ExportName]
		if !ok {
			return invalidf("Export %s cannot be deleted as it is in use by %s", o.ExportName, users[0].Name)
		}
		if v != o.Value {
			return invalidf("Cannot update export %s as it is in use by %s", o.ExportName, users[0].Name)
		}
	}
	return nil
}

type exportEntry struct {
	stack *stack
	value string
}

// exports lists the exports of all live stacks.
func (s *Service) exports() map[string]exportEntry {
	m := map[string]exportEntry{}
	for _, st := range s.st.Stacks {
		if st.deleted() {
			continue
		}
		for _, o := range st.Outputs {
			if o.ExportName != "" {
				m[o.ExportName] = exportEntry{st, o.Value}
			}
		}
	}
	return m
}

// importers lists the live stacks that import the export name.
func (s *Service) importers(name string) []*stack {
	var out []*stack
	for _, st := range s.st.Stacks {
		if st.deleted() {
			continue
		}
		for _, im := range st.Imports {
			if im == name {
				out = append(out, st)
			}
		}
	}
	return out
}

// checkImports refuses plans that import missing exports; it returns the first problem.
func (s *Service) checkImports(st *stack, p *planned) error {
	ex := s.exports()
	for _, im := range p.imports {
		if e, ok := ex[im]; !ok || e.stack == st {
			return invalidf("No export named %s found.", im)
		}
	}
	return nil
}
