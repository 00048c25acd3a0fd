package template

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/artifact"
	"github.com/cairn-dev/cairn/internal/bucket"
)

// Nested stacks in bundles: a template may name a file of the bundle as the TemplateURL of
// a nested stack (AWS::CloudFormation::Stack), as `aws cloudformation package` and rain
// accept. cairn checks the child as it checks any template, uploads it content-addressed
// and sends the parent with the URL rewritten (Tree.Package), so the child's content is
// part of what the parent deploys.

// NestedStack is a nested stack whose TemplateURL names a file of the bundle (or a SAM
// application whose Location does).
type NestedStack struct {
	LogicalID string
	// Type is AWS::CloudFormation::Stack or AWS::Serverless::Application; Property the one
	// naming the template (TemplateURL, Location).
	Type, Property string
	// Path is the TemplateURL as written: a path relative to the template's directory.
	Path string
	// Line and Col locate the TemplateURL's value.
	Line, Col int
	// Parameters are the nested stack's Parameters, by name: those of every branch when
	// an Fn::If chooses them.
	Parameters map[string]NestedParameter
	// Choices are the sets of parameters an Fn::If may choose (AWS::NoValue, none), each
	// passed whole; nil when the Parameters are a mapping.
	Choices []map[string]NestedParameter
	node    *yaml.Node
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
		if typ := value(res.Content[i+1], "Type"); typ != nil && nestedTypes[typ.Value] != "" {
			return true
		}
	}
	return false
}

// nestedTypes are the types of nested stacks, with the property naming their template, as
// the AWS CLI packages them.
var nestedTypes = map[string]string{"AWS::CloudFormation::Stack": "TemplateURL", "AWS::Serverless::Application": "Location"}

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
		typ := value(r, "Type")
		if typ == nil || nestedTypes[typ.Value] == "" {
			continue
		}
		prop := nestedTypes[typ.Value]
		props := value(r, "Properties")
		u := value(props, prop)
		if u == nil || u.Kind != yaml.ScalarNode || !IsLocalPath(u.Value) {
			continue
		}
		ns := NestedStack{LogicalID: e.key.Value, Type: typ.Value, Property: prop, Path: u.Value, Line: u.Line, Col: u.Column, Parameters: map[string]NestedParameter{}, node: u}
		if ps := value(props, "Parameters"); ps != nil && intrinsic(ps) == "Fn::If" {
			for _, b := range choices(ps, 0) {
				set := nestedParameters(b)
				ns.Choices = append(ns.Choices, set)
				maps.Copy(ns.Parameters, set)
			}
		} else {
			ns.Parameters = nestedParameters(ps)
		}
		out = append(out, ns)
	}
	slices.SortFunc(out, func(a, b NestedStack) int { return strings.Compare(a.LogicalID, b.LogicalID) })
	return out
}

// nestedParameters are the parameters of a mapping of them (none for another node).
func nestedParameters(ps *yaml.Node) map[string]NestedParameter {
	out := map[string]NestedParameter{}
	if ps == nil || ps.Kind != yaml.MappingNode || intrinsic(ps) != "" {
		return out
	}
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
		out[k.Value] = p
	}
	return out
}

// choices are the values an Fn::If may give, nested ones followed; AWS::NoValue is nil.
func choices(n *yaml.Node, depth int) []*yaml.Node {
	n = resolve(n)
	if isNoValue(n) {
		return []*yaml.Node{nil}
	}
	if intrinsic(n) != "Fn::If" || depth > 8 {
		return []*yaml.Node{n}
	}
	args := resolve(n.Content[1])
	if args.Kind != yaml.SequenceNode || len(args.Content) != 3 {
		return nil
	}
	return append(choices(args.Content[1], depth+1), choices(args.Content[2], depth+1)...)
}

// Tree is a template with the bundle's templates its nested stacks name, recursively,
// and the bundle's artifacts its templates name. A template nested in several places is
// one Tree, shared: the tree is a graph of the distinct templates, so walking, packaging
// and counting it costs each template once, however often it is nested.
type Tree struct {
	Template *Template
	// Path is the template's path in the bundle ("" for an inline template_body).
	Path string
	// Children are the templates of the nested stacks, by the nested stack's logical id.
	Children map[string]*Tree
	// Assets builds the bundle's artifacts that the tree's templates name (the loader sets it).
	Assets *artifact.Set
}

// Upload is a template to store at its content address before the parent is sent.
type Upload struct {
	SHA256 string
	Body   []byte
}

// Asset is an artifact to store at its content address (bucket.AssetKey) in the stack's
// region before the template naming it is sent.
type Asset struct {
	Key    string
	Source artifact.Source
	Digest artifact.Digest
}

// Packaged is a tree as CloudFormation gets it: the body to send, the nested templates to
// store first (deepest first, each once) and the artifacts (each once, by key).
type Packaged struct {
	Body      []byte
	Templates []Upload
	Assets    []Asset
}

// Source is where an artifact of the tree's template lives in the bundle: its path joined
// to the template's folder ("." for the folder itself, when the property is omitted).
func (t *Tree) Source(a Artifact) artifact.Source {
	dir := "."
	if t.Path != "" {
		dir = path.Dir(t.Path)
	}
	return artifact.Source{Path: path.Clean(path.Join(dir, a.Path)), Zip: a.Zip}
}

// Package returns the tree as CloudFormation gets it, as `aws cloudformation package`
// makes it: each local artifact replaced by its S3 location in assetsBucket (its key
// bucket.AssetKey of its digest), each local TemplateURL by urlOf of the sha256 of the
// child as packaged (its own children and artifacts replaced the same way), the rest of the
// text as written. It is a pure function of the bundle, urlOf and assetsBucket: the same
// bundle gives the same bodies and addresses.
func (t *Tree) Package(urlOf func(sha256 string) string, assetsBucket string) (*Packaged, error) {
	p := &packer{urlOf: urlOf, bucket: assetsBucket, bodies: map[*Tree][]byte{}, templates: map[string]bool{}, assets: map[string]bool{}}
	body, err := p.pack(t)
	if err != nil {
		return nil, err
	}
	p.out.Body = body
	return &p.out, nil
}

type packer struct {
	urlOf     func(string) string
	bucket    string
	bodies    map[*Tree][]byte // packaged once per distinct template
	templates map[string]bool
	assets    map[string]bool
	out       Packaged
}

func (p *packer) pack(t *Tree) ([]byte, error) {
	if body, ok := p.bodies[t]; ok {
		return body, nil
	}
	if len(t.Children) == 0 && len(t.Template.artifacts) == 0 {
		p.bodies[t] = t.Template.Body
		return t.Template.Body, nil
	}
	var edits []edit
	urls := map[string]string{}
	for _, id := range slices.Sorted(maps.Keys(t.Children)) {
		body, err := p.pack(t.Children[id])
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(body)
		sha := hex.EncodeToString(sum[:])
		if !p.templates[sha] {
			p.templates[sha] = true
			p.out.Templates = append(p.out.Templates, Upload{SHA256: sha, Body: body})
		}
		urls[id] = p.urlOf(sha)
	}
	for _, ns := range t.Template.NestedStacks() {
		if u, ok := urls[ns.LogicalID]; ok {
			edits = append(edits, edit{line: ns.Line, col: ns.Col, node: ns.node, str: u, value: &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: u}})
		}
	}
	for _, a := range t.Template.artifacts {
		if t.Assets == nil {
			return nil, fmt.Errorf("template %s names %s (%s of %s), and no bundle files are known to build it from", orRoot(t.Path), a.Path, a.Property, a.LogicalID)
		}
		src := t.Source(a)
		d, err := t.Assets.Digest(src)
		if err != nil {
			return nil, fmt.Errorf("%s of %s in %s: %w", a.Property, a.LogicalID, orRoot(t.Path), err)
		}
		key := bucket.AssetKey(d.SHA256, d.Ext)
		if !p.assets[key] {
			p.assets[key] = true
			p.out.Assets = append(p.out.Assets, Asset{Key: key, Source: src, Digest: d})
		}
		str, text, node := a.location(p.bucket, key)
		e := edit{line: a.Line, col: a.Col, node: a.node, str: str, text: text, value: node}
		if a.node == nil {
			e.parent, e.key = a.parent, a.Property[strings.LastIndex(a.Property, ".")+1:]
		}
		edits = append(edits, e)
	}
	body, err := t.Template.rewrite(edits)
	if err != nil {
		return nil, err
	}
	p.bodies[t] = body
	return body, nil
}

func orRoot(p string) string {
	if p == "" {
		return "the inline template"
	}
	return p
}

// SHA256 identifies the tree's content: the sha256 of the template as packaged with
// addresses only (templates/SHA256.json, assets/SHA256.EXT in no bucket), so it changes
// when any template or artifact of the tree does, and with nothing packaged it is the
// template's own sha256.
func (t *Tree) SHA256() string {
	if len(t.Children) == 0 && len(t.Template.artifacts) == 0 {
		return t.Template.SHA256
	}
	p, err := t.Package(bucket.TemplateKey, "")
	if err != nil {
		return t.Template.SHA256
	}
	sum := sha256.Sum256(p.Body)
	return hex.EncodeToString(sum[:])
}

// Code returns the digests of every artifact of the tree's templates, by the bundle path
// of its source (a folder's ends in /): what the plan compares with what was applied, to
// say which code changed.
func (t *Tree) Code() (map[string]string, error) {
	out := map[string]string{}
	seen := map[*Tree]bool{}
	var walk func(*Tree) error
	walk = func(n *Tree) error {
		if seen[n] {
			return nil
		}
		seen[n] = true
		for _, a := range n.Template.artifacts {
			if n.Assets == nil {
				continue
			}
			src := n.Source(a)
			d, err := n.Assets.Digest(src)
			if err != nil {
				return err
			}
			name := src.Path
			if d.Dir {
				name += "/"
			}
			out[name] = d.SHA256
		}
		for _, c := range n.Children {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(t)
}

// MaxNestedResources is CloudFormation's quota of the resources one operation on a stack
// with nested stacks may create, update or delete, its nested stacks' included: 2,500.
const MaxNestedResources = 2500

// Count returns how many nested stacks the tree makes when deployed and how many
// resources they and the root hold, each nested stack counted as often as it is nested
// (a template nested twice makes two stacks). It visits each distinct template once, and
// saturates at math.MaxInt64 rather than overflowing.
func (t *Tree) Count() (stacks, resources int64) {
	type count struct{ stacks, resources int64 }
	memo := map[*Tree]count{}
	var walk func(*Tree) count
	walk = func(n *Tree) count {
		if c, ok := memo[n]; ok {
			return c
		}
		c := count{resources: int64(n.Template.Resources)}
		for _, ch := range n.Children {
			cc := walk(ch)
			c.stacks = addSat(c.stacks, addSat(1, cc.stacks))
			c.resources = addSat(c.resources, cc.resources)
		}
		memo[n] = c
		return c
	}
	c := walk(t)
	return c.stacks, c.resources
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// edit replaces one value of a template with the string str (spelled in the value's own
// quoting) or the object text (JSON, which YAML reads too) in the text, or value in its
// tree; or adds key: value to parent when node is nil (an omitted property).
type edit struct {
	line, col int
	node      *yaml.Node
	str, text string
	value     *yaml.Node
	parent    *yaml.Node
	key       string
}

// rewrite returns the body with the edits made. Where every edit is of a value the text
// spells plainly or quoted, only those bytes change; otherwise (a value spread over lines,
// an escape, an omitted property to add) the template is encoded again from a copy of its
// tree, the template itself never changed (it is shared by stacks deploying at once).
func (t *Template) rewrite(edits []edit) ([]byte, error) {
	if len(edits) == 0 {
		return t.Body, nil
	}
	type span struct {
		start, end int
		text       string
	}
	var spans []span
	lines := lineStarts(t.Body)
	textual := true
	for _, e := range edits {
		if e.node == nil {
			textual = false
			break
		}
		if e.node.Value == "" || e.node.Tag == "!!null" {
			textual = false // an empty value has no text to replace
			break
		}
		raw, repl := e.node.Value, e.str
		switch e.node.Style {
		case yaml.DoubleQuotedStyle:
			raw, repl = `"`+e.node.Value+`"`, quote(e.str)
		case yaml.SingleQuotedStyle:
			raw, repl = `'`+e.node.Value+`'`, `'`+e.str+`'`
		case 0, yaml.TaggedStyle:
		default:
			textual = false
		}
		if e.text != "" {
			repl = e.text
		}
		start, ok := offset(t.Body, lines, e.line, e.col)
		if !textual || !ok || !strings.HasPrefix(string(t.Body[start:]), raw) {
			textual = false
			break
		}
		spans = append(spans, span{start, start + len(raw), repl})
	}
	if textual {
		// sort.Slice rather than slices.SortFunc: each instantiation of the latter for a struct
		// type adds 5-9 KB of code to the deployer, held under 15 MB (docs/policy.md).
		sort.Slice(spans, func(i, j int) bool { return spans[i].start > spans[j].start })
		out := append([]byte(nil), t.Body...)
		last := -1
		for _, s := range spans {
			if s.start == last {
				continue // the same value twice (a Fn::ForEach body's)
			}
			last = s.start
			out = append(out[:s.start], append([]byte(s.text), out[s.end:]...)...)
		}
		return out, nil
	}
	root := copyEdited(t.Node, edits, 0)
	b, err := yaml.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("encode the packaged template: %w", err)
	}
	return b, nil
}

// copyEdited copies n with the edits made: a value at an edit's position replaced, an
// omitted property added to its mapping. Positions, not pointers, find them, so the
// copies Fn::ForEach expansion makes are edited as their originals.
func copyEdited(n *yaml.Node, edits []edit, depth int) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		for _, e := range edits {
			if e.node == n || e.node != nil && e.line == n.Line && e.col == n.Column && e.node.Value == n.Value && e.node.Tag == n.Tag {
				if n.Anchor == "" {
					return e.value
				}
				// An anchored value (reached through an alias too) keeps its anchor, so
				// the aliases still name it.
				v := *e.value
				v.Anchor = n.Anchor
				return &v
			}
		}
	}
	cp := *n
	if n.Kind == yaml.AliasNode {
		cp.Alias = copyEdited(n.Alias, edits, depth+1)
		return &cp
	}
	cp.Content = make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		cp.Content[i] = copyEdited(c, edits, depth+1)
	}
	if n.Kind == yaml.MappingNode {
		for _, e := range edits {
			if e.node == nil && e.parent == n {
				cp.Content = append(cp.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: e.key}, e.value)
			}
		}
	}
	return &cp
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
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
