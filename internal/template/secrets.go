package template

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Which values of a template are secret: those computed from a secret parameter (NoEcho,
// or any parameter the caller knows received a SecureString) or from a dynamic reference
// to a SecureString or a Secrets Manager secret. CloudFormation shows a NoEcho parameter
// as ****, yet the resource property set from it shows in drift results, and an output
// of it in DescribeStacks: cairn must not print or store either in clear.

// NoEchoParameters returns the names of t's NoEcho parameters.
func (t *Template) NoEchoParameters() map[string]bool {
	out := map[string]bool{}
	for name, p := range t.Parameters {
		if p.NoEcho {
			out[name] = true
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

// secretIn reports whether the value n reads one of secret (parameter names), a resource
// of secretResources through Fn::GetAtt, or a secure dynamic reference, anywhere within it.
func secretIn(n *yaml.Node, secret, secretResources map[string]bool) bool {
	n = resolve(n)
	if n == nil {
		return false
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return secureDynamicRE.MatchString(n.Value)
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if secretIn(c, secret, secretResources) {
				return true
			}
		}
		return false
	case yaml.MappingNode:
		switch intrinsic(n) {
		case "Ref":
			if v := resolve(n.Content[1]); v.Kind == yaml.ScalarNode {
				return secret[v.Value]
			}
		case "Fn::GetAtt":
			v := resolve(n.Content[1])
			var res string
			switch {
			case v.Kind == yaml.ScalarNode:
				res, _, _ = strings.Cut(v.Value, ".")
			case v.Kind == yaml.SequenceNode && len(v.Content) > 0:
				res = resolve(v.Content[0]).Value
			}
			if secretResources[res] {
				return true
			}
		case "Fn::Sub":
			args := resolve(n.Content[1])
			str := args
			if args.Kind == yaml.SequenceNode && len(args.Content) > 0 {
				str = resolve(args.Content[0])
				if len(args.Content) > 1 && secretIn(args.Content[1], secret, secretResources) {
					return true
				}
			}
			if str.Kind == yaml.ScalarNode {
				if secureDynamicRE.MatchString(str.Value) {
					return true
				}
				for _, m := range subVarRE.FindAllStringSubmatch(str.Value, -1) {
					name, _, attr := strings.Cut(m[1], ".")
					if secret[name] && !attr || attr && secretResources[name] {
						return true
					}
				}
			}
			return false
		}
		for i := 1; i < len(n.Content); i += 2 {
			if secretIn(n.Content[i], secret, secretResources) {
				return true
			}
		}
	}
	return false
}

// SecretProperties lists, per resource (logical id), the paths of its properties whose
// values are secret (see secretIn), as drift results name them: /Name, /Config/Password,
// /Tags/0/Value. A path is the deepest one whose value is computed (an intrinsic or a
// string holding a dynamic reference); secret lists the secret parameters.
func (t *Template) SecretProperties(secret map[string]bool) map[string][]string {
	out := map[string][]string{}
	res := value(t.Node, "Resources")
	if res == nil || res.Kind != yaml.MappingNode {
		return out
	}
	c := &checker{t: t, resources: map[string]*resource{}, conditions: map[string]bool{}, mappings: map[string]bool{}}
	for _, e := range c.expand(res, "") {
		props := value(resolve(e.value), "Properties")
		var paths []string
		var walk func(n *yaml.Node, path string)
		walk = func(n *yaml.Node, path string) {
			n = resolve(n)
			switch {
			case n == nil:
			case n.Kind == yaml.MappingNode && intrinsic(n) == "":
				for i := 0; i+1 < len(n.Content); i += 2 {
					walk(n.Content[i+1], path+"/"+n.Content[i].Value)
				}
			case n.Kind == yaml.SequenceNode:
				for i, c := range n.Content {
					walk(c, path+"/"+strconv.Itoa(i))
				}
			case secretIn(n, secret, nil):
				paths = append(paths, path)
			}
		}
		walk(props, "")
		if len(paths) > 0 {
			out[e.key.Value] = paths
		}
	}
	return out
}

// SecretOutputs lists, sorted, the outputs whose values are secret: computed from a
// secret parameter (secret), a secure dynamic reference, or an attribute of a resource
// that has a secret property (which may return it).
func (t *Template) SecretOutputs(secret map[string]bool) []string {
	resources := map[string]bool{}
	for id := range t.SecretProperties(secret) {
		resources[id] = true
	}
	outs := value(t.Node, "Outputs")
	if outs == nil || outs.Kind != yaml.MappingNode {
		return nil
	}
	var names []string
	for i := 0; i+1 < len(outs.Content); i += 2 {
		if secretIn(value(outs.Content[i+1], "Value"), secret, resources) {
			names = append(names, outs.Content[i].Value)
		}
	}
	slices.Sort(names)
	return names
}

// IsSecretPath reports whether a property path of a drift result (or of a change)
// touches one of the secret paths: it is one of them, within one, or holds one.
func IsSecretPath(path string, secret []string) bool {
	for _, s := range secret {
		if s == "*" || path == s || strings.HasPrefix(path, s+"/") || strings.HasPrefix(s, path+"/") || path == "" || path == "/" {
			return true
		}
	}
	return false
}
