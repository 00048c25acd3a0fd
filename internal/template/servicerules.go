package template

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/resourcespec"
)

// Rules the service behind a resource enforces when CloudFormation creates it, which no
// provider schema says (cfn-lint encodes them as rules of its own; its rule ids are named).

// serviceRules checks a resource's Properties by the rules of its service.
func (c *checker) serviceRules(r *resource, st *resourcespec.Type, props *yaml.Node, base string) {
	c.lifecycle(r, st)
	c.sharedName(r)
	if props == nil || props.Kind != yaml.MappingNode {
		return
	}
	switch r.typ {
	case "AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable":
		c.dynamoDBKeys(props, base)
	case "AWS::Lambda::Function":
		c.lambdaZip(r, props, base)
	case "AWS::Backup::BackupPlan":
		c.backupLifecycles(props, base)
	case "AWS::CloudFront::Distribution":
		c.cloudFrontAliases(props, base)
	case "AWS::CodeBuild::Project":
		c.roleByName(props, base)
	case "AWS::Route53::RecordSet", "AWS::Route53::RecordSetGroup":
		c.recordSets(r.typ, props, base)
	}
	c.crossRules(r, props, base)
	c.policyEffects(props, base+".Properties", 0)
	c.policyPrincipals(r, props, base)
}

// lifecycle refuses a type of a service AWS has shut down, and warns of one it is retiring
// (cfn-lint's E3710, W3696 and W3697, from AWS's list of services shut down).
func (c *checker) lifecycle(r *resource, st *resourcespec.Type) {
	at := key(r.node, "Type")
	path := "Resources." + r.name + ".Type"
	switch st.Lifecycle {
	case "shutdown":
		c.errorf(at, path, "%s is a type of a service AWS shut down on %s: CloudFormation can no longer create it", r.typ, st.LifecycleDate)
	case "sunset":
		when := "shuts down on"
		if st.LifecycleDate != "" && st.LifecycleDate <= c.day {
			when = "announced it would shut down on" // the date passed: it may refuse the type now
		}
		c.add(at, path, true, "%s is a type of a service AWS %s %s: plan to move off it", r.typ, when, st.LifecycleDate)
	}
}

// plainScalar is n's text when n is a plain scalar (no intrinsic function, no null).
func plainScalar(n *yaml.Node) (string, bool) {
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" || strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		return "", false
	}
	return n.Value, true
}

// attributeNames returns the AttributeName nodes of a list of mappings (AttributeDefinitions
// or a KeySchema), ok false when any part is not literal (an intrinsic, a Fn::If), so it
// cannot be judged.
func attributeNames(list *yaml.Node) (names []*yaml.Node, ok bool) {
	if list == nil {
		return nil, true
	}
	if list.Kind != yaml.SequenceNode {
		return nil, false
	}
	for _, item := range list.Content {
		n := value(item, "AttributeName")
		if item.Kind != yaml.MappingNode || n == nil {
			return nil, false
		}
		if _, lit := plainScalar(n); !lit {
			return nil, false
		}
		names = append(names, n)
	}
	return names, true
}

// dynamoDBKeys: DynamoDB refuses a table whose key schemas (the table's and its indexes')
// name an attribute AttributeDefinitions does not define, and one whose AttributeDefinitions
// define an attribute no key schema uses (ValidationException: "The number of attributes in
// key schema must match the number of attributes defined in attribute definitions";
// cfn-lint's E3039).
func (c *checker) dynamoDBKeys(props *yaml.Node, base string) {
	defs, ok := attributeNames(value(props, "AttributeDefinitions"))
	if !ok {
		return
	}
	keySchemas := []*yaml.Node{value(props, "KeySchema")}
	for _, idx := range []string{"GlobalSecondaryIndexes", "LocalSecondaryIndexes"} {
		list := value(props, idx)
		if list == nil {
			continue
		}
		if list.Kind != yaml.SequenceNode {
			return
		}
		for _, ix := range list.Content {
			if ix.Kind != yaml.MappingNode {
				return
			}
			keySchemas = append(keySchemas, value(ix, "KeySchema"))
		}
	}
	defined := map[string]bool{}
	for _, d := range defs {
		defined[d.Value] = true
	}
	used := map[string]bool{}
	var keys []*yaml.Node
	for _, ks := range keySchemas {
		names, ok := attributeNames(ks)
		if !ok {
			return
		}
		keys = append(keys, names...)
	}
	if len(keys) == 0 {
		return // no key schema: a required property, reported as such
	}
	for _, k := range keys {
		used[k.Value] = true
		if !defined[k.Value] {
			c.errorf(k, base+".Properties.AttributeDefinitions", "key attribute %q is not in AttributeDefinitions: DynamoDB refuses a key attribute without a type; add {AttributeName: %s, AttributeType: S} (or N, B)", k.Value, k.Value)
			defined[k.Value] = true // once
		}
	}
	for _, d := range defs {
		if !used[d.Value] {
			c.errorf(d, base+".Properties.AttributeDefinitions", "attribute %q is in AttributeDefinitions but no key schema (the table's or an index's) uses it: DynamoDB refuses it (the attributes defined must be the key attributes); remove it", d.Value)
		}
	}
}

// lambdaZip: Lambda refuses a function of a deployment package (PackageType Zip, the
// default) without a Runtime or a Handler (InvalidParameterValueException: "Runtime and
// Handler are mandatory parameters for functions created with deployment packages";
// cfn-lint warns, W2533).
func (c *checker) lambdaZip(r *resource, props *yaml.Node, base string) {
	if pt := value(props, "PackageType"); pt != nil {
		if v, ok := plainScalar(pt); !ok || v != "Zip" {
			return
		}
	}
	var missing []string
	for _, p := range []string{"Runtime", "Handler"} {
		if value(props, p) == nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		c.errorf(key(r.node, "Properties"), base+".Properties", "function %s needs %s: Lambda requires a Runtime and a Handler for a function of a .zip deployment package (for a container image, set PackageType: Image)", r.name, strings.Join(missing, " and "))
	}
}

// policyEffects checks the statements of each policy document under n (a role's, a
// resource policy's): IAM, and each service reading a resource policy, refuses an Effect
// other than Allow or Deny, which are case-sensitive (MalformedPolicyDocument; cfn-lint's
// E3510, E3512, E3530).
func (c *checker) policyEffects(n *yaml.Node, path string, depth int) {
	if depth > 12 || n == nil {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		if st := value(n, "Statement"); st != nil && (value(n, "Version") != nil || strings.Contains(path, "Polic")) {
			stmts := []*yaml.Node{st}
			if st.Kind == yaml.SequenceNode {
				stmts = nil
				for _, s := range st.Content {
					// a statement chosen by a condition: either may be the one IAM reads
					stmts = append(stmts, branches(s, 0)...)
				}
			}
			for i, s := range stmts {
				c.policyResources(s, fmt.Sprintf("%s.Statement[%d]", path, i))
				e := value(s, "Effect")
				v, ok := plainScalar(e)
				if !ok || v == "Allow" || v == "Deny" {
					continue
				}
				hint := ""
				if strings.EqualFold(v, "allow") || strings.EqualFold(v, "deny") {
					hint = " (the values are case-sensitive)"
				}
				c.errorf(e, fmt.Sprintf("%s.Statement[%d].Effect", path, i), "Effect %q is neither Allow nor Deny%s: IAM refuses the policy document (MalformedPolicyDocument)", v, hint)
			}
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			c.policyEffects(n.Content[i+1], path+"."+n.Content[i].Value, depth+1)
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			c.policyEffects(e, fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
	}
}

// branches are the values n may be: each branch of an Fn::If (nested ones too) but
// AWS::NoValue, or n itself.
func branches(n *yaml.Node, depth int) []*yaml.Node {
	n = resolve(n)
	if n == nil || intrinsic(n) != "Fn::If" || depth > 8 {
		return []*yaml.Node{n}
	}
	args := resolve(n.Content[1])
	if args.Kind != yaml.SequenceNode || len(args.Content) != 3 {
		return nil
	}
	var out []*yaml.Node
	for _, b := range args.Content[1:] {
		if b = resolve(b); !isNoValue(b) {
			out = append(out, branches(b, depth+1)...)
		}
	}
	return out
}

// pseudoSub checks a Fn::Sub naming no variable but the account, partition, region and URL
// suffix against the pattern and format where it goes, those given values of their shape:
// a role's !Sub "arn:${AWS::Partition}:iam::${AWS::AccountId}:/service-role/x" is no role
// ARN in any account or region (cfn-lint warns, W1031; the service refuses it).
func (c *checker) pseudoSub(arg *yaml.Node, sh *resourcespec.Shape, path string, at *yaml.Node) {
	if arg.Kind != yaml.ScalarNode || sh.Pattern == "" && sh.Format == "" || !sh.Kind.Scalar() {
		return
	}
	resolvable := true
	text := subVariable.ReplaceAllStringFunc(arg.Value, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v, ok := pseudoStandIns[name]
		resolvable = resolvable && ok && name != "AWS::StackName"
		return v
	})
	if !resolvable || !strings.Contains(arg.Value, "${") {
		return
	}
	text = strings.ReplaceAll(text, "${!", "${")
	only := &resourcespec.Shape{Kind: sh.Kind, Pattern: sh.Pattern, Format: sh.Format, MinLength: -1, MaxLength: -1, MinItems: -1, MaxItems: -1, MinProperties: -1, MaxProperties: -1}
	if msg := constraintProblem(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: text}, only); msg != "" {
		c.errorf(at, path, "%s (Fn::Sub, the account and region filled in)", msg)
	}
}
