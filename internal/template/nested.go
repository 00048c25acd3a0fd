package template

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/internal/bucket"
	"gopkg.in/yaml.v3"
)

// Nested stacks in bundles: a template may name a file of the bundle as the TemplateURL of
// a nested stack (AWS::CloudFormation::Stack), as `aws cloudformation package` and rain
// accept. cairn checks the child as it checks any template, uploads it content-addressed
// and sends the parent with the URL rewritten (Tree.Package), so the child's content is
// part of what the parent deploys.

// NestedStack is a nested stack whose TemplateURL names a file of the bundle.
type NestedStack struct {
	LogicalID string
	// Path is the TemplateURL as written: a path relative to the template's directory.
	Path string
	// Line and Col locate the TemplateURL's value.
	Line, Col int
	// Parameters are the nested stack's Parameters, by name.
	Parameters map[string]NestedParameter
	node       *yaml.Node
}

// NestedParameter is a value a nested stack passes to its child's parameter.
type NestedParameter struct {
	// Value is the literal value; Literal is false for one computed at deploy time
	// (an intrinsic function), which cannot be checked before.
	Value   string
	Literal bool
	// Line and Col locate the parameter's name.
	Line, Col int
}

// IsLocalPath reports whether a nested stack's TemplateURL names a file of the bundle
// rather than an S3 or HTTPS URL.
func IsLocalPath(u string) bool {
	return u != "" && !strings.Contains(u, "://") && !strings.HasPrefix(u, "s3:") && !strings.HasPrefix(u, "https:") && !strings.HasPrefix(u, "http:")
}

// HasNestedStacks reports whether the template declares a nested stack (of any URL).
func (t *Template) HasNestedStacks() bool {
	res := value(t.Node, "Resources")
	if res == nil || res.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(res.Content); i += 2 {
		if typ := value(res.Content[i+1], "Type"); typ != nil && typ.Value == nestedStackType {
			return true
		}
	}
	return false
}

const nestedStackType = "AWS::CloudFormation::Stack"

// NestedStacks returns the nested stacks whose TemplateURL is a literal path of the
// bundle, in logical id order.
func (t *Template) NestedStacks() []NestedStack {
	res := value(t.Node, "Resources")
	if res == nil || res.Kind != yaml.MappingNode {
		return nil
	}
	c := &checker{t: t, resources: map[string]*resource{}, conditions: map[string]bool{}, mappings: map[string]bool{}}
	var out []NestedStack
	for _, e := range c.expand(res, "") {
		r := resolve(e.value)
		if typ := value(r, "Type"); typ == nil || typ.Value != nestedStackType {
			continue
		}
		props := value(r, "Properties")
		u := value(props, "TemplateURL")
		if u == nil || u.Kind != yaml.ScalarNode || !IsLocalPath(u.Value) {
			continue
		}
		ns := NestedStack{LogicalID: e.key.Value, Path: u.Value, Line: u.Line, Col: u.Column, Parameters: map[string]NestedParameter{}, node: u}
		if ps := value(props, "Parameters"); ps != nil && ps.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(ps.Content); i += 2 {
				k, v := ps.Content[i], resolve(ps.Content[i+1])
				p := NestedParameter{Line: k.Line, Col: k.Column}
				switch v.Kind {
				case yaml.ScalarNode:
					p.Value, p.Literal = v.Value, true
				case yaml.SequenceNode:
					if intrinsic(v) == "" {
						p.Value, p.Literal = strings.Join(scalars(v), ","), len(scalars(v)) == len(v.Content)
					}
				}
				ns.Parameters[k.Value] = p
			}
		}
		out = append(out, ns)
	}
	slices.SortFunc(out, func(a, b NestedStack) int { return strings.Compare(a.LogicalID, b.LogicalID) })
	return out
}

// Tree is a template with the bundle's templates its nested stacks name, recursively.
type Tree struct {
	Template *Template
	// Path is the template's path in the bundle ("" for an inline template_body).
	Path string
	// Children are the templates of the nested stacks, by the nested stack's logical id.
	Children map[string]*Tree
}

// Upload is a template to store at its content address before the parent is sent.
type Upload struct {
	SHA256 string
	Body   []byte
}

// Package returns the body to send to CloudFormation, with each local TemplateURL
// replaced by urlOf of the sha256 of the child as packaged (its own children replaced
// the same way), and the children to upload, deepest first. It is a pure function of the
// tree and urlOf: the same bundle gives the same bodies and addresses.
func (t *Tree) Package(urlOf func(sha256 string) string) ([]byte, []Upload, error) {
	if len(t.Children) == 0 {
		return t.Template.Body, nil, nil
	}
	var uploads []Upload
	urls := map[string]string{}
	for _, id := range slices.Sorted(maps.Keys(t.Children)) {
		body, up, err := t.Children[id].Package(urlOf)
		if err != nil {
			return nil, nil, err
		}
		sum := sha256.Sum256(body)
		sha := hex.EncodeToString(sum[:])
		uploads = append(uploads, up...)
		if !slices.ContainsFunc(uploads, func(u Upload) bool { return u.SHA256 == sha }) {
			uploads = append(uploads, Upload{SHA256: sha, Body: body})
		}
		urls[id] = urlOf(sha)
	}
	body, err := t.Template.rewriteURLs(urls)
	if err != nil {
		return nil, nil, err
	}
	return body, uploads, nil
}

// SHA256 identifies the tree's content: the sha256 of the parent as packaged with
// addresses only (templates/SHA256.json), so it changes when any template of the tree does.
func (t *Tree) SHA256() string {
	if len(t.Children) == 0 {
		return t.Template.SHA256
	}
	body, _, err := t.Package(bucket.TemplateKey)
	if err != nil {
		return t.Template.SHA256
	}
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// rewriteURLs returns the body with the TemplateURL of each nested stack in urls replaced,
// the rest of the text as written. A template parsed from a larger document (an inline
// template_body mapping) is rewritten from its tree.
func (t *Template) rewriteURLs(urls map[string]string) ([]byte, error) {
	stacks := t.NestedStacks()
	type edit struct {
		start, end int
		text       string
	}
	var edits []edit
	lines := lineStarts(t.Body)
	textual := true
	for _, ns := range stacks {
		u, ok := urls[ns.LogicalID]
		if !ok {
			continue
		}
		raw, repl := ns.Path, u
		switch ns.node.Style {
		case yaml.DoubleQuotedStyle:
			raw, repl = `"`+ns.Path+`"`, `"`+u+`"`
		case yaml.SingleQuotedStyle:
			raw, repl = `'`+ns.Path+`'`, `'`+u+`'`
		}
		start, ok := offset(t.Body, lines, ns.Line, ns.Col)
		if !ok || !strings.HasPrefix(string(t.Body[start:]), raw) {
			textual = false
			break
		}
		edits = append(edits, edit{start, start + len(raw), repl})
	}
	if !textual {
		return t.rewriteTree(urls)
	}
	slices.SortFunc(edits, func(a, b edit) int { return b.start - a.start })
	out := append([]byte(nil), t.Body...)
	for _, e := range edits {
		out = append(out[:e.start], append([]byte(e.text), out[e.end:]...)...)
	}
	return out, nil
}

// rewriteTree rewrites the URLs in a copy of the template's tree and encodes it.
func (t *Template) rewriteTree(urls map[string]string) ([]byte, error) {
	for _, ns := range t.NestedStacks() {
		if u, ok := urls[ns.LogicalID]; ok {
			ns.node.Value, ns.node.Style = u, 0
			defer func() { ns.node.Value = ns.Path }()
		}
	}
	b, err := yaml.Marshal(t.Node)
	if err != nil {
		return nil, fmt.Errorf("encode the template with its nested stacks' URLs: %w", err)
	}
	return b, nil
}

// MergeNeeds combines the needs of templates deployed together, a parent's and its nested
// stacks': one need per capability (the first), CAPABILITY_NAMED_IAM replacing
// CAPABILITY_IAM, in the order Needs gives them.
func MergeNeeds(lists ...[]Need) []Need {
	first := map[string]*Need{}
	for _, l := range lists {
		for i := range l {
			if first[l[i].Capability] == nil {
				first[l[i].Capability] = &l[i]
			}
		}
	}
	var out []Need
	switch {
	case first[CapabilityNamedIAM] != nil:
		out = append(out, *first[CapabilityNamedIAM])
	case first[CapabilityIAM] != nil:
		out = append(out, *first[CapabilityIAM])
	}
	if n := first[CapabilityAutoExpand]; n != nil {
		out = append(out, *n)
	}
	return out
}

func lineStarts(b []byte) []int {
	starts := []int{0}
	for i, c := range b {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// offset is the byte offset of a 1-based line and (rune) column.
func offset(b []byte, lines []int, line, col int) (int, bool) {
	if line < 1 || line > len(lines) || col < 1 {
		return 0, false
	}
	i := lines[line-1]
	for c := 1; c < col; c++ {
		if i >= len(b) || b[i] == '\n' {
			return 0, false
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return i, true
}
