package template

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Which values of a template are secret is data flow, not a pattern: a value is secret when
// a secret reaches it, through any number of resources, nested stacks and outputs. The
// sources are the template's NoEcho parameters, the parameters the caller knows receive a
// secret (a SecureString, another stack's secret output: Sources.Parameters), dynamic
// references to a SecureString or a Secrets Manager secret, and imports of secret exports
// (Sources.Import). Every intrinsic carries what it reads to the value it computes (Ref,
// Fn::GetAtt, Fn::Sub, Fn::Join, Fn::If, Fn::Select, Fn::FindInMap, ...: a reference
// anywhere within a value makes it read); a property carries it to its resource, and a
// resource fed a secret makes every attribute secret (Fn::GetAtt, ${R.Attr}), since
// CloudFormation may return the secret as any of them. A Ref of a resource is its physical
// id, which CloudFormation shows to anyone who may list the stack's resources: it is not
// secret. A nested stack of the bundle is analysed with its parent: a value passed to its
// parameter P reaches only P, and its output X reaches Fn::GetAtt Child.Outputs.X.
//
// The analysis is a graph of the tree's parameters, properties, resources, attributes and
// outputs, built in one walk and searched once from the sources: linear in the size of the
// tree (a template nested in several places is analysed in each, up to maxInstances).

// Sources are what reaches a template from outside it that is secret.
type Sources struct {
	// Parameters are the parameters known to receive a secret, beyond the NoEcho ones.
	Parameters map[string]bool
	// Import reports whether the export a Fn::ImportValue reads is secret; name is "" when
	// the template computes the name (it may be any export). nil: none is.
	Import func(name string) bool
	// StackName is the name the template is deployed as: what ${AWS::StackName} is in
	// the names of its exports.
	StackName string
}

// Secrecy is where a template's values are secret.
type Secrecy struct {
	// Properties lists, per resource (logical id) of the template itself, the paths of its
	// properties whose values are secret, as drift results name them (/Name,
	// /Config/Password, /Tags/0/Value): the deepest path whose value is computed (an
	// intrinsic, or a string holding a dynamic reference).
	Properties map[string][]string
	// Outputs are the template's outputs whose values are secret, sorted.
	Outputs []string
	// Exports are the names of the exports of secret outputs, of the template and of
	// those it nests, sorted: names, or patterns in which ${AWS::Region} stands for any
	// region (ExportMatches); Unnamed is set when one's name is not known (it reads a
	// parameter, or a nested stack's name, which CloudFormation chooses).
	Exports []string
	Unnamed bool
}

// Secrecy analyses the template alone (its nested stacks' templates unknown: a nested stack
// fed a secret makes all its outputs secret).
func (t *Template) Secrecy(in Sources) Secrecy { return (&Tree{Template: t}).Secrecy(in) }

// Secrecy analyses the tree: the template and the bundle's templates it nests.
func (t *Tree) Secrecy(in Sources) Secrecy {
	g := &flow{in: in}
	root := g.instance(t, 0)
	for name := range in.Parameters {
		if n, ok := root.params[name]; ok {
			g.source(n)
		}
	}
	g.search()
	out := Secrecy{Properties: map[string][]string{}}
	for _, p := range root.props {
		if g.secret[p.node] {
			out.Properties[p.resource] = append(out.Properties[p.resource], p.path)
		}
	}
	for name, n := range root.outputs {
		if g.secret[n] {
			out.Outputs = append(out.Outputs, name)
		}
	}
	slices.Sort(out.Outputs)
	for _, e := range g.exports {
		if !g.secret[e.output] {
			continue
		}
		if name, ok := exportName(e.name, in.StackName, e.root); ok {
			out.Exports = append(out.Exports, name)
		} else {
			out.Unnamed = true
		}
	}
	slices.Sort(out.Exports)
	out.Exports = slices.Compact(out.Exports)
	return out
}

// export is an output of the tree that is exported, and the node of its name.
type export struct {
	output int32
	name   *yaml.Node
	root   bool // of the tree's own template, not of one it nests
}

// exportName is the name an export's name node gives, when it is known: literal, or a
// Fn::Sub string whose only variables are ${AWS::Region} (kept as written) and, for the
// root template, ${AWS::StackName}.
func exportName(n *yaml.Node, stackName string, root bool) (string, bool) {
	n = resolve(n)
	switch {
	case n == nil:
		return "", false
	case n.Kind == yaml.ScalarNode:
		return n.Value, true
	case intrinsic(n) == "Fn::Sub" && resolve(n.Content[1]).Kind == yaml.ScalarNode:
		s := resolve(n.Content[1]).Value
		if root && stackName != "" {
			s = strings.ReplaceAll(s, "${AWS::StackName}", stackName)
		}
		if strings.Contains(strings.ReplaceAll(s, "${AWS::Region}", ""), "${") {
			return "", false
		}
		return s, true
	}
	return "", false
}

// Reads lists, for each of params, the resources of t whose properties read it directly
// (by Ref or a Fn::Sub variable, anywhere within them), sorted; a parameter no resource
// reads is left out.
func (t *Template) Reads(params []string) map[string][]string {
	g := &flow{}
	root := g.instance(&Tree{Template: t}, 0)
	resourceOf := map[int32]string{}
	for _, p := range root.props {
		resourceOf[p.node] = p.resource
	}
	out := map[string][]string{}
	for _, name := range params {
		n, ok := root.params[name]
		if !ok {
			continue
		}
		var res []string
		for _, s := range g.succ[n] {
			if r, ok := resourceOf[s]; ok {
				res = append(res, r)
			}
		}
		slices.Sort(res)
		if res = slices.Compact(res); len(res) > 0 {
			out[name] = res
		}
	}
	return out
}

// secureDynamicRE matches a dynamic reference to a secret: {{resolve:ssm-secure:...}} or
// {{resolve:secretsmanager:...}}.
var secureDynamicRE = regexp.MustCompile(`\{\{resolve:(ssm-secure|secretsmanager):`)

// subVarRE matches the ${NAME} and ${NAME.Attr} variables of a Fn::Sub string (not the
// ${!Literal} escapes).
var subVarRE = regexp.MustCompile(`\$\{([^!}][^}]*)\}`)

// maxNesting bounds how deep nested templates are analysed, and maxInstances how many
// times in all (a template nested twice in a template nested twice ... is analysed in
// each place): a nested stack beyond either is not analysed, and all its outputs count
// as secret.
const (
	maxNesting   = 16
	maxInstances = 1000
)

// flow is the data-flow graph: node n's secret reaches every node of succ[n].
type flow struct {
	in        Sources
	exports   []export
	instances int
	succ      [][]int32
	secret    []bool
	queue     []int32
}

func (g *flow) node() int32 {
	g.succ = append(g.succ, nil)
	g.secret = append(g.secret, false)
	return int32(len(g.succ) - 1)
}

func (g *flow) edge(from, to int32) { g.succ[from] = append(g.succ[from], to) }

func (g *flow) source(n int32) {
	if !g.secret[n] {
		g.secret[n] = true
		g.queue = append(g.queue, n)
	}
}

// search marks secret every node a source reaches.
func (g *flow) search() {
	for len(g.queue) > 0 {
		n := g.queue[len(g.queue)-1]
		g.queue = g.queue[:len(g.queue)-1]
		for _, s := range g.succ[n] {
			g.source(s)
		}
	}
}

// instance is one template of the tree, where it is nested, in the graph.
type instance struct {
	g        *flow
	params   map[string]int32
	outputs  map[string]int32
	props    []prop
	resource map[string]int32 // a resource fed a secret: every attribute is
	attrs    map[string]int32 // one attribute ("R\x00Attr") of a resource
	anyAttr  map[string]int32 // some attribute of the resource (a computed attribute name)
}

// prop is a property value of a resource of the template.
type prop struct {
	resource, path string
	node           int32
}

func (x *instance) res(id string) int32 {
	n, ok := x.resource[id]
	if !ok {
		n = x.g.node()
		x.resource[id] = n
	}
	return n
}

func (x *instance) any(id string) int32 {
	n, ok := x.anyAttr[id]
	if !ok {
		n = x.g.node()
		x.anyAttr[id] = n
		x.g.edge(x.res(id), n)
	}
	return n
}

func (x *instance) attr(id, attr string) int32 {
	k := id + "\x00" + attr
	n, ok := x.attrs[k]
	if !ok {
		n = x.g.node()
		x.attrs[k] = n
		x.g.edge(x.res(id), n)
		x.g.edge(n, x.any(id))
	}
	return n
}

// instance adds t's templates to the graph, its nested templates depth+1 deep.
func (g *flow) instance(t *Tree, depth int) *instance {
	g.instances++
	x := &instance{g: g, params: map[string]int32{}, outputs: map[string]int32{}, resource: map[string]int32{}, attrs: map[string]int32{}, anyAttr: map[string]int32{}}
	for name, p := range t.Template.Parameters {
		n := g.node()
		x.params[name] = n
		if p.NoEcho {
			g.source(n)
		}
	}
	if res := value(t.Template.Node, "Resources"); res != nil && res.Kind == yaml.MappingNode {
		c := &checker{t: t.Template, resources: map[string]*resource{}, conditions: map[string]bool{}, mappings: map[string]bool{}}
		for _, e := range c.expand(res, "") {
			id := e.key.Value
			var child *instance
			switch ct := t.Children[id]; {
			case ct == nil:
			case depth >= maxNesting || g.instances >= maxInstances:
				g.source(x.res(id)) // not analysed: every output may be secret
			default:
				child = g.instance(ct, depth+1)
				for name, n := range child.outputs {
					g.edge(n, x.attr(id, "Outputs."+name))
				}
			}
			x.properties(id, value(resolve(e.value), "Properties"), "", child)
		}
	}
	if outs := value(t.Template.Node, "Outputs"); outs != nil && outs.Kind == yaml.MappingNode {
		c := &checker{t: t.Template, resources: map[string]*resource{}, conditions: map[string]bool{}, mappings: map[string]bool{}}
		for _, e := range c.expand(outs, "") {
			n := g.node()
			x.outputs[e.key.Value] = n
			x.reads(value(resolve(e.value), "Value"), n)
			if name := value(value(resolve(e.value), "Export"), "Name"); name != nil {
				g.exports = append(g.exports, export{output: n, name: name, root: depth == 0})
			}
		}
	}
	return x
}

// properties adds the values under n, a property of resource id at path, to the graph.
// The values of a nested stack's Parameters reach its template's parameters (child).
func (x *instance) properties(id string, n *yaml.Node, path string, child *instance) {
	n = resolve(n)
	switch {
	case n == nil:
	case n.Kind == yaml.MappingNode && intrinsic(n) == "":
		for i := 0; i+1 < len(n.Content); i += 2 {
			x.properties(id, n.Content[i+1], path+"/"+n.Content[i].Value, child)
		}
	case n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			x.properties(id, c, path+"/"+strconv.Itoa(i), child)
		}
	case n.Kind == yaml.ScalarNode && !secureDynamicRE.MatchString(n.Value):
		// A literal: it reads nothing.
	default:
		p := x.g.node()
		x.props = append(x.props, prop{resource: id, path: path, node: p})
		x.reads(n, p)
		to := x.res(id)
		if name, ok := strings.CutPrefix(path, "/Parameters/"); ok && child != nil && !strings.Contains(name, "/") {
			to, ok = child.params[name]
			if !ok {
				return // the child does not declare it: CloudFormation refuses it
			}
		}
		x.g.edge(p, to)
	}
}

// reads adds an edge to into from everything value n reads.
func (x *instance) reads(n *yaml.Node, into int32) {
	n = resolve(n)
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if secureDynamicRE.MatchString(n.Value) {
			x.g.source(into)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			x.reads(c, into)
		}
	case yaml.MappingNode:
		switch intrinsic(n) {
		case "Ref":
			if v := resolve(n.Content[1]); v.Kind == yaml.ScalarNode {
				if p, ok := x.params[v.Value]; ok {
					x.g.edge(p, into)
				}
				return
			}
		case "Fn::GetAtt":
			v := resolve(n.Content[1])
			switch {
			case v.Kind == yaml.ScalarNode:
				res, attr, _ := strings.Cut(v.Value, ".")
				x.g.edge(x.attr(res, attr), into)
				return
			case v.Kind == yaml.SequenceNode && len(v.Content) == 2 && resolve(v.Content[0]).Kind == yaml.ScalarNode:
				res, attr := resolve(v.Content[0]).Value, resolve(v.Content[1])
				if attr.Kind == yaml.ScalarNode {
					x.g.edge(x.attr(res, attr.Value), into)
				} else {
					x.g.edge(x.any(res), into)
					x.reads(attr, into)
				}
				return
			}
		case "Fn::Sub":
			args := resolve(n.Content[1])
			str := args
			if args.Kind == yaml.SequenceNode && len(args.Content) > 0 {
				str = resolve(args.Content[0])
				for _, c := range args.Content[1:] {
					x.reads(c, into)
				}
			}
			if str.Kind == yaml.ScalarNode {
				if secureDynamicRE.MatchString(str.Value) {
					x.g.source(into)
				}
				for _, m := range subVarRE.FindAllStringSubmatch(str.Value, -1) {
					name, attr, dotted := strings.Cut(strings.TrimSpace(m[1]), ".")
					if p, ok := x.params[name]; ok && !dotted {
						x.g.edge(p, into)
					} else if dotted {
						x.g.edge(x.attr(name, attr), into)
					}
				}
				return
			}
			x.reads(str, into)
			return
		case "Fn::ImportValue":
			name, export := resolve(n.Content[1]), ""
			if name.Kind == yaml.ScalarNode {
				export = name.Value
			} else {
				x.reads(name, into)
			}
			if x.g.in.Import != nil && x.g.in.Import(export) {
				x.g.source(into)
			}
			return
		}
		for i := 1; i < len(n.Content); i += 2 {
			x.reads(n.Content[i], into)
		}
	}
}
