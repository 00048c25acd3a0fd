package template

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// More rules of services, as servicerules.go: AWS Backup's lifecycle arithmetic and
// CloudFront's alternate domain names.

// backupLifecycles: AWS Backup refuses a lifecycle whose DeleteAfterDays is less than 90
// days after MoveToColdStorageAfterDays (a recovery point stays 90 days at least in cold
// storage; cfn-lint's E3504), in a plan's rules and in their copy actions.
func (c *checker) backupLifecycles(props *yaml.Node, base string) {
	plan := value(props, "BackupPlan")
	rules := value(plan, "BackupPlanRule")
	if rules == nil || rules.Kind != yaml.SequenceNode {
		return
	}
	for i, rule := range rules.Content {
		path := fmt.Sprintf("%s.Properties.BackupPlan.BackupPlanRule[%d]", base, i)
		c.backupLifecycle(value(rule, "Lifecycle"), path+".Lifecycle")
		if copies := value(rule, "CopyActions"); copies != nil && copies.Kind == yaml.SequenceNode {
			for j, cp := range copies.Content {
				c.backupLifecycle(value(cp, "Lifecycle"), fmt.Sprintf("%s.CopyActions[%d].Lifecycle", path, j))
			}
		}
	}
}

func (c *checker) backupLifecycle(lc *yaml.Node, path string) {
	del, okDel := literalInt(value(lc, "DeleteAfterDays"))
	cold, okCold := literalInt(value(lc, "MoveToColdStorageAfterDays"))
	if !okDel || !okCold || del-cold >= 90 {
		return
	}
	c.errorf(value(lc, "DeleteAfterDays"), path+".DeleteAfterDays", "DeleteAfterDays %d is less than 90 days after MoveToColdStorageAfterDays %d: AWS Backup keeps a recovery point 90 days at least in cold storage and refuses the plan; set DeleteAfterDays to %d or more", del, cold, cold+90)
}

// literalInt is n's value when n is a literal integer.
func literalInt(n *yaml.Node) (int, bool) {
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return 0, false
	}
	v, err := strconv.Atoi(n.Value)
	return v, err == nil
}

// cloudFrontAlias is the form CloudFront takes of an alternate domain name (cfn-lint's
// E3013): lowercase labels of letters, digits and inner hyphens, at least two, a wildcard
// only as a whole first label.
var cloudFrontAlias = regexp.MustCompile(`^(?:[a-z0-9*](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$`)

// cloudFrontAliases: CloudFront refuses a distribution with an alias that is no domain
// name (InvalidArgument: "The parameter CNAME contains one or more illegal characters").
func (c *checker) cloudFrontAliases(props *yaml.Node, base string) {
	aliases := value(value(props, "DistributionConfig"), "Aliases")
	if aliases == nil || aliases.Kind != yaml.SequenceNode {
		return
	}
	for i, a := range aliases.Content {
		s, ok := plainScalar(a)
		if !ok || strings.HasPrefix(s, "{{resolve:") {
			continue
		}
		if !strings.Contains(s, ".*.") && cloudFrontAlias.MatchString(s) {
			continue
		}
		c.errorf(a, fmt.Sprintf("%s.Properties.DistributionConfig.Aliases[%d]", base, i), "alias %q is no domain name CloudFront takes (lowercase labels of letters, digits and inner hyphens, a wildcard * only as the whole first label): CloudFront refuses the distribution; correct the alias", s)
	}
}

// refTarget is the logical id n names with Ref (!Ref X or {Ref: X}), or "".
func refTarget(n *yaml.Node) string {
	switch {
	case n == nil:
		return ""
	case n.Kind == yaml.ScalarNode && n.Tag == "!Ref":
		return n.Value
	case n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Value == "Ref":
		if s, ok := plainScalar(n.Content[1]); ok {
			return s
		}
	}
	return ""
}

// roleByName: CodeBuild takes a project's ServiceRole by name, and looks the name up at
// the path /; a Ref of a role of another Path gives its name, which names no role there,
// so CodeBuild refuses the project (cfn-lint's E3050).
func (c *checker) roleByName(props *yaml.Node, base string) {
	at := value(props, "ServiceRole")
	role := c.resources[refTarget(at)]
	if role == nil || role.typ != "AWS::IAM::Role" {
		return
	}
	path, ok := plainScalar(value(value(role.node, "Properties"), "Path"))
	if !ok || path == "/" || path == "" {
		return
	}
	c.errorf(at, base+".Properties.ServiceRole", "Ref %s gives the role's name, which CodeBuild looks up at the path /, but the role's Path is %s: CodeBuild finds no such role; use !GetAtt %s.Arn", role.name, path, role.name)
}

// sharedName: CloudFormation refuses a template whose resource has the name of one of its
// parameters (a Ref could not tell them apart; cfn-lint's E3007).
func (c *checker) sharedName(r *resource) {
	if _, ok := c.t.Parameters[r.name]; ok {
		c.errorf(r.nameNode, "Resources."+r.name, "resource %s has the name of a parameter: logical ids are unique across Parameters and Resources; rename one", r.name)
	}
}

// policyResource is the form IAM takes of a statement's Resource: "*" or an ARN (cfn-lint's
// E3510 pattern).
var policyResource = regexp.MustCompile(`^(arn:(aws[A-Za-z\-]*?|\*):[^:]+:[^:]*(:(?:\d{12}|\*|aws)?:.+|)|\*)$`)

// policyResources: IAM, and each service reading a resource policy, refuses a statement
// whose Resource or NotResource is neither "*" nor an ARN (MalformedPolicyDocument:
// "Resource ... must be in ARN format or \"*\"").
func (c *checker) policyResources(stmt *yaml.Node, path string) {
	for _, k := range []string{"Resource", "NotResource"} {
		n := value(stmt, k)
		items := []*yaml.Node{n}
		if n != nil && n.Kind == yaml.SequenceNode {
			items = n.Content
		}
		for i, it := range items {
			v, ok := plainScalar(it)
			if !ok || policyResource.MatchString(v) || strings.HasPrefix(v, "{{resolve:") {
				continue
			}
			at := path + "." + k
			if n.Kind == yaml.SequenceNode {
				at = fmt.Sprintf("%s[%d]", at, i)
			}
			c.errorf(it, at, "%s %q is neither \"*\" nor an ARN: IAM refuses the policy document (MalformedPolicyDocument); give the resource's ARN (!GetAtt or !Sub arn:${AWS::Partition}:...)", k, v)
		}
	}
}

// stackOutputArgs: Fn::GetStackOutput takes a mapping naming the StackName and the
// OutputName (cfn-lint's E1033); CloudFormation refuses it otherwise.
func (c *checker) stackOutputArgs(k, arg *yaml.Node, path string) {
	if arg.Kind != yaml.MappingNode {
		c.errorf(k, path, "Fn::GetStackOutput takes a mapping of StackName and OutputName, not %s", kindOf(arg))
		return
	}
	for _, need := range []string{"StackName", "OutputName"} {
		if value(arg, need) == nil {
			c.errorf(k, path, "Fn::GetStackOutput needs %s: name the stack and the output to read", need)
		}
	}
}

// resourcePolicies are the resource policy each type holds, whose statements must name
// who they apply to.
var resourcePolicies = map[string]string{
	"AWS::S3::BucketPolicy":               "PolicyDocument",
	"AWS::SQS::QueuePolicy":               "PolicyDocument",
	"AWS::SNS::TopicPolicy":               "PolicyDocument",
	"AWS::KMS::Key":                       "KeyPolicy",
	"AWS::SecretsManager::ResourcePolicy": "ResourcePolicy",
}

// policyPrincipals: a statement of a resource policy names a Principal or a NotPrincipal;
// S3, SQS, SNS, KMS and Secrets Manager refuse one without ("Missing required field
// Principal"; cfn-lint's E3512).
func (c *checker) policyPrincipals(r *resource, props *yaml.Node, base string) {
	key, ok := resourcePolicies[r.typ]
	if !ok {
		return
	}
	st := value(value(props, key), "Statement")
	stmts := []*yaml.Node{st}
	if st != nil && st.Kind == yaml.SequenceNode {
		stmts = st.Content
	}
	for i, s := range stmts {
		if s == nil || s.Kind != yaml.MappingNode || intrinsic(s) != "" {
			continue
		}
		if value(s, "Principal") == nil && value(s, "NotPrincipal") == nil {
			c.errorf(s, fmt.Sprintf("%s.Properties.%s.Statement[%d]", base, key, i), "the statement names no Principal: a resource policy's statement says whom it applies to (Principal or NotPrincipal), and %s refuses the policy without one", r.typ)
		}
	}
}

// module: CloudFormation expands a module's resource into the module's resources, passing
// on DependsOn, Condition, Metadata and the deletion policies; it refuses a module that
// sets a CreationPolicy, an UpdatePolicy or Tags, and keeps the Metadata key
// AWS::CloudFormation::Module for itself (it records there which module a resource came
// from). cfn-lint's E5001.
func (c *checker) module(r *resource, base string) {
	for _, attr := range []string{"CreationPolicy", "UpdatePolicy"} {
		if k := key(r.node, attr); k != nil {
			c.errorf(k, base+"."+attr, "module %s sets %s, which a module does not take: set it in the module's template, on the resource it applies to", r.name, attr)
		}
	}
	if k := key(value(r.node, "Properties"), "Tags"); k != nil {
		c.errorf(k, base+".Properties.Tags", "module %s sets Tags, which a module does not take: tag the stack, or the resources in the module's template", r.name)
	}
	if k := key(value(r.node, "Metadata"), "AWS::CloudFormation::Module"); k != nil {
		c.errorf(k, base+".Metadata.AWS::CloudFormation::Module", "module %s sets the Metadata key AWS::CloudFormation::Module, which CloudFormation keeps for itself (it records the module each resource came from): use another key", r.name)
	}
}
