package template

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// RemoteURL is a TemplateURL a template gives CloudFormation to fetch: a nested stack's
// that is not a file of the bundle.
type RemoteURL struct {
	LogicalID string
	// URL is the value as written; for Fn::Sub, its string, the ${...} left in.
	URL string
	// Line and Col locate the value.
	Line, Col int
}

// RemoteURLs lists the TemplateURLs of the template's nested stacks that are not files of
// the bundle (see NestedStacks for those): literal strings, and the strings of Fn::Sub,
// in logical id order. A URL built otherwise (Fn::Join, a Ref) cannot be read here.
func (t *Template) RemoteURLs() []RemoteURL {
	res := value(t.Node, "Resources")
	if res == nil || res.Kind != yaml.MappingNode {
		return nil
	}
	c := &checker{t: t, resources: map[string]*resource{}, conditions: map[string]bool{}, mappings: map[string]bool{}}
	var out []RemoteURL
	for _, e := range c.expand(res, "") {
		r := resolve(e.value)
		typ := value(r, "Type")
		if typ == nil || nestedTypes[typ.Value] == "" {
			continue
		}
		u := value(value(r, "Properties"), nestedTypes[typ.Value])
		if u == nil {
			continue
		}
		if intrinsic(u) == "Fn::Sub" {
			u = resolve(u.Content[1])
			if u.Kind == yaml.SequenceNode && len(u.Content) > 0 {
				u = resolve(u.Content[0])
			}
		}
		if u.Kind != yaml.ScalarNode || IsLocalPath(u.Value) {
			continue
		}
		out = append(out, RemoteURL{LogicalID: e.key.Value, URL: u.Value, Line: u.Line, Col: u.Column})
	}
	slices.SortFunc(out, func(a, b RemoteURL) int { return strings.Compare(a.LogicalID, b.LogicalID) })
	return out
}
