package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"

	layout "github.com/cairn-dev/cairn/internal/bucket"
)

// The policy function reads the team's policies (policies/), and the bundle a plan or
// push it judges was made from (deployments/, plans/, approvals/ at its version); it
// writes nothing. Only the policy role writes policies/ and policy-overrides/.
var policyReadPrefixes = []string{layout.PoliciesPrefix, layout.DeploymentsPrefix, layout.PlansPrefix, layout.ApprovalsPrefix}

// newPolicy makes the policy function, which the deployer invokes synchronously to
// judge a plan or a push with the policies (it alone links the policy engine, OPA).
func newPolicy(stack awscdk.Stack, cfg Config, common map[string]*string, bucket awss3.Bucket) awslambda.Function {
	// Policy: reads a bundle (at most 50 MB zipped) and the team's policies, compiles
	// them and judges a plan of up to a few hundred stacks: about a tenth of a second at
	// 1 GB, whose CPU keeps the deployer's synchronous wait short. 60 s covers a large
	// bundle and throttled reads; the deployer's own timeout is 2 minutes.
	policy := newFunction(stack, cfg, fn{
		// Not "Policy": its role would be PolicyRole, the policy role's id.
		name: "policy", id: "PolicyFunction", memory: 1024, timeout: awscdk.Duration_Seconds(jsii.Number(60)),
		desc: "cairn policy: judges plans and pushes with the team's and the bundle's policies (Rego, OPA)",
	}, common)
	grantObjects(policy.Role(), bucket, "PolicyRead", policyReadPrefixes, objectRead)
	grantList(policy.Role(), bucket, "PolicyList", policyReadPrefixes, listVersions)
	return policy
}
