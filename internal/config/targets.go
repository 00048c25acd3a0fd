package config

import (
	"regexp"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/target"
)

// Target is where a stack lives and how the deployer reaches it (see target.Spec).
type Target = target.Spec

var externalIDRE = regexp.MustCompile(`^[\w+=,.@:/-]+$`)

var roleARNRE = target.RoleARNPattern()

// targetField reads one of the keys of a Target (region, role_arn, external_id,
// service_role: at the top of cairn.yaml, the default of every stack, and per stack) into t; an empty role_arn, external_id or
// service_role clears what the stack would inherit.
func (l *loader) targetField(t *Target, f field) {
	v, ok := l.str(f.v, f.key)
	if !ok {
		return
	}
	switch f.name {
	case "region":
		if !target.ValidRegion(v) {
			l.errorf(f.v, f.key, "%q is not an AWS region name, e.g. eu-west-1", v)
			return
		}
		t.Region = v
	case "role_arn":
		if v != "" && !roleARNRE.MatchString(v) {
			l.errorf(f.v, f.key, "%q is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)", v)
			return
		}
		t.RoleARN = v
	case "external_id":
		if v != "" && (len(v) < 2 || len(v) > 1224 || !externalIDRE.MatchString(v)) {
			l.errorf(f.v, f.key, "must be 2 to 1224 letters, digits or +=,.@:/- (what STS accepts)")
			return
		}
		t.ExternalID = v
	case "service_role":
		if v != "" && !roleARNRE.MatchString(v) {
			l.errorf(f.v, f.key, "%q is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)", v)
			return
		}
		t.ServiceRole = v
	}
}

// checkTarget reports what cannot work of a stack's resolved target: an external id
// without a role to give it to, or a service role of another account than the stack's.
func (l *loader) checkTarget(d *stackDef) {
	t := d.s.Target
	at := func(key string) (*yaml.Node, string) {
		if n := d.targetNodes[key]; n != nil {
			return n, d.key + "." + key
		}
		if n := l.topTarget[key]; n != nil {
			return n, key
		}
		return d.node, d.key
	}
	if t.ExternalID != "" && t.RoleARN == "" {
		n, key := at("external_id")
		l.errorf(n, key, "stack %s has an external_id but no role_arn: the external id goes with the role the deployer assumes; set role_arn", d.s.Name)
	}
	if acct := t.Account(); t.ServiceRole != "" && acct != "" {
		if m := roleARNRE.FindStringSubmatch(t.ServiceRole); m != nil && m[1] != acct {
			n, key := at("service_role")
			l.errorf(n, key, "stack %s lives in account %s (its role_arn), but its service role %s is in account %s: CloudFormation takes a service role of the stack's account", d.s.Name, acct, t.ServiceRole, m[1])
		}
	}
}

// where names a stack's account and region in messages.
func where(t Target) string {
	return target.Target{Account: t.Account(), Region: t.Region}.Where()
}

// identity is a stack's identity in the config: account, region and stack name, the
// account and region "" where they are cairn's (which only the deployer knows).
func identity(s *Stack) stackIdentity {
	account := ""
	if s.Target.RoleARN != "" {
		account = s.Target.Account()
	}
	return stackIdentity{account, s.Target.Region, s.StackName}
}

// stackIdentity is a map key: a struct, not the fields joined into a string, since a
// large config has thousands of stacks.
type stackIdentity struct{ account, region, stackName string }
