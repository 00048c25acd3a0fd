package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// iamMatch is IAM's matching of a resource pattern: * any characters ('/' too), ? one.
func iamMatch(pattern, s string) bool {
	re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(pattern)) + "$"
	return regexp.MustCompile(re).MatchString(s)
}

// writableKeys are the keys of keys that some s3:PutObject (or any other write) statement
// of the role allows, given its grants ("ACTION RESOURCE") and the bucket's logical id.
func writableKeys(grants []string, bucket string, keys []string) []string {
	var out []string
	for _, k := range keys {
		for _, g := range grants {
			action, resource, _ := strings.Cut(g, " ")
			if !strings.HasPrefix(action, "s3:") || strings.HasPrefix(action, "s3:Get") || strings.HasPrefix(action, "s3:List") {
				continue
			}
			if p, ok := strings.CutPrefix(resource, "<"+bucket+".Arn>/"); ok && iamMatch(p, k) || resource == "*" {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// TestGitHubRoles: with cairn:github, the stack makes GitHub's OIDC provider and one role
// per job of the documented workflow, each trusted by exactly its subject (and audience
// sts.amazonaws.com): the plan role, which any pull request's job gets whatever workflow
// file its branch holds, can write plans/NAME.zip and nothing else — not approvals/, not
// deployments/, not a plan document; the apply role approvals/NAME.zip and plans/NAME.zip,
// never an approval of a plan; the gate's role approvals/NAME/PLAN_ID only. cdk-nag passes,
// and the role ARNs are outputs.
func TestGitHubRoles(t *testing.T) {
	dir := t.TempDir()
	s := synth(t, map[string]interface{}{ctxNamespaces: "shop", ctxLambdaDir: lambdaDir(t, dir), ctxGitHub: "shop/infra"}, dir)
	for _, e := range s.nagErrors {
		t.Errorf("cdk-nag: %s", e)
	}
	bucket := s.id(t, "AWS::S3::Bucket", "Bucket")
	providers := s.ofType("AWS::IAM::OIDCProvider")
	if len(providers) != 1 {
		t.Fatalf("OIDC providers: %v, want one", providers)
	}
	var provider string
	for id, p := range providers {
		provider = id
		if u := props(p)["Url"]; u != "https://token.actions.githubusercontent.com" || !slices.Equal(flatList(props(p)["ClientIdList"]), []string{"sts.amazonaws.com"}) {
			t.Errorf("the provider: %v", props(p))
		}
	}

	keys := []string{
		"plans/shop.zip", "approvals/shop.zip", "approvals/shop/20261201-120004-7c1d09aa", "deployments/shop.zip",
		"plans/shop/20261201-120004-7c1d09aa.json", "plans/shop/20261201-120004-7c1d09aa.md", "state/shop/shop.json",
		"locks/shop/shop.lock", "runs/shop/20261201-120004-7c1d09aa.json", "templates/0123.json", "assets/0123.zip",
		// Only the policy role writes the team's policies and overrides (TestPolicyRole).
		"policies/evil.rego", "policy-overrides/shop/20261201-120004-7c1d09aa/cairn.s3_public.json",
	}
	for _, r := range []struct {
		role, sub, output string
		writes            []string
	}{
		{"GitHubPlanRole", "repo:shop/infra:pull_request", "GitHubPlanRoleArn", []string{"plans/shop.zip"}},
		{"GitHubApplyRole", "repo:shop/infra:environment:production-apply", "GitHubApplyRoleArn", []string{"plans/shop.zip", "approvals/shop.zip"}},
		{"GitHubApproveRole", "repo:shop/infra:environment:production", "GitHubApproveRoleArn", []string{"approvals/shop/20261201-120004-7c1d09aa"}},
	} {
		t.Run(r.role, func(t *testing.T) {
			id := s.id(t, "AWS::IAM::Role", r.role)
			trust := props(s.resources[id])["AssumeRolePolicyDocument"].(map[string]interface{})
			sts := list(trust["Statement"])
			if len(sts) != 1 {
				t.Fatalf("trust: %v, want one statement", trust)
			}
			st := sts[0].(map[string]interface{})
			principal, _ := st["Principal"].(map[string]interface{})
			cond, _ := st["Condition"].(map[string]interface{})
			want := map[string]interface{}{"token.actions.githubusercontent.com:aud": "sts.amazonaws.com", "token.actions.githubusercontent.com:sub": r.sub}
			if st["Effect"] != "Allow" || st["Action"] != "sts:AssumeRoleWithWebIdentity" || flat(principal["Federated"]) != "<"+provider+".Arn>" ||
				len(cond) != 1 || !equalJSON(cond["StringEquals"], want) {
				t.Errorf("trust: %v; want sts:AssumeRoleWithWebIdentity by the provider on exactly StringEquals %v", st, want)
			}
			grants := s.grants(t, r.role)
			if got := writableKeys(grants, bucket, keys); !slices.Equal(got, r.writes) {
				t.Errorf("the role may write %v, want exactly %v; its grants:\n%s", got, r.writes, strings.Join(grants, "\n"))
			}
			for _, g := range grants {
				action, resource, _ := strings.Cut(g, " ")
				if strings.Contains(action, "*") || !slices.Contains([]string{"s3:PutObject", "s3:GetObject", "s3:ListBucket", "cloudformation:ListExports", "cloudformation:DescribeStackEvents"}, action) {
					t.Errorf("the role is allowed %s", g)
				}
				if action == "cloudformation:DescribeStackEvents" && resource != stackARNFlat("shop") {
					t.Errorf("the role is allowed %s, want the shop-* stacks only", g)
				}
			}
			if r.role == "GitHubPlanRole" {
				for _, g := range grants {
					if strings.Contains(g, "approvals/") || strings.Contains(g, "deployments/") || strings.Contains(g, "state/") {
						t.Errorf("the plan role is allowed %s", g)
					}
				}
			}
			out, _ := s.outputs[r.output].(map[string]interface{})
			if flat(out["Value"]) != "<"+id+".Arn>" {
				t.Errorf("output %s: %v, want the role's ARN", r.output, out)
			}
		})
	}
}

func equalJSON(a, b interface{}) bool {
	am, ok1 := a.(map[string]interface{})
	bm, ok2 := b.(map[string]interface{})
	if !ok1 || !ok2 || len(am) != len(bm) {
		return false
	}
	for k, v := range am {
		if bm[k] != v {
			return false
		}
	}
	return true
}

// TestGitHubRolesOfAnExistingProvider: with cairn:githubOidcProvider the roles trust that
// provider and the stack makes none (an account holds one per URL); other environments
// name the subjects.
func TestGitHubRolesOfAnExistingProvider(t *testing.T) {
	dir := t.TempDir()
	arn := "arn:aws:iam::123456789012:oidc-provider/token.actions.githubusercontent.com"
	s := synth(t, map[string]interface{}{ctxNamespaces: "shop", ctxLambdaDir: lambdaDir(t, dir), ctxGitHub: "Shop/Infra.git",
		ctxGitHubOIDCProvider: arn, ctxGitHubEnvironment: "prod", ctxGitHubApplyEnvironment: "prod-merge"}, dir)
	for _, e := range s.nagErrors {
		t.Errorf("cdk-nag: %s", e)
	}
	if p := s.ofType("AWS::IAM::OIDCProvider"); len(p) != 0 {
		t.Errorf("the stack makes a provider besides the one named: %v", p)
	}
	for role, sub := range map[string]string{"GitHubPlanRole": "repo:Shop/Infra.git:pull_request", "GitHubApplyRole": "repo:Shop/Infra.git:environment:prod-merge", "GitHubApproveRole": "repo:Shop/Infra.git:environment:prod"} {
		st := list(props(s.resources[s.id(t, "AWS::IAM::Role", role)])["AssumeRolePolicyDocument"].(map[string]interface{})["Statement"])[0].(map[string]interface{})
		if st["Principal"].(map[string]interface{})["Federated"] != arn || st["Condition"].(map[string]interface{})["StringEquals"].(map[string]interface{})["token.actions.githubusercontent.com:sub"] != sub {
			t.Errorf("%s trust: %v, want %s and sub %s", role, st, arn, sub)
		}
	}
}

// TestNoGitHubRolesWithoutContext: without cairn:github the stack makes no OIDC provider, no
// role a web identity may assume, and no GitHub output (the golden template, cdk.json's
// context, is unchanged too: TestGoldenTemplate).
func TestNoGitHubRolesWithoutContext(t *testing.T) {
	s := sharedStack(t)
	if p := s.ofType("AWS::IAM::OIDCProvider"); len(p) != 0 {
		t.Errorf("OIDC providers without %s: %v", ctxGitHub, p)
	}
	for id, r := range s.ofType("AWS::IAM::Role") {
		if strings.Contains(flat(props(r)["AssumeRolePolicyDocument"]), "WebIdentity") || strings.HasPrefix(id, "GitHub") {
			t.Errorf("role %s without %s: %v", id, ctxGitHub, props(r)["AssumeRolePolicyDocument"])
		}
	}
	for name := range s.outputs {
		if strings.HasPrefix(name, "GitHub") {
			t.Errorf("output %s without %s", name, ctxGitHub)
		}
	}
}

func TestGitHubContext(t *testing.T) {
	for _, tt := range []struct {
		name    string
		ctx     ctxMap
		want    GitHub
		wantErr string
	}{
		{"none", ctxMap{}, GitHub{}, ""},
		{"defaults", ctxMap{ctxGitHub: "shop/infra"}, GitHub{Repo: "shop/infra", Environment: "production", ApplyEnvironment: "production-apply"}, ""},
		{"all", ctxMap{ctxGitHub: "shop/infra", ctxGitHubEnvironment: "prod", ctxGitHubApplyEnvironment: "merge", ctxGitHubOIDCProvider: "arn:aws:iam::123456789012:oidc-provider/token.actions.githubusercontent.com"},
			GitHub{Repo: "shop/infra", Environment: "prod", ApplyEnvironment: "merge", OIDCProvider: "arn:aws:iam::123456789012:oidc-provider/token.actions.githubusercontent.com"}, ""},
		{"not a repository", ctxMap{ctxGitHub: "shop"}, GitHub{}, `context cairn:github: "shop" is not OWNER/REPO`},
		{"a wildcard", ctxMap{ctxGitHub: "shop/*"}, GitHub{}, `context cairn:github: "shop/*" is not OWNER/REPO`},
		{"an environment with a colon", ctxMap{ctxGitHub: "shop/infra", ctxGitHubEnvironment: "a:b"}, GitHub{}, "context cairn:githubEnvironment: \"a:b\" is not a GitHub environment name"},
		{"one environment for both", ctxMap{ctxGitHub: "shop/infra", ctxGitHubApplyEnvironment: "production"}, GitHub{}, "the apply job and the gate need environments of their own"},
		{"another provider", ctxMap{ctxGitHub: "shop/infra", ctxGitHubOIDCProvider: "arn:aws:iam::123456789012:oidc-provider/example.com"}, GitHub{}, "is not the ARN of GitHub's OIDC provider"},
		{"an environment without a repository", ctxMap{ctxGitHubEnvironment: "prod"}, GitHub{}, "context cairn:github is needed with"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.ctx[ctxNamespaces] = "shop"
			cfg, err := LoadConfig(tt.ctx)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadConfig = %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.GitHub != tt.want {
				t.Errorf("GitHub = %+v, want %+v", cfg.GitHub, tt.want)
			}
		})
	}
}
