package bucket

import (
	"fmt"
	"regexp"
	"strings"
)

// The folders of the platform team's policies and of their overrides. Only the policy role
// may write or delete under them (WriteGuard); the deployer and the policy function read
// them.
//
//	policies/PATH.rego, PATH.json                 the team's policies and their data
//	policy-overrides/NAME/PLAN_ID/RULE.json       an override of rule RULE for one plan
const (
	PoliciesPrefix        = "policies/"
	PolicyOverridesPrefix = "policy-overrides/"
)

// PolicyKey is the object of the team's policy file at path (slash-separated, relative to
// the published folder).
func PolicyKey(path string) string { return PoliciesPrefix + path }

// PolicyOverridesOf is the folder of the overrides of plan planID of deployment name.
func PolicyOverridesOf(name, planID string) string {
	return PolicyOverridesPrefix + name + "/" + planID + "/"
}

// PolicyOverrideKey is the override of rule (a policy's package, cairn.s3_public) for plan
// planID of deployment name.
func PolicyOverrideKey(name, planID, rule string) string {
	return PolicyOverridesOf(name, planID) + rule + jsonExt
}

// ruleRe is a policy's package path as Rego spells it: identifiers joined by dots.
var ruleRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// ValidRule checks that rule is a policy's id as results name it (cairn.s3_public): a
// Rego package path, at most 200 characters. An override's key ends in it.
func ValidRule(rule string) error {
	if len(rule) > 200 || !ruleRe.MatchString(rule) {
		return fmt.Errorf("rule %q is not a policy's id: use the package a result names, e.g. cairn.s3_public", rule)
	}
	return nil
}

// PolicyRuleOf returns the rule an override key of plan planID of deployment name is
// for; false for any other key, or a rule no policy can have (it lifts nothing).
func PolicyRuleOf(name, planID, key string) (string, bool) {
	rule, ok := leaf(key, PolicyOverridesOf(name, planID), jsonExt)
	if !ok || ValidRule(rule) != nil {
		return "", false
	}
	return rule, true
}

// PolicyFile reports whether key is one of the team's policy files: under
// PoliciesPrefix, ending .rego or .json.
func PolicyFile(key string) bool {
	return strings.HasPrefix(key, PoliciesPrefix) && (strings.HasSuffix(key, ".rego") || strings.HasSuffix(key, jsonExt))
}
