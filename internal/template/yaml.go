package template

import (
	"fmt"
	"strings"

	"github.com/aws-cloudformation/rain/cft/parse"
	"gopkg.in/yaml.v3"
)

// Alias limits. YAML aliases repeat a node without copying it, so a small document can
// stand for an enormous one (the "billion laughs"); CloudFormation would expand it. A
// template's aliases may multiply its size by at most maxAliasGrowth (plus a little room
// for small templates), which ordinary uses of anchors stay far below.
const (
	maxAliasGrowth = 10
	aliasSlack     = 10_000
	maxDepth       = 1_000
)

// checkAliases refuses a tree whose aliases expand it beyond the limits, or nested deeper
// than maxDepth, without expanding it: the expanded size of each node is computed once.
func checkAliases(doc *yaml.Node) error {
	literal := 0
	aliases := false
	var count func(n *yaml.Node, depth int) error
	count = func(n *yaml.Node, depth int) error {
		if depth > maxDepth {
			return fmt.Errorf("line %d: the template nests more than %d levels deep", n.Line, maxDepth)
		}
		literal++
		if n.Kind == yaml.AliasNode {
			aliases = true
		}
		for _, c := range n.Content {
			if err := count(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := count(doc, 0); err != nil {
		return err
	}
	if !aliases {
		return nil
	}
	limit := maxAliasGrowth*literal + aliasSlack
	sizes := map[*yaml.Node]int{}
	var size func(n *yaml.Node, depth int) int
	size = func(n *yaml.Node, depth int) int {
		if s, ok := sizes[n]; ok {
			return s
		}
		if depth > maxDepth {
			return limit + 1 // an alias loop, or nesting through aliases
		}
		s := 1
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			s += size(n.Alias, depth+1)
		}
		for _, c := range n.Content {
			if s > limit {
				break
			}
			s += size(c, depth+1)
		}
		s = min(s, limit+1)
		sizes[n] = s
		return s
	}
	if size(doc, 0) > limit {
		line := 1
		for n := range sizes {
			if n.Kind == yaml.AliasNode && sizes[n] > limit/maxAliasGrowth && (line == 1 || n.Line < line) {
				line = n.Line
			}
		}
		return fmt.Errorf("line %d: the template's YAML aliases expand it to more than %d nodes (%d written): CloudFormation would expand every alias; repeat less through anchors", line, limit, literal)
	}
	return nil
}

// normalize turns short-form intrinsics (!Ref, !GetAtt A.B, ...) into their long form with
// rain's parser, keeping the positions of the nodes it rewrites, so errors still point at
// the template's text.
func normalize(doc *yaml.Node) (err error) {
	type pos struct {
		n         *yaml.Node
		line, col int
		getAtt    bool
	}
	var saved []pos
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
			p := pos{n, n.Line, n.Column, n.Tag == "!GetAtt" && n.Kind == yaml.ScalarNode}
			if p.getAtt && n.Style&^yaml.TaggedStyle == 0 {
				p.col += len(n.Tag) + 1 // the value after "!GetAtt "
			}
			saved = append(saved, p)
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if v := n.Content[i+1]; n.Content[i].Value == "Fn::GetAtt" && v.Kind == yaml.ScalarNode {
					saved = append(saved, pos{v, v.Line, v.Column, true})
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(doc)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r) // rain indexes values it assumes are not empty
		}
	}()
	if err := parse.NormalizeNode(doc); err != nil {
		return err
	}
	for _, p := range saved {
		p.n.Line, p.n.Column = p.line, p.col
		for _, c := range p.n.Content {
			if c.Line == 0 {
				c.Line, c.Column = p.line, p.col
			}
			if p.getAtt && c.Kind == yaml.SequenceNode {
				// !GetAtt Res.Attr became [Res, Attr]: point Attr after the dot.
				for i, cc := range c.Content {
					cc.Line, cc.Column = p.line, p.col
					if i == 1 && len(c.Content[0].Value) > 0 {
						cc.Column = p.col + len(c.Content[0].Value) + 1
					}
				}
			}
		}
		if p.getAtt && p.n.Kind == yaml.SequenceNode {
			for i, cc := range p.n.Content {
				cc.Line, cc.Column = p.line, p.col
				if i == 1 {
					cc.Column = p.col + len(p.n.Content[0].Value) + 1
				}
			}
		}
	}
	fillPositions(doc, 1, 1, 0)
	return nil
}

// fillPositions gives the nodes the rewrite made without a position (!Ref x in a list
// becomes a new {Ref: x}) the position of their first part that has one (x), or else of
// the key holding them, or of their parent.
func fillPositions(n *yaml.Node, line, col, depth int) {
	if n.Line == 0 {
		if l := firstPosition(n, 0); l != nil {
			n.Line, n.Column = l.Line, l.Column
		} else {
			n.Line, n.Column = line, col
		}
	}
	if depth > maxDepth {
		return
	}
	for i, c := range n.Content {
		l, cl := n.Line, n.Column
		if n.Kind == yaml.MappingNode && i%2 == 1 && n.Content[i-1].Line > 0 {
			l, cl = n.Content[i-1].Line, n.Content[i-1].Column
		}
		if c.Kind != yaml.AliasNode {
			fillPositions(c, l, cl, depth+1)
		}
	}
}

func firstPosition(n *yaml.Node, depth int) *yaml.Node {
	if n.Line > 0 {
		return n
	}
	if depth < 8 {
		for _, c := range n.Content {
			if l := firstPosition(c, depth+1); l != nil {
				return l
			}
		}
	}
	return nil
}
