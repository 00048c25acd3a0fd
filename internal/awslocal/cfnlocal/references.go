package cfnlocal

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws-cloudformation/rain/cft/parse"

	"github.com/cairn-dev/cairn/internal/graph"
	"github.com/cairn-dev/cairn/internal/resourcespec"
)

var pseudoParams = map[string]bool{
	"AWS::AccountId": true, "AWS::Region": true, "AWS::StackName": true, "AWS::StackId": true,
	"AWS::Partition": true, "AWS::URLSuffix": true, "AWS::NotificationARNs": true, "AWS::NoValue": true,
}

// checkReferences verifies every Ref, GetAtt, Sub variable, DependsOn and Condition names
// something the template declares, and that resources have no dependency cycle.
func (t *template) checkReferences() error {
	var unresolved []string
	var attrErr error
	for name, r := range t.Resources {
		for _, d := range r.DependsOn {
			if _, ok := t.Resources[d]; !ok {
				return invalidf("Template format error: Unresolved resource dependencies [%s] in the Resources block of the template", d)
			}
		}
		if r.Condition != "" {
			if _, ok := t.Conditions[r.Condition]; !ok {
				return invalidf("Template format error: Unresolved dependencies [%s]. Cannot reference resources in the Conditions block of the template", r.Condition)
			}
		}
		if err := t.walkRefs(r.Properties, func(kind, target string) error {
			switch kind {
			case "Ref":
				if !t.nameDefined(target) {
					unresolved = append(unresolved, target)
				}
			case "GetAtt":
				if _, ok := t.Resources[target]; !ok {
					return invalidf("Template error: instance of Fn::GetAtt references undefined resource %s", target)
				}
			case "GetAttAttribute":
				if err := t.checkAttribute(target); err != nil && attrErr == nil {
					attrErr = err // in AWS's words, without the resource
				}
			case "Condition":
				if _, ok := t.Conditions[target]; !ok {
					return invalidf("Template error: unresolved condition dependency %s in Fn::If", target)
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("%w (resource %s)", err, name)
		}
	}
	for name, o := range t.Outputs {
		if err := t.walkRefs([]any{o.Value, o.Export}, func(kind, target string) error {
			if kind == "Ref" && !t.nameDefined(target) {
				unresolved = append(unresolved, target)
			}
			if kind == "GetAtt" {
				if _, ok := t.Resources[target]; !ok {
					return invalidf("Template error: instance of Fn::GetAtt references undefined resource %s", target)
				}
			}
			if kind == "GetAttAttribute" {
				if err := t.checkAttribute(target); err != nil && attrErr == nil {
					attrErr = err
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("%w (output %s)", err, name)
		}
		if o.Condition != "" {
			if _, ok := t.Conditions[o.Condition]; !ok {
				return invalidf("Template format error: Unresolved dependencies [%s] in the Outputs block of the template", o.Condition)
			}
		}
	}
	if attrErr != nil {
		return attrErr
	}
	if len(unresolved) > 0 {
		sort.Strings(unresolved)
		return invalidf("Template format error: Unresolved resource dependencies [%s] in the Resources block of the template", strings.Join(dedupe(unresolved), ", "))
	}
	if _, err := t.order(); err != nil {
		return err
	}
	return nil
}

// checkAttribute refuses, as CloudFormation does before it creates anything, a Fn::GetAtt
// of an attribute the resource type's schema does not declare (resAttr is
// "Resource.Attribute"). Custom resources answer any attribute; registry types cairn does
// not know are not checked.
func (t *template) checkAttribute(resAttr string) error {
	res, attr, _ := strings.Cut(resAttr, ".")
	d, ok := t.Resources[res]
	if !ok || isCustomType(d.Type) {
		return nil
	}
	st := resourcespec.Lookup(d.Type)
	if st == nil || st.HasAttribute(attr) {
		return nil
	}
	return invalidf("Template error: resource %s does not support attribute type %s in Fn::GetAtt", res, attr)
}

func (t *template) nameDefined(n string) bool {
	if pseudoParams[n] {
		return true
	}
	if _, ok := t.Parameters[n]; ok {
		return true
	}
	_, ok := t.Resources[n]
	return ok
}

// walkRefs calls fn for every reference in v: ("Ref", name), ("GetAtt", resource) then
// ("GetAttAttribute", "resource.attribute") when the attribute is a literal, and
// ("Condition", name).
func (t *template) walkRefs(v any, fn func(kind, target string) error) error {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				switch k {
				case "Ref":
					if s, ok := arg.(string); ok {
						return fn("Ref", s)
					}
				case "Fn::GetAtt":
					if res, attr, ok := getAttArgs(arg); ok {
						if err := fn("GetAtt", res); err != nil {
							return err
						}
						if err := fn("GetAttAttribute", res+"."+attr); err != nil {
							return err
						}
					}
					return t.walkRefs(arg, fn)
				case "Fn::Sub":
					str, vars := subArgs(arg)
					words, err := parseSub(str)
					if err != nil {
						return invalidf("Template error: Fn::Sub %q is malformed: %v", str, err)
					}
					for _, w := range words {
						if w.T == parse.STR {
							continue
						}
						if w.T == parse.AWS {
							w.W = "AWS::" + w.W
						}
						if _, ok := vars[w.W]; ok {
							continue
						}
						name, kind := w.W, "Ref"
						if w.T == parse.GETATT {
							i := strings.Index(name, ".")
							name, kind = name[:i], "GetAtt"
						}
						if err := fn(kind, name); err != nil {
							return err
						}
						if kind == "GetAtt" {
							if err := fn("GetAttAttribute", w.W); err != nil {
								return err
							}
						}
					}
					for _, vv := range vars {
						if err := t.walkRefs(vv, fn); err != nil {
							return err
						}
					}
					return nil
				case "Fn::If":
					if l, ok := arg.([]any); ok && len(l) == 3 {
						if c, ok := l[0].(string); ok {
							if err := fn("Condition", c); err != nil {
								return err
							}
						}
						return t.walkRefs(l[1:], fn)
					}
				}
			}
		}
		for _, vv := range x {
			if err := t.walkRefs(vv, fn); err != nil {
				return err
			}
		}
	case []any:
		for _, vv := range x {
			if err := t.walkRefs(vv, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

func getAttArgs(arg any) (res, attr string, ok bool) {
	switch a := arg.(type) {
	case string:
		i := strings.Index(a, ".")
		if i <= 0 {
			return "", "", false
		}
		return a[:i], a[i+1:], true
	case []any:
		if len(a) != 2 {
			return "", "", false
		}
		r, ok1 := a[0].(string)
		at, ok2 := a[1].(string)
		return r, at, ok1 && ok2
	}
	return "", "", false
}

func subArgs(arg any) (string, map[string]any) {
	switch a := arg.(type) {
	case string:
		return a, nil
	case []any:
		if len(a) == 2 {
			s, _ := a[0].(string)
			vars, _ := a[1].(map[string]any)
			return s, vars
		}
	}
	return "", nil
}

// deps returns the resources the named resource depends on.
func (t *template) deps(name string) []string {
	r := t.Resources[name]
	set := map[string]bool{}
	for _, d := range r.DependsOn {
		set[d] = true
	}
	_ = t.walkRefs(r.Properties, func(kind, target string) error {
		if kind == "Ref" || kind == "GetAtt" {
			if _, ok := t.Resources[target]; ok {
				set[target] = true
			}
		}
		return nil
	})
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// order returns the resources in a deterministic dependency order (dependencies first).
func (t *template) order() ([]string, error) { return t.orderWith(nil) }

// orderWith is order with the extra dependencies of each resource (see impliedDeps); when
// they would make a cycle they are ignored.
func (t *template) orderWith(extra map[string][]string) ([]string, error) {
	if len(extra) > 0 {
		if o, err := t.orderBy(extra); err == nil {
			return o, nil
		}
	}
	return t.orderBy(nil)
}

// orderBy orders the resources with the graph's walker (package graph, as a run orders
// stacks): dependencies first, the smallest logical id first among those that could come
// next. A resource on a cycle, or depending on one or on a resource the template does not
// declare, has no place: they are all named, as CloudFormation does.
func (t *template) orderBy(extra map[string][]string) ([]string, error) {
	names := sortedKeys(t.Resources)
	g := graph.NewSized(len(names))
	for _, n := range names {
		g.AddNode(n)
	}
	var undeclared []string // resources depending on one that is not declared
	for _, n := range names {
		for _, d := range t.deps(n) {
			if g.AddEdge(n, d) != nil {
				undeclared = append(undeclared, n)
			}
		}
		for _, d := range extra[n] {
			if d != n && g.AddEdge(n, d) != nil {
				undeclared = append(undeclared, n)
			}
		}
	}
	order, err := g.Order()
	if err == nil && undeclared == nil {
		return order, nil
	}
	var unordered []string
	var cycle *graph.CycleError
	if errors.As(err, &cycle) {
		unordered = cycle.Unordered
	}
	unordered = append(append(unordered, undeclared...), g.BlockedBy(undeclared, nil)...)
	slices.Sort(unordered)
	return nil, invalidf("Template format error: Circular dependency between resources: [%s]", strings.Join(slices.Compact(unordered), ", "))
}

func dedupe(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}
