// Package yamlnode parses a YAML document into the node tree of gopkg.in/yaml.v3, as
// yaml.Unmarshal into a yaml.Node does, faster for the plain block style configs are
// written in.
//
// yaml.v3 builds its tree from a port of libyaml's scanner, which reads a large config
// (10,000 stacks, 1.8 MB) at about 20 MB/s and allocates half as much again as the tree
// it returns. Parse reads the common subset of YAML directly: block mappings and
// sequences, one-line plain and quoted scalars without escapes, and one-line flow
// sequences and mappings of those, in ASCII. Anything else (anchors and aliases, tags,
// block scalars, multi-line scalars, escapes, tabs, non-ASCII text outside comments,
// several documents, and every error) is handed to yaml.v3 whole, so the tree, its
// positions and the error messages are always yaml.v3's: FuzzParseAsYAMLv3 and
// TestParseGeneratedDocuments check that both give the same tree.
//
// Parse leaves a document with comments to yaml.v3, which places them in the tree;
// ParseWithoutComments reads them on the fast path and leaves them out, for callers that
// never read a node's comments.
package yamlnode

import (
	"bytes"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Parse returns the document node of data, as yaml.Unmarshal(data, &node) does.
func Parse(data []byte) (*yaml.Node, error) { return parse(data, false) }

// ParseWithoutComments is Parse for a caller that reads no comments: the tree may lack
// the document's comments (HeadComment, LineComment and FootComment empty); everything
// else (nodes, positions, errors) is yaml.v3's.
func ParseWithoutComments(data []byte) (*yaml.Node, error) { return parse(data, true) }

func parse(data []byte, dropComments bool) (*yaml.Node, error) {
	if doc, ok := parseBlock(data, dropComments); ok {
		return doc, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	return &doc, nil
}

// maxDepth bounds the nesting the parser follows (it recurses): a deeper document is
// yaml.v3's, which refuses nesting past 10,000.
const maxDepth = 1000

// deeper enters a nested collection, reporting false past maxDepth.
func (p *parser) deeper() bool {
	p.depth++
	if p.depth > maxDepth {
		p.depth--
		return false
	}
	return true
}

// maxKey is below libyaml's limit on an implicit key (1024 characters from its start to
// its ':'): a longer key is yaml.v3's to refuse.
const maxKey = 1000

// parser reads the block subset. Any method returning false means "not in the subset":
// Parse then hands the whole document to yaml.v3.
type parser struct {
	s         string // the document
	i         int    // the next byte
	line      int    // 1-based line of i
	lineStart int    // index of the first byte of line

	// nodes and ptrs are slabs the tree is cut from: a config of 10,000 stacks has
	// ~150,000 nodes, allocated in a few hundred blocks instead of one by one.
	nodes []yaml.Node
	ptrs  []*yaml.Node
	// stack collects the children of the collections being read.
	stack []*yaml.Node
	// tags caches the tag yaml.v3 resolves a plain scalar that may not be a string to.
	tags  map[string]string
	depth int // collections being read, nested
	// bad: a comment holds a character yaml.v3 reads otherwise (a line break other
	// than \n, a control character, invalid UTF-8).
	bad bool
}

func parseBlock(data []byte, dropComments bool) (*yaml.Node, bool) {
	if !dropComments && bytes.IndexByte(data, '#') >= 0 {
		return nil, false // comments: yaml.v3's to place in the tree
	}
	p := &parser{s: string(data), line: 1}
	p.skipBlankLines()
	if p.i >= len(p.s) || p.col() != 1 {
		return nil, false // empty, or an indented root: yaml.v3's
	}
	doc := p.node(yaml.DocumentNode, "", "", 0)
	root, ok := p.block(0)
	if !ok {
		return nil, false
	}
	if root.Kind != yaml.MappingNode && root.Kind != yaml.SequenceNode {
		return nil, false // a scalar document
	}
	p.skipBlankLines()
	if p.i < len(p.s) {
		return nil, false // text left at a lesser indentation than the root's: an error
	}
	doc.Content = p.children([]*yaml.Node{root})
	return doc, !p.bad
}

// notText marks the bytes the parser leaves to yaml.v3 wherever they stand outside a
// comment: tabs, carriage returns and other control characters, and non-ASCII text
// (yaml.v3 counts columns in characters).
var notText = func() (t [256]bool) {
	for c := range t {
		t[c] = c != '\n' && (c < 0x20 || c >= 0x7f)
	}
	return t
}()

func (p *parser) col() int { return p.i - p.lineStart + 1 }

// node cuts a node from the slab, at the current position.
func (p *parser) node(kind yaml.Kind, tag, value string, style yaml.Style) *yaml.Node {
	if len(p.nodes) == cap(p.nodes) {
		p.nodes = make([]yaml.Node, 0, 1024)
	}
	// Set field by field in the zeroed slot: copying a whole Node in costs a write
	// barrier over all its pointers while the collector runs.
	p.nodes = p.nodes[:len(p.nodes)+1]
	n := &p.nodes[len(p.nodes)-1]
	n.Kind, n.Style, n.Tag, n.Value, n.Line, n.Column = kind, style, tag, value, p.line, p.col()
	return n
}

// children returns an exactly sized Content, cut from the slab with no room to grow
// into its neighbour's.
func (p *parser) children(c []*yaml.Node) []*yaml.Node {
	if len(c) == 0 {
		return nil
	}
	if len(c) > cap(p.ptrs)-len(p.ptrs) {
		p.ptrs = make([]*yaml.Node, 0, max(4096, len(c)))
	}
	start := len(p.ptrs)
	p.ptrs = append(p.ptrs, c...)
	return p.ptrs[start:len(p.ptrs):len(p.ptrs)]
}

// skipBlankLines moves to the first non-space of the next line holding anything but a
// comment; at the end of a line it moves on.
func (p *parser) skipBlankLines() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ':
			p.i++
		case '#': // after spaces only, or at a line's start: a comment
			p.skipComment()
		case '\n':
			p.i++
			p.line++
			p.lineStart = p.i
		default:
			return
		}
	}
}

func (p *parser) skipSpaces() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

// atLineEnd reports whether only spaces, and a comment, are left on the line.
func (p *parser) atLineEnd() bool {
	p.skipSpaces()
	if p.comment() {
		p.skipComment()
	}
	return p.i >= len(p.s) || p.s[p.i] == '\n'
}

// comment reports whether a comment starts at i: a '#' after a space.
func (p *parser) comment() bool {
	return p.i > 0 && p.i < len(p.s) && p.s[p.i] == '#' && p.s[p.i-1] == ' '
}

// skipComment moves to the end of the line, noting a character that would make yaml.v3
// read the comment otherwise, or refuse it.
func (p *parser) skipComment() {
	for p.i < len(p.s) && p.s[p.i] != '\n' {
		c := p.s[p.i]
		if !notText[c] {
			p.i++
			continue
		}
		r, n := utf8.DecodeRuneInString(p.s[p.i:])
		if c < 0x80 || r == utf8.RuneError || r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xFEFF ||
			r < 0xA0 || 0xD7FF < r && r < 0xE000 || 0xFFFD < r && r < 0x10000 {
			p.bad = true
		}
		p.i += n
	}
}

// entry reports whether a block sequence entry ("- ") starts at i.
func (p *parser) entry() bool {
	return p.i < len(p.s) && p.s[p.i] == '-' && (p.i+1 == len(p.s) || p.s[p.i+1] == ' ' || p.s[p.i+1] == '\n')
}

// block reads the node starting at i, whose column (0-based) is its indentation, and
// the lines after it that belong to it; parent is the indentation of the collection
// holding it (0 for the root, which must be a collection).
func (p *parser) block(parent int) (*yaml.Node, bool) {
	if !p.deeper() {
		return nil, false
	}
	defer func() { p.depth-- }()
	indent := p.col() - 1
	if p.entry() {
		return p.sequence(indent)
	}
	if p.keyAhead() {
		return p.mapping(indent)
	}
	n, ok := p.inline(false)
	if !ok || !p.atLineEnd() {
		return nil, false
	}
	return n, p.endsAt(parent)
}

// endsAt reports whether the lines after a one-line value leave the collection at
// indentation parent, or start its next entry: a deeper line would continue the value.
func (p *parser) endsAt(parent int) bool {
	p.skipBlankLines()
	return p.i >= len(p.s) || p.col()-1 <= parent
}

// keyAhead reports whether the line from i holds an implicit mapping key: a plain or
// quoted scalar followed by ": " or a ':' ending the line.
func (p *parser) keyAhead() bool {
	save, line, ls := p.i, p.line, p.lineStart
	defer func() { p.i, p.line, p.lineStart = save, line, ls }()
	switch c := p.s[p.i]; c {
	case '"', '\'':
		if _, ok := p.quoted(); !ok {
			return false
		}
		p.skipSpaces()
		return p.mappingValue()
	case '[', '{':
		return false
	}
	_, ok := p.plainKey()
	return ok
}

// mappingValue reports whether a ':' that starts a value is at i.
func (p *parser) mappingValue() bool {
	return p.i < len(p.s) && p.s[p.i] == ':' && (p.i+1 == len(p.s) || p.s[p.i+1] == ' ' || p.s[p.i+1] == '\n')
}

// mapping reads a block mapping whose keys are at column indent+1.
func (p *parser) mapping(indent int) (*yaml.Node, bool) {
	m := p.node(yaml.MappingNode, "!!map", "", 0)
	mark := len(p.stack)
	defer func() { p.stack = p.stack[:mark] }()
	for {
		k, ok := p.key()
		if !ok {
			return nil, false
		}
		p.i++ // the ':'
		var v *yaml.Node
		if p.atLineEnd() {
			// The value is on the lines below: deeper, or a sequence at the key's indentation.
			p.skipBlankLines()
			if p.i >= len(p.s) {
				return nil, false // an empty value: yaml.v3's
			}
			switch c := p.col() - 1; {
			case c > indent:
				v, ok = p.block(indent)
			case c == indent && p.entry():
				v, ok = p.sequence(indent)
			default:
				return nil, false // an empty value
			}
		} else {
			if p.entry() {
				return nil, false // "key: - x"
			}
			v, ok = p.inline(false)
			ok = ok && p.atLineEnd() && p.endsAt(indent)
		}
		if !ok {
			return nil, false
		}
		p.stack = append(p.stack, k, v)
		if p.i >= len(p.s) || p.col()-1 < indent {
			break
		}
		if p.col()-1 > indent || p.entry() {
			return nil, false
		}
	}
	m.Content = p.children(p.stack[mark:])
	return m, true
}

// key reads a mapping key and stops at its ':'.
func (p *parser) key() (*yaml.Node, bool) {
	if c := p.s[p.i]; c == '"' || c == '\'' {
		start := p.i
		k, ok := p.quoted()
		p.skipSpaces()
		return k, ok && p.mappingValue() && p.i-start <= maxKey
	}
	line, col := p.line, p.col()
	v, ok := p.plainKey()
	if !ok {
		return nil, false
	}
	k := p.scalar(v)
	k.Line, k.Column = line, col
	p.i += len(v)
	p.skipSpaces()
	return k, p.mappingValue()
}

// plainKey returns the plain scalar from i that ": " or a final ':' ends, without moving.
func (p *parser) plainKey() (string, bool) {
	if !p.plainStart(false) {
		return "", false
	}
	j := p.i
	for j < len(p.s) && p.s[j] != '\n' {
		if p.s[j] == ':' && (j+1 == len(p.s) || p.s[j+1] == ' ' || p.s[j+1] == '\n') {
			v := trimRight(p.s[p.i:j])
			return v, j-p.i <= maxKey && v != ""
		}
		if p.s[j] == '#' && p.s[j-1] == ' ' || notText[p.s[j]] {
			return "", false // a comment before any ':', or a character for yaml.v3
		}
		j++
	}
	return "", false
}

func trimRight(s string) string {
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return s
}

// plainStart reports whether a plain scalar may start at i: not with an indicator, but
// with '-', ':' or '?' followed by a character that is not a space.
func (p *parser) plainStart(flow bool) bool {
	switch c := p.s[p.i]; c {
	case '-':
		if p.i+1 < len(p.s) && p.s[p.i+1] != ' ' && p.s[p.i+1] != '\n' && !(flow && isFlowIndicator(p.s[p.i+1])) {
			return p.i+2 >= len(p.s) || p.s[p.i:p.i+3] != "---" || p.col() != 1
		}
		return false
	case '.':
		return p.col() != 1 || p.i+2 >= len(p.s) || p.s[p.i:p.i+3] != "..." // a document end
	case '?', ':', ',', '[', ']', '{', '}', '"', '\'', ' ', '\n', '#',
		'&', '*', '!', '|', '>', '%', '@', '`': // anchors, aliases, tags, block scalars...
		return false
	}
	return !notText[p.s[p.i]]
}

func isFlowIndicator(c byte) bool {
	return c == ',' || c == '[' || c == ']' || c == '{' || c == '}'
}

// sequence reads a block sequence whose entries' dashes are at column indent+1.
func (p *parser) sequence(indent int) (*yaml.Node, bool) {
	seq := p.node(yaml.SequenceNode, "!!seq", "", 0)
	mark := len(p.stack)
	defer func() { p.stack = p.stack[:mark] }()
	for {
		p.i++ // the '-'
		if p.atLineEnd() {
			return nil, false // an entry on the lines below, or an empty one: yaml.v3's
		}
		v, ok := p.block(indent)
		if !ok {
			return nil, false
		}
		p.stack = append(p.stack, v)
		if p.i >= len(p.s) || p.col()-1 < indent {
			break
		}
		if p.col()-1 > indent {
			return nil, false
		}
		if !p.entry() {
			break // a key of the mapping holding the sequence at its own indentation
		}
	}
	seq.Content = p.children(p.stack[mark:])
	return seq, true
}

// inline reads a value that ends on its line: a scalar or a flow collection.
func (p *parser) inline(flow bool) (*yaml.Node, bool) {
	switch p.s[p.i] {
	case '"', '\'':
		return p.quoted()
	case '[':
		return p.flow(yaml.SequenceNode)
	case '{':
		return p.flow(yaml.MappingNode)
	}
	if !p.plainStart(flow) {
		return nil, false
	}
	line, col := p.line, p.col()
	j := p.i
	for j < len(p.s) && p.s[j] != '\n' {
		c := p.s[j]
		if c == ':' && (j+1 == len(p.s) || p.s[j+1] == ' ' || p.s[j+1] == '\n' || flow && isFlowIndicator(p.s[j+1])) {
			if !flow {
				return nil, false // "a: b: c"
			}
			break
		}
		if flow && isFlowIndicator(c) || c == '#' && p.s[j-1] == ' ' {
			break // a comment ends the scalar
		}
		if notText[c] {
			return nil, false
		}
		j++
	}
	v := trimRight(p.s[p.i:j])
	n := p.scalar(v)
	n.Line, n.Column = line, col
	p.i += len(v)
	return n, n != nil
}

// scalar returns the node of plain scalar v, with the tag yaml.v3 resolves it to.
func (p *parser) scalar(v string) *yaml.Node {
	tag := "!!str"
	switch v[0] {
	case 't', 'T', 'f', 'F':
		switch v {
		case "true", "True", "TRUE", "false", "False", "FALSE":
			tag = "!!bool"
		}
	case 'n', 'N', '~':
		switch v {
		case "~", "null", "Null", "NULL":
			tag = "!!null"
		}
	case '<':
		if v == "<<" {
			tag = "!!merge"
		}
	case '+', '-', '.', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		tag = p.resolve(v)
	}
	return p.node(yaml.ScalarNode, tag, v, 0)
}

// resolve returns the tag yaml.v3 gives plain scalar v, which may be a number or a
// timestamp: yaml.v3 is asked, once per value.
func (p *parser) resolve(v string) string {
	if tag, ok := p.tags[v]; ok {
		return tag
	}
	tag := "!!str"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(v), &doc); err == nil && len(doc.Content) == 1 {
		if n := doc.Content[0]; n.Kind == yaml.ScalarNode && n.Value == v {
			tag = n.Tag
		}
	}
	if p.tags == nil {
		p.tags = map[string]string{}
	}
	p.tags[v] = tag
	return tag
}

// quoted reads a one-line quoted scalar without escapes.
func (p *parser) quoted() (*yaml.Node, bool) {
	q := p.s[p.i]
	j := p.i + 1
	for j < len(p.s) && p.s[j] != q {
		if c := p.s[j]; c == '\n' || notText[c] || c == '\\' && q == '"' {
			return nil, false // on several lines, a character for yaml.v3, or an escape
		}
		j++
	}
	if j == len(p.s) || q == '\'' && j+1 < len(p.s) && p.s[j+1] == '\'' {
		return nil, false // not closed, or a '' escape
	}
	style := yaml.DoubleQuotedStyle
	if q == '\'' {
		style = yaml.SingleQuotedStyle
	}
	n := p.node(yaml.ScalarNode, "!!str", p.s[p.i+1:j], style)
	p.i = j + 1
	return n, true
}

// flow reads a one-line flow collection of scalars and flow collections: [a, b] when
// kind is a SequenceNode, {k: v, ...} when it is a MappingNode.
func (p *parser) flow(kind yaml.Kind) (*yaml.Node, bool) {
	if !p.deeper() {
		return nil, false
	}
	defer func() { p.depth-- }()
	tag, end := "!!seq", byte(']')
	if kind == yaml.MappingNode {
		tag, end = "!!map", '}'
	}
	n := p.node(kind, tag, "", yaml.FlowStyle)
	mark := len(p.stack)
	defer func() { p.stack = p.stack[:mark] }()
	p.i++ // '[' or '{'
	p.skipSpaces()
	for p.i < len(p.s) && p.s[p.i] != end {
		if kind == yaml.MappingNode {
			k, ok := p.flowKey()
			if !ok {
				return nil, false
			}
			p.stack = append(p.stack, k)
		}
		v, ok := p.flowItem()
		if !ok {
			return nil, false
		}
		p.stack = append(p.stack, v)
		if !p.flowNext(end) {
			return nil, false
		}
	}
	if p.i >= len(p.s) {
		return nil, false
	}
	p.i++ // ']' or '}'
	n.Content = p.children(p.stack[mark:])
	return n, true
}

// flowKey reads a key of a flow mapping and the ": " after it.
func (p *parser) flowKey() (*yaml.Node, bool) {
	start := p.i
	k, ok := p.flowItem()
	if !ok || k.Kind != yaml.ScalarNode {
		return nil, false
	}
	p.skipSpaces()
	if !p.mappingValue() || p.i-start > maxKey {
		return nil, false // "{a}", "{a:b}", "{"a":b}" or a long key: yaml.v3's
	}
	p.i++
	p.skipSpaces()
	return k, true
}

// flowItem reads one entry of a flow collection.
func (p *parser) flowItem() (*yaml.Node, bool) {
	if p.i >= len(p.s) || p.s[p.i] == '\n' {
		return nil, false
	}
	return p.inline(true)
}

// flowNext moves past the ", " after an entry, or to the closing bracket; a trailing
// comma or a pair in a sequence is yaml.v3's.
func (p *parser) flowNext(end byte) bool {
	p.skipSpaces()
	if p.i >= len(p.s) {
		return false
	}
	switch p.s[p.i] {
	case end:
		return true
	case ',':
		p.i++
		p.skipSpaces()
		return p.i < len(p.s) && p.s[p.i] != end && p.s[p.i] != ',' && p.s[p.i] != '\n'
	}
	return false
}
