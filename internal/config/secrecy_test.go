package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/template"
)

// chain builds a config whose stacks pass one value along a drawn chain of hops, from a
// drawn source to the last stack's output Sink, and says whether a secret reaches the
// sink: iff the source is secret and no hop drops the value (a Ref of a resource is its
// physical id, not the value it was given).
type chain struct {
	t       *rapid.T
	cfg     *Config
	secure  map[string]bool
	stack   *Stack
	params  []string
	res     []string
	outputs []string
	tree    *template.Tree
	expr    string
	secret  bool
	n       int
}

func (c *chain) next() string { c.n++; return fmt.Sprint(c.n) }

// newStack starts a stack; its template is written when the stack ends.
func (c *chain) newStack() {
	name := "s" + c.next()
	c.stack = &Stack{Name: name, StackName: "ns-" + name}
	c.params, c.res, c.outputs = nil, nil, nil
	c.tree = &template.Tree{Children: map[string]*template.Tree{}}
}

// endStack writes the stack's template, with output name of the value (exported as
// export, unless "").
func (c *chain) endStack(output, export string) {
	if export != "" {
		export = ", Export: {Name: " + export + "}"
	}
	c.outputs = append(c.outputs, "  "+output+": {Value: "+c.expr+export+"}")
	// Decoys: a NoEcho parameter and a resource it feeds that nothing reads further.
	body := "Parameters:\n  Decoy: {Type: String, NoEcho: true}\n" + strings.Join(c.params, "\n") +
		"\nResources:\n  DecoyR: {Type: AWS::SNS::Topic, Properties: {DisplayName: !Ref Decoy}}\n" + strings.Join(c.res, "\n") +
		"\nOutputs:\n" + strings.Join(c.outputs, "\n") + "\n"
	tpl, err := template.Parse([]byte(body))
	if err != nil {
		c.t.Fatalf("%v:\n%s", err, body)
	}
	c.tree.Template = tpl
	c.stack.Template, c.stack.Tree = tpl, c.tree
	c.cfg.Stacks = append(c.cfg.Stacks, c.stack)
	c.cfg.byName[c.stack.Name] = c.stack
}

func (c *chain) resource(value string) string {
	id := "R" + c.next()
	c.res = append(c.res, "  "+id+": {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: "+value+"}}")
	return id
}

func (c *chain) source() {
	p := "P" + c.next()
	switch rapid.IntRange(0, 6).Draw(c.t, "source") {
	case 0:
		c.params = append(c.params, "  "+p+": {Type: String, NoEcho: true}")
		c.expr, c.secret = "!Ref "+p, true
	case 1:
		c.params = append(c.params, "  "+p+": {Type: String}")
		c.expr = "!Ref " + p
	case 2:
		c.expr, c.secret = `"{{resolve:ssm-secure:/db/pw}}"`, true
	case 3:
		c.expr, c.secret = `"{{resolve:secretsmanager:db:SecretString:pw}}"`, true
	case 4:
		c.expr = `"{{resolve:ssm:/db/name}}"`
	case 5, 6:
		name := "/ssm/" + p
		c.secure[name] = rapid.Bool().Draw(c.t, "secure")
		c.params = append(c.params, "  "+p+": {Type: String}")
		c.stack.Lookups = append(c.stack.Lookups, Lookup{Kind: KindSSM, Name: name, Param: p})
		c.expr, c.secret = "!Ref "+p, c.secure[name]
	}
}

func (c *chain) hop() {
	switch rapid.IntRange(0, 9).Draw(c.t, "hop") {
	case 0:
		c.expr = "!GetAtt " + c.resource(c.expr) + ".Value"
	case 1:
		c.expr = `!Sub ["${X}-y", {X: ` + c.expr + `}]`
	case 2:
		c.expr = `!Sub "${` + c.resource(c.expr) + `.Value}"`
	case 3:
		c.expr = `!Join ["", [a, ` + c.expr + `]]`
	case 4:
		c.expr = `!Select [0, [` + c.expr + `]]`
	case 5:
		// A nested stack of the bundle: the value goes in by its parameter, out by its output.
		id := "C" + c.next()
		child, err := template.Parse([]byte("Parameters:\n  In: {Type: String}\n  Other: {Type: String, Default: x}\n" +
			"Resources:\n  R: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: !Ref In}}\n  Q: {Type: AWS::SNS::Topic, Properties: {DisplayName: !Ref Other}}\n" +
			"Outputs:\n  Out: {Value: !GetAtt R.Value}\n  Plain: {Value: !GetAtt Q.TopicName}\n"))
		if err != nil {
			c.t.Fatal(err)
		}
		c.tree.Children[id] = &template.Tree{Template: child}
		c.res = append(c.res, "  "+id+": {Type: AWS::CloudFormation::Stack, Properties: {TemplateURL: child.yaml, Parameters: {In: "+c.expr+", Other: plain}}}")
		c.expr = "!GetAtt " + id + ".Outputs.Out"
	case 6:
		// A Ref of the resource: its physical id, not its value.
		c.expr, c.secret = "!Ref "+c.resource(c.expr), false
	case 7, 8, 9:
		// To another stack: by ${output}, ${xref} or ${cfn}, or an export and its import.
		from := c.stack
		out := "O" + c.next()
		export := ""
		how := rapid.IntRange(0, 4).Draw(c.t, "across")
		switch how {
		case 3:
			export = "exp-" + out
		case 4:
			// Exported by a nested stack of the bundle.
			export = "nested-exp-" + out
			id := "X" + c.next()
			child, err := template.Parse([]byte("Parameters:\n  In: {Type: String}\nResources:\n  R: {Type: AWS::SNS::Topic}\n" +
				"Outputs:\n  Out: {Value: !Ref In, Export: {Name: " + export + "}}\n"))
			if err != nil {
				c.t.Fatal(err)
			}
			c.tree.Children[id] = &template.Tree{Template: child}
			c.res = append(c.res, "  "+id+": {Type: AWS::CloudFormation::Stack, Properties: {TemplateURL: child.yaml, Parameters: {In: "+c.expr+"}}}")
		}
		if how == 4 {
			c.endStack(out, "")
		} else {
			c.endStack(out, export)
		}
		c.newStack()
		p := "P" + c.next()
		c.params = append(c.params, "  "+p+": {Type: String}")
		switch how {
		case 0:
			c.stack.Lookups = append(c.stack.Lookups, Lookup{Kind: KindOutput, Stack: from.Name, Output: out, Param: p})
			c.expr = "!Ref " + p
		case 1:
			c.stack.Lookups = append(c.stack.Lookups, Lookup{Kind: KindXref, Stack: from.StackName, StackName: from.StackName, Output: out, Param: p})
			c.expr = "!Ref " + p
		case 2:
			c.stack.Lookups = append(c.stack.Lookups, Lookup{Kind: KindCFN, Stack: from.StackName, StackName: from.StackName, Output: out, Param: p})
			c.expr = "!Ref " + p
		case 3, 4:
			c.expr = "!ImportValue " + export
		}
	}
}

// TestSecrecyOfDrawnChains draws chains of hops (parameter → resource → resource →
// output → export → import in another stack → nested stack → output → export by a nested
// stack → import ...) over stacks in a drawn order: the sink is secret iff a secret source
// flows into it.
func TestSecrecyOfDrawnChains(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := &chain{t: rt, cfg: &Config{byName: map[string]*Stack{}}, secure: map[string]bool{}}
		c.newStack()
		c.source()
		for range rapid.IntRange(0, 12).Draw(rt, "hops") {
			c.hop()
		}
		c.endStack("Sink", "")
		last := c.stack.Name
		order := rapid.Permutation(c.cfg.Stacks).Draw(rt, "order")
		c.cfg.Stacks = order
		got := c.cfg.Secrecy(func(name string) bool { return c.secure[name] })
		if secret := slices.Contains(got.SecretOutputs(last), "Sink"); secret != c.secret {
			var bodies []string
			for _, s := range order {
				bodies = append(bodies, "# "+s.Name+"\n"+string(s.Template.Body))
			}
			rt.Fatalf("sink secret: %v, want %v; secrecy %v\n%s", secret, c.secret, got, strings.Join(bodies, "\n"))
		}
	})
}

// BenchmarkSecrecy10k computes the secrecy of a generated 10,000-stack config.
func BenchmarkSecrecy10k(b *testing.B) {
	data, _ := generated10k(b, 10_000)
	bd, err := bundle.FromZip(data)
	if err != nil {
		b.Fatal(err)
	}
	c, err := Load(bd)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if s := c.Secrecy(nil); len(s) != 10_000 {
			b.Fatalf("%d stacks analysed", len(s))
		}
	}
}
