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

// GuardedPrefixes are the folders only the policy role may write.
func GuardedPrefixes() []string { return []string{PoliciesPrefix, PolicyOverridesPrefix} }

// GuardSid is the Sid of WriteGuard's statement in the bucket policy.
const GuardSid = "OnlyThePolicyRoleWritesPolicies"

// GuardedActions are the object writes WriteGuard denies: every S3 action that makes,
// replaces or deletes an object, one of its versions, its ACL, tags, retention or legal
// hold (a copy into the folder and a multipart upload are s3:PutObject).
var GuardedActions = []string{
	"s3:DeleteObject",
	"s3:DeleteObjectTagging",
	"s3:DeleteObjectVersion",
	"s3:DeleteObjectVersionTagging",
	"s3:PutObject",
	"s3:PutObjectAcl",
	"s3:PutObjectLegalHold",
	"s3:PutObjectRetention",
	"s3:PutObjectTagging",
	"s3:PutObjectVersionAcl",
	"s3:PutObjectVersionTagging",
}

// WriteGuard is the statement of cairn's bucket policy that lets only the policy role
// write the team's policies and their overrides: a Deny of GuardedActions on
// GuardedPrefixes to every principal whose aws:PrincipalArn is not policyRoleARN. A Deny
// wins over any Allow of any identity policy, so no role of the account — cairn's own,
// an administrator's, the account's root — can write there, except by changing the bucket
// policy first. It is the one source of the statement: the CDK stack (infra/) and so the
// local emulator's copy of cairn's stack both install it. bucketARN and policyRoleARN may
// be CDK tokens.
func WriteGuard(bucketARN, policyRoleARN string) map[string]any {
	var resources []any
	for _, p := range GuardedPrefixes() {
		resources = append(resources, bucketARN+"/"+p+"*")
	}
	actions := make([]any, len(GuardedActions))
	for i, a := range GuardedActions {
		actions[i] = a
	}
	return map[string]any{
		"Sid":       GuardSid,
		"Effect":    "Deny",
		"Principal": map[string]any{"AWS": "*"},
		"Action":    actions,
		"Resource":  resources,
		"Condition": map[string]any{"ArnNotEquals": map[string]any{"aws:PrincipalArn": policyRoleARN}},
	}
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
