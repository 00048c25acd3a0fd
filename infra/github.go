package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	layout "github.com/cairn-dev/cairn/internal/bucket"
)

// Context keys of the GitHub Actions roles (docs/review.md, "Plan on the pull request,
// apply on merge"): the repository OWNER/REPO whose workflow plans and applies, the
// environment of its gate job (required reviewers) and of its apply job (deployment
// branches: main), and the ARN of the account's GitHub OIDC provider when it has one
// already (an account holds at most one per URL).
const (
	ctxGitHub                 = "cairn:github"
	ctxGitHubEnvironment      = "cairn:githubEnvironment"
	ctxGitHubApplyEnvironment = "cairn:githubApplyEnvironment"
	ctxGitHubOIDCProvider     = "cairn:githubOidcProvider"
)

const (
	defaultGitHubEnvironment      = "production"
	defaultGitHubApplyEnvironment = "production-apply"
	githubOIDCHost                = "token.actions.githubusercontent.com"
	githubAudience                = "sts.amazonaws.com"
)

var (
	githubRepoRe    = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$`)
	githubEnvRe     = regexp.MustCompile(`^[A-Za-z0-9._-]{1,255}$`)
	githubOIDCARNRe = regexp.MustCompile(`^arn:aws[a-z-]*:iam::\d{12}:oidc-provider/` + regexp.QuoteMeta(githubOIDCHost) + `$`)
)

// GitHub is the GitHub Actions setup of cairn:github: one role per job of the documented
// workflow, each trusted by exactly one OIDC subject. Empty Repo: none is made.
type GitHub struct {
	Repo             string
	Environment      string // the gate's: approvals/NAME/PLAN_ID
	ApplyEnvironment string // the apply job's: approvals/NAME.zip
	OIDCProvider     string // an existing provider's ARN; empty: the stack makes one
}

// Subjects are the OIDC `sub` claims GitHub gives the jobs, by role: a pull_request
// event's job (whatever branch, whatever its workflow file says), a job in the apply
// environment, a job in the gate's environment. A job with an environment gets the
// environment's subject, never its ref's, so only environments tell apply from gate.
func (g GitHub) Subjects() (plan, apply, approve string) {
	repo := "repo:" + g.Repo + ":"
	return repo + "pull_request", repo + "environment:" + g.ApplyEnvironment, repo + "environment:" + g.Environment
}

// loadGitHub reads cairn:github and the keys that go with it.
func loadGitHub(cfg *Config, get func(string) interface{}) error {
	str := func(key string) (string, bool, error) {
		v := get(key)
		if v == nil {
			return "", false, nil
		}
		s, ok := v.(string)
		if !ok {
			return "", false, fmt.Errorf("context %s: %v is a %T, not a string", key, v, v)
		}
		return strings.TrimSpace(s), true, nil
	}
	repo, _, err := str(ctxGitHub)
	if err != nil {
		return err
	}
	env, envSet, err := str(ctxGitHubEnvironment)
	if err != nil {
		return err
	}
	applyEnv, applySet, err := str(ctxGitHubApplyEnvironment)
	if err != nil {
		return err
	}
	provider, providerSet, err := str(ctxGitHubOIDCProvider)
	if err != nil {
		return err
	}
	if repo == "" {
		if envSet || applySet || providerSet {
			return fmt.Errorf("context %s is needed with %s, %s and %s: set it to the repository whose workflow deploys, e.g. -c %s=shop/infra", ctxGitHub, ctxGitHubEnvironment, ctxGitHubApplyEnvironment, ctxGitHubOIDCProvider, ctxGitHub)
		}
		return nil
	}
	if !githubRepoRe.MatchString(repo) {
		return fmt.Errorf("context %s: %q is not OWNER/REPO (as GitHub spells it, e.g. shop/infra)", ctxGitHub, repo)
	}
	if !envSet || env == "" {
		env = defaultGitHubEnvironment
	}
	if !applySet || applyEnv == "" {
		applyEnv = defaultGitHubApplyEnvironment
	}
	for key, e := range map[string]string{ctxGitHubEnvironment: env, ctxGitHubApplyEnvironment: applyEnv} {
		if !githubEnvRe.MatchString(e) {
			return fmt.Errorf("context %s: %q is not a GitHub environment name cairn accepts: use letters, digits, '.', '_' or '-'", key, e)
		}
	}
	if env == applyEnv {
		return fmt.Errorf("context %s and %s are both %q: the apply job and the gate need environments of their own, or the apply role could approve", ctxGitHubEnvironment, ctxGitHubApplyEnvironment, env)
	}
	if provider != "" && !githubOIDCARNRe.MatchString(provider) {
		return fmt.Errorf("context %s: %q is not the ARN of GitHub's OIDC provider: use arn:aws:iam::ACCOUNT:oidc-provider/%s, or leave it unset and the stack makes one", ctxGitHubOIDCProvider, provider, githubOIDCHost)
	}
	cfg.GitHub = GitHub{Repo: repo, Environment: env, ApplyEnvironment: applyEnv, OIDCProvider: provider}
	return nil
}

// The bucket keys each GitHub role may write, and those all of them read. A pull request's
// job writes plans/NAME.zip only: not approvals/ (the plan role cannot approve anything,
// whatever workflow file its branch holds), not deployments/. The apply job uploads the
// merged content to approvals/NAME.zip and, where no reviewed plan covers it, plans it
// (plans/NAME.zip). The gate writes approvals/NAME/PLAN_ID: `approvals/*/*` names no
// approvals/NAME.zip. IAM's * spans '/', so plans/*.zip also names plans/A/B.zip, which no
// plan document is (they end .json, .md) and the deployer reads as no upload.
var (
	githubPlanWrites    = []string{layout.PlansPrefix + "*.zip"}
	githubApplyWrites   = []string{layout.ApprovalsPrefix + "*.zip", layout.PlansPrefix + "*.zip"}
	githubApproveWrites = []string{layout.ApprovalsPrefix + "*/*"}
	// cairn plan --wait reads the plan run (runs/NAME/RUN.json) and its plan
	// (plans/NAME/PLAN_ID.json); apply and approve read the graph too (state/: already
	// applied? stale?), and `cairn plans --comments` all three.
	githubPlanReads  = []string{layout.PlansPrefix + "*/*", layout.RunsPrefix + "*"}
	githubApplyReads = []string{layout.PlansPrefix + "*/*", layout.RunsPrefix + "*", layout.StatePrefix + "*"}
)

// githubCFNActions are what the CLI asks CloudFormation with a job's role: the export of
// cairn's bucket (when the job does not name it) and, while it follows a run, the events
// of the stacks the run changes.
var (
	githubAccountActions = []string{"cloudformation:ListExports"}
	githubStackActions   = []string{"cloudformation:DescribeStackEvents"}
)

// wireGitHub makes, with cairn:github set, the OIDC provider of GitHub Actions (unless
// cairn:githubOidcProvider names the account's) and the plan, apply and approve roles of
// the documented workflow, each trusted by exactly one subject of that repository, with
// audience sts.amazonaws.com. Without cairn:github it makes nothing.
func wireGitHub(stack awscdk.Stack, cfg Config, bucket awss3.Bucket) {
	g := cfg.GitHub
	if g.Repo == "" {
		return
	}
	provider := g.OIDCProvider
	var providerARN *string
	if provider != "" {
		providerARN = jsii.String(provider)
	} else {
		// AWS trusts GitHub's certificate authority for this host itself, so the provider
		// needs no thumbprint.
		p := awsiam.NewCfnOIDCProvider(stack, jsii.String("GitHubOIDCProvider"), &awsiam.CfnOIDCProviderProps{
			Url:          jsii.String("https://" + githubOIDCHost),
			ClientIdList: jsii.Strings(githubAudience),
		})
		providerARN = p.AttrArn()
	}
	planSub, applySub, approveSub := g.Subjects()
	stacks := stackARNs(stack, cfg.Namespaces)
	objects := func(keys []string) []*string {
		var out []*string
		for _, k := range keys {
			out = append(out, bucket.ArnForObjects(jsii.String(k)))
		}
		return out
	}
	bucketID := *stack.GetLogicalId(bucket.Node().DefaultChild().(awscdk.CfnElement))
	for _, r := range []struct {
		id, job, what, sub, output string
		writes, reads              []string
	}{
		{"GitHubPlanRole", "plan", "plan (pull requests: plans/NAME.zip only)", planSub, "GitHubPlanRoleArn", githubPlanWrites, githubPlanReads},
		{"GitHubApplyRole", "apply", "apply (the apply environment: approvals/NAME.zip, and plans/NAME.zip for the plan of merged content)", applySub, "GitHubApplyRoleArn", githubApplyWrites, githubApplyReads},
		{"GitHubApproveRole", "gate", "approve (the gate's environment: approvals/NAME/PLAN_ID)", approveSub, "GitHubApproveRoleArn", githubApproveWrites, githubApplyReads},
	} {
		role := awsiam.NewRole(stack, jsii.String(r.id), &awsiam.RoleProps{
			Description: jsii.String("cairn GitHub Actions " + r.what + " of " + g.Repo),
			AssumedBy: awsiam.NewWebIdentityPrincipal(providerARN, &map[string]interface{}{"StringEquals": map[string]interface{}{
				githubOIDCHost + ":aud": githubAudience,
				githubOIDCHost + ":sub": r.sub,
			}}),
			MaxSessionDuration: awscdk.Duration_Hours(jsii.Number(1)),
		})
		role.AddToPrincipalPolicy(allow(r.id+"Uploads", []string{"s3:PutObject"}, objects(r.writes)))
		role.AddToPrincipalPolicy(allow(r.id+"Reads", []string{"s3:GetObject"}, objects(r.reads)))
		// As for the functions (grantList): without s3:ListBucket, S3 answers a read of a
		// missing key 403, not 404.
		role.AddToPrincipalPolicy(allow(r.id+"ListKeys", []string{"s3:ListBucket"}, []*string{bucket.BucketArn()}))
		role.AddToPrincipalPolicy(allow(r.id+"FindBucket", githubAccountActions, []*string{jsii.String("*")}))
		role.AddToPrincipalPolicy(allow(r.id+"StackEvents", githubStackActions, stacks))

		var wild []interface{}
		for _, k := range append(append([]string{}, r.writes...), r.reads...) {
			wild = append(wild, fmt.Sprintf("Resource::<%s.Arn>/%s", bucketID, k))
		}
		var stackWild []interface{}
		for _, ns := range cfg.Namespaces {
			stackWild = append(stackWild, fmt.Sprintf("Resource::arn:<AWS::Partition>:cloudformation:<AWS::Region>:<AWS::AccountId>:stack/%s-*/*", ns))
		}
		cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{
			{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String("A GitHub job's role writes only the keys of its step of review (plans/NAME.zip, approvals/NAME.zip, approvals/NAME/PLAN_ID) " +
				"and reads the plan and run documents it follows; deployment names and plan ids are chosen at run time, so the keys end in wildcards."), AppliesTo: ptr(wild)},
			{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String("The CLI reads the events of the stacks of the namespaces configured in cairn:namespaces (NAMESPACE-*) while it follows a run; " +
				"the trailing /* is the stack's unique id."), AppliesTo: ptr(stackWild)},
			{Id: jsii.String("AwsSolutions-IAM5"), Reason: jsii.String("cloudformation:ListExports, read-only, finds cairn's bucket (the export cairn-bucket-name) and supports no resource-level permissions."),
				AppliesTo: &[]interface{}{"Resource::*"}},
		}, jsii.Bool(true))
		output(stack, r.output, role.RoleArn(), "", "role-to-assume of the "+r.job+" job of "+g.Repo+"'s workflow (OIDC subject "+r.sub+")")
	}
}
