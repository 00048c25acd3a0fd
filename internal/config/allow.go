package config

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/template"
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
		if !validStackName(n) {
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

// deploymentName reads a key naming a deployment: take_over_graph_from (the deployment
// whose persistent graph this one takes over, a rename) or hand_over_graph_to (the
// deployment this one consents may take its graph over). "" when it is not one.
func (l *loader) deploymentName(f field) string {
	v, ok := l.str(f.v, f.key)
	if !ok {
		return ""
	}
	if !graphKeyRE.MatchString(v) || strings.Contains(v, "..") {
		l.errorf(f.v, f.key, "%q is not a deployment name: use letters, digits, '-', '_' and '.'", v)
		return ""
	}
	return v
}

// SSMPaths are the Parameter Store names the ${ssm} lookups of each namespace may read: in
// AWS the CDK context cairn:ssmPaths (by default /NAMESPACE/* for each namespace), given
// to the deployer as CAIRN_SSM_PATHS. A path is a parameter name, or a path ending in /*
// for every name below it, as IAM matches parameter ARNs. The key "*" holds the paths
// every namespace may read. Nil allows every name (`cairn local up` without --namespaces):
// the deployer's role, whose policy is the union of the paths, then decides alone. One
// role serves every namespace, so IAM cannot keep one namespace from another's
// parameters: this list, checked in code, does.
type SSMPaths map[string][]string

// everyNamespace is the SSMPaths key of the paths every namespace may read.
const everyNamespace = "*"

// ParseSSMPaths reads CAIRN_SSM_PATHS: a JSON object of namespace ("*": every one) to a
// list of names and paths ("" allows every name).
func ParseSSMPaths(s string) (SSMPaths, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var p SSMPaths
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return nil, fmt.Errorf("%q is not a JSON object of namespaces to lists of Parameter Store paths (e.g. {\"shop\": [\"/shop/*\"]}): %v", s, err)
	}
	if p == nil {
		p = SSMPaths{}
	}
	for ns, paths := range p {
		for _, path := range paths {
			if !ssmPathRE.MatchString(path) {
				return nil, fmt.Errorf("namespace %s: %q is not a parameter name or a path ending in /*", ns, path)
			}
		}
	}
	return p, nil
}

// ssmPathRE is a parameter name (letters, digits and _.- between slashes) or a path of
// them ending in /*, as infra's cairn:ssmPaths accepts.
var ssmPathRE = regexp.MustCompile(`^(/[a-zA-Z0-9_.-]+)+(/\*)?$`)

// For lists the paths namespace may read, sorted ("*"'s with its own).
func (p SSMPaths) For(namespace string) []string {
	out := append(slices.Clone(p[everyNamespace]), p[namespace]...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Allows reports whether namespace's lookups may read parameter name (as written in a
// lookup: a :VERSION or :LABEL selector is not part of the name).
func (p SSMPaths) Allows(namespace, name string) bool {
	if p == nil {
		return true
	}
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	if !strings.HasPrefix(name, "/") {
		name = "/" + name // IAM's ARN of a name without a slash: parameter/NAME
	}
	if strings.Contains(name, "..") || strings.Contains(name, "//") {
		return false
	}
	for _, path := range p.For(namespace) {
		if dir, ok := strings.CutSuffix(path, "/*"); ok {
			if strings.HasPrefix(name, dir+"/") {
				return true
			}
		} else if name == path {
			return true
		}
	}
	return false
}

// ssmPaths refuses each ${ssm} lookup that reads a parameter outside the paths the
// config's namespace may read.
func (l *loader) ssmPaths(o LoadOptions, c *Config, defs []*stackDef) {
	if o.SSMPaths == nil {
		return
	}
	seen := map[*yaml.Node]bool{}
	for _, d := range defs {
		for i, at := range d.lookupAt {
			lk := d.s.Lookups[i]
			if lk.Kind != "ssm" || o.SSMPaths.Allows(c.Namespace, lk.Name) || seen[at.node] {
				continue
			}
			seen[at.node] = true // a config tag's lookup is every stack's
			l.errorf(at.node, at.key, "%s", o.SSMPaths.refusal(c.Namespace, lk.Name, ""))
		}
	}
}

// refusal says that namespace may not read parameter name (through via, "" for a
// lookup), and what to do.
func (p SSMPaths) refusal(namespace, name, via string) string {
	allowed := "none"
	if paths := p.For(namespace); len(paths) > 0 {
		allowed = strings.Join(paths, ", ")
	}
	if via != "" {
		via = " (" + via + ")"
	}
	return fmt.Sprintf("SSM parameter %s%s is outside the Parameter Store paths namespace %s may read (%s): move the parameter under one of them, or have cairn deployed with the path in the CDK context cairn:ssmPaths for namespace %s",
		name, via, namespace, allowed, namespace)
}

// DynamicReferenceRefusal says why namespace may not make dynamic reference r
// ({{resolve:ssm:NAME}}, {{resolve:ssm-secure:NAME}}), "" when it may: CloudFormation
// resolves it with the deployer's role, which reads every namespace's paths, so the
// reference obeys the paths a lookup does. One whose name cairn cannot tell is refused.
func (p SSMPaths) DynamicReferenceRefusal(namespace string, r template.SSMReference) string {
	if p == nil {
		return ""
	}
	if r.Name == "" {
		allowed := "none"
		if paths := p.For(namespace); len(paths) > 0 {
			allowed = strings.Join(paths, ", ")
		}
		return fmt.Sprintf("dynamic reference %s reads an SSM parameter whose name is computed from %s, which cairn cannot know before CloudFormation does, so it could be outside the Parameter Store paths namespace %s may read (%s): write the parameter's name out", r.Text, r.Unknown, namespace, allowed)
	}
	if p.Allows(namespace, r.Name) {
		return ""
	}
	return p.refusal(namespace, strings.SplitN(r.Name, ":", 2)[0], "dynamic reference "+r.Text)
}

// Env is p as CAIRN_SSM_PATHS holds it: JSON, namespaces sorted (nil allows every name:
// "").
func (p SSMPaths) Env() string {
	if p == nil {
		return ""
	}
	b, _ := json.Marshal(p) // a map of strings to lists of strings always encodes
	return string(b)
}
