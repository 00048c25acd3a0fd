package config

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Namespaces is the allow-list of namespaces a cairn installation may manage: in AWS the
// CDK context cairn:namespaces, given to the deployer as CAIRN_NAMESPACES, and the only
// stack names its role may touch are NAMESPACE-*. An empty list allows every namespace
// (`cairn local up` without --namespaces, `cairn validate` without a list).
type Namespaces []string

// ParseNamespaces reads a comma-separated list ("shop,web"; "" allows every namespace).
func ParseNamespaces(s string) (Namespaces, error) {
	var ns Namespaces
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !stackNameRE.MatchString(n) {
			return nil, fmt.Errorf("namespace %q in %q: use letters, digits and hyphens, starting with a letter", n, s)
		}
		if !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	return ns, nil
}

// All reports whether the list allows every namespace.
func (ns Namespaces) All() bool { return len(ns) == 0 }

// Allows reports whether namespace is one of the list.
func (ns Namespaces) Allows(namespace string) bool { return ns.All() || slices.Contains(ns, namespace) }

// AllowsStack reports whether the CloudFormation stack stackName is one cairn may manage:
// its name begins with an allowed namespace and a hyphen, as IAM's NAMESPACE-* does.
func (ns Namespaces) AllowsStack(stackName string) bool {
	if ns.All() {
		return true
	}
	for _, n := range ns {
		if strings.HasPrefix(stackName, n+"-") {
			return true
		}
	}
	return false
}

func (ns Namespaces) String() string {
	if ns.All() {
		return "every namespace"
	}
	return strings.Join(ns, ", ")
}

// patterns names the stacks the list allows, for messages: "shop-* or web-*".
func (ns Namespaces) patterns() string {
	p := make([]string, len(ns))
	for i, n := range ns {
		p[i] = n + "-*"
	}
	return strings.Join(p, " or ")
}

// Refusal says why the list does not allow a namespace or a stack name, and what to do;
// "" when it allows both.
func (ns Namespaces) Refusal(namespace, stackName string) string {
	switch {
	case namespace != "" && !ns.Allows(namespace):
		return fmt.Sprintf("namespace %q is not one this cairn may manage (allowed: %s): use one of those, or have cairn deployed with it in the CDK context cairn:namespaces", namespace, ns)
	case stackName != "" && !ns.AllowsStack(stackName):
		return fmt.Sprintf("stack name %q is outside the namespaces this cairn may manage: it must be named %s", stackName, ns.patterns())
	}
	return ""
}

// allowed refuses a namespace and stack names outside o.Namespaces.
func (l *loader) allowed(o LoadOptions, c *Config, namespaceNode *yaml.Node, defs []*stackDef) {
	if o.Namespaces.All() {
		return
	}
	if r := o.Namespaces.Refusal(c.Namespace, ""); r != "" {
		l.errorf(namespaceNode, "namespace", "%s", r)
		return // every derived stack name would say it again
	}
	for _, d := range defs {
		s := d.s
		if s.StackName == "" || o.Namespaces.AllowsStack(s.StackName) {
			continue
		}
		at, key := d.stackNameN, d.key+".stack_name"
		if at == nil {
			at, key = d.nameNode, d.key+".name"
		}
		l.errorf(at, key, "%s", o.Namespaces.Refusal("", s.StackName))
	}
}

// takeOver reads take_over_graph_from: the deployment whose persistent graph this one
// takes over (a rename).
func (l *loader) takeOver(c *Config, f field) {
	v, ok := l.str(f.v, f.key)
	if !ok {
		return
	}
	if !graphKeyRE.MatchString(v) || strings.Contains(v, "..") {
		l.errorf(f.v, f.key, "%q is not a deployment name: use letters, digits, '-', '_' and '.'", v)
		return
	}
	c.TakeOverGraphFrom = v
}
