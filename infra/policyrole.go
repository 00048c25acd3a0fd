package main

import (
	"fmt"
	"regexp"
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	layout "github.com/cairn-dev/cairn/internal/bucket"
)

// ctxPolicyAdmins lists who may assume the policy role (docs/policy.md, "The team prefix
// and the policy role"): IAM principal ARNs (a role, a user, an account's root) or account
// ids. Unset, the role trusts its own account: a principal of the account whose own
// policy allows it sts:AssumeRole on the role (an administrator does; no role of cairn's
// does).
const ctxPolicyAdmins = "cairn:policyAdmins"

// policyAdminRe is a principal the policy role's trust may name: an account id, or the ARN
// of an account's root, a role or a user.
var policyAdminRe = regexp.MustCompile(`^(\d{12}|arn:aws[a-z-]*:iam::\d{12}:(root|role/[\w+=,.@/-]{1,512}|user/[\w+=,.@/-]{1,512}))$`)

// loadPolicyAdmins reads cairn:policyAdmins: a list, or a comma-separated string.
func loadPolicyAdmins(cfg *Config, v interface{}) error {
	admins, err := stringList(v)
	if err != nil {
		return fmt.Errorf("context %s: %w", ctxPolicyAdmins, err)
	}
	for _, a := range admins {
		if !policyAdminRe.MatchString(a) {
			return fmt.Errorf("context %s: %q is not a principal the policy role can trust: use an account id or the ARN of a role, a user or an account's root, "+
				"e.g. arn:aws:iam::123456789012:role/platform-admins (wildcards are refused)", ctxPolicyAdmins, a)
		}
	}
	sort.Strings(admins)
	for i := 1; i < len(admins); i++ {
		if admins[i] == admins[i-1] {
			return fmt.Errorf("context %s: %q is listed twice: remove the duplicate", ctxPolicyAdmins, admins[i])
		}
	}
	cfg.PolicyAdmins = admins
	return nil
}

// policyRoleReads are what `cairn policy publish` and `cairn policy override` read: the
// published policies (to tell what changed), the overrides, and the plan an override is
// for.
var policyRoleReads = []string{layout.PoliciesPrefix + "*", layout.PolicyOverridesPrefix + "*", layout.PlansPrefix + "*/*"}

// wirePolicyRole makes the policy role, the only principal that may write or delete the
// team's policies (policies/) and their overrides (policy-overrides/), and adds to the
// bucket's policy the statement that refuses those writes to every other principal
// (bucket.WriteGuard).
func wirePolicyRole(stack awscdk.Stack, cfg Config, bucket awss3.Bucket) awsiam.Role {
	var trust awsiam.IPrincipal = awsiam.NewAccountRootPrincipal()
	if len(cfg.PolicyAdmins) > 0 {
		var ps []awsiam.IPrincipal
		for _, a := range cfg.PolicyAdmins {
			if len(a) == 12 { // an account id (loadPolicyAdmins checked it)
				ps = append(ps, awsiam.NewAccountPrincipal(jsii.String(a)))
				continue
			}
			ps = append(ps, awsiam.NewArnPrincipal(jsii.String(a)))
		}
		trust = awsiam.NewCompositePrincipal(ps...)
	}
	role := awsiam.NewRole(stack, jsii.String("PolicyRole"), &awsiam.RoleProps{
		Description:        jsii.String("cairn policy role: the only principal that may write the team's policies (policies/) and their overrides (policy-overrides/)"),
		AssumedBy:          trust,
		MaxSessionDuration: awscdk.Duration_Hours(jsii.Number(1)),
	})
	var writes, reads []*string
	for _, p := range layout.GuardedPrefixes() {
		writes = append(writes, bucket.ArnForObjects(jsii.String(p+"*")))
	}
	for _, k := range policyRoleReads {
		reads = append(reads, bucket.ArnForObjects(jsii.String(k)))
	}
	role.AddToPrincipalPolicy(allow("PolicyRoleWrites", []string{"s3:PutObject", "s3:DeleteObject"}, writes))
	role.AddToPrincipalPolicy(allow("PolicyRoleReads", []string{"s3:GetObject"}, reads))
	// Without s3:ListBucket S3 answers a read of a missing key 403, and publish lists
	// policies/ to delete what the folder no longer holds.
	role.AddToPrincipalPolicy(allow("PolicyRoleListKeys", []string{"s3:ListBucket"}, []*string{bucket.BucketArn()}))
	role.AddToPrincipalPolicy(allow("PolicyRoleFindBucket", []string{"cloudformation:ListExports"}, []*string{jsii.String("*")}))

	bucket.AddToResourcePolicy(awsiam.PolicyStatement_FromJson(layout.WriteGuard(*bucket.BucketArn(), *role.RoleArn())))

	bucketID := *stack.GetLogicalId(bucket.Node().DefaultChild().(awscdk.CfnElement))
	var wild []interface{}
	for _, k := range append(append([]string{}, layout.PoliciesPrefix+"*", layout.PolicyOverridesPrefix+"*"), policyRoleReads...) {
		wild = append(wild, fmt.Sprintf("Resource::<%s.Arn>/%s", bucketID, k))
	}
	cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{
		{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String("The policy role writes the team's policies and overrides, whose names the platform team chooses (policies/*, policy-overrides/*), " +
			"and reads the plans an override names (plans/NAME/PLAN_ID.json, chosen at run time)."), AppliesTo: ptr(wild)},
		{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String("cloudformation:ListExports, read-only, finds cairn's bucket (the export cairn-bucket-name) and supports no resource-level permissions."),
			AppliesTo: &[]interface{}{"Resource::*"}},
	}, jsii.Bool(true))
	output(stack, "PolicyRoleArn", role.RoleArn(), ExportPolicyRole, "the policy role: only it may write policies/ and policy-overrides/ (cairn policy publish / override --role)")
	return role
}
