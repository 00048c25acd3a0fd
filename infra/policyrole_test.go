package main

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	layout "github.com/cairn-dev/cairn/internal/bucket"
)

// resolved is a template value with every intrinsic rendered by flat, as plain JSON.
func resolved(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k := range t {
			if k == "Ref" || strings.HasPrefix(k, "Fn::") {
				return flat(t)
			}
		}
		out := map[string]interface{}{}
		for k, e := range t {
			out[k] = resolved(e)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, e := range t {
			out[i] = resolved(e)
		}
		return out
	}
	return v
}

// asJSON is v as encoding/json reads it back: the form the template's values have.
func asJSON(t *testing.T, v interface{}) interface{} {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out interface{}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// guardedKeys are keys of the team's policies and of overrides.
var guardedKeys = []string{"policies/evil.rego", "policies/team/data.json", "policy-overrides/shop/20261201-120004-7c1d09aa/cairn.s3_public.json"}

// TestPolicyRole: the stack makes the policy role, trusted by its account (or by exactly
// cairn:policyAdmins), allowed to write policies/ and policy-overrides/ and nothing else;
// the bucket policy holds bucket.WriteGuard's statement, verbatim, naming that role; no
// other role of cairn (the functions', the GitHub jobs') may write a guarded key; cdk-nag
// passes and the role's ARN is an output.
func TestPolicyRole(t *testing.T) {
	dir := t.TempDir()
	admins := []string{"arn:aws:iam::123456789012:role/platform-admins", "arn:aws:iam::123456789012:user/ops"}
	for _, tc := range []struct {
		name  string
		ctx   map[string]interface{}
		trust []string
	}{
		{"trusted by its account", nil, []string{"arn:<AWS::Partition>:iam::<AWS::AccountId>:root"}},
		{"trusted by cairn:policyAdmins", map[string]interface{}{ctxPolicyAdmins: strings.Join(admins, ",")}, admins},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := map[string]interface{}{ctxNamespaces: "shop", ctxLambdaDir: lambdaDir(t, dir), ctxGitHub: "shop/infra"}
			for k, v := range tc.ctx {
				ctx[k] = v
			}
			s := synth(t, ctx, dir)
			for _, e := range s.nagErrors {
				t.Errorf("cdk-nag: %s", e)
			}
			bucket := s.id(t, "AWS::S3::Bucket", "Bucket")
			role := s.id(t, "AWS::IAM::Role", "PolicyRole")

			trust := list(props(s.resources[role])["AssumeRolePolicyDocument"].(map[string]interface{})["Statement"])
			var principals []string
			for _, st := range trust {
				m := st.(map[string]interface{})
				if m["Effect"] != "Allow" || m["Action"] != "sts:AssumeRole" || m["Condition"] != nil {
					t.Errorf("trust statement %v", m)
				}
				principals = append(principals, flatList(m["Principal"].(map[string]interface{})["AWS"])...)
			}
			slices.Sort(principals)
			if !slices.Equal(principals, tc.trust) {
				t.Errorf("the policy role trusts %v, want exactly %v", principals, tc.trust)
			}

			keys := append(append([]string{}, guardedKeys...), "plans/shop.zip", "deployments/shop.zip", "approvals/shop/20261201-120004-7c1d09aa", "plans/shop/20261201-120004-7c1d09aa.json", "state/shop/shop.json")
			if got := writableKeys(s.grants(t, "PolicyRole"), bucket, keys); !slices.Equal(got, guardedKeys) {
				t.Errorf("the policy role may write %v, want exactly %v", got, guardedKeys)
			}
			for _, g := range s.grants(t, "PolicyRole") {
				action, _, _ := strings.Cut(g, " ")
				if !slices.Contains([]string{"s3:PutObject", "s3:DeleteObject", "s3:GetObject", "s3:ListBucket", "cloudformation:ListExports"}, action) {
					t.Errorf("the policy role is allowed %s", g)
				}
			}
			for id := range s.ofType("AWS::IAM::Role") {
				if id == role {
					continue
				}
				prefix := strings.TrimRight(id, "0123456789ABCDEF")
				if got := writableKeys(s.grants(t, prefix), bucket, guardedKeys); len(got) > 0 {
					t.Errorf("role %s may write %v", id, got)
				}
			}
			for _, st := range s.statements() {
				if st.effect == "Allow" && (slices.Contains(st.actions, "sts:AssumeRole") || slices.Contains(st.actions, "sts:*")) && slices.Contains(st.resources, "<"+role+".Arn>") {
					t.Errorf("%s may assume the policy role: %v", st.where, st.raw)
				}
			}

			var guards []interface{}
			for _, st := range s.statements() {
				if s.resources[st.where]["Type"] == "AWS::S3::BucketPolicy" && st.sid == layout.GuardSid {
					guards = append(guards, resolved(st.raw))
				}
			}
			want := asJSON(t, layout.WriteGuard("<"+bucket+".Arn>", "<"+role+".Arn>"))
			if len(guards) != 1 || !reflect.DeepEqual(guards[0], want) {
				got, _ := json.Marshal(guards)
				w, _ := json.Marshal(want)
				t.Errorf("the bucket policy's guard:\n%s\nwant exactly bucket.WriteGuard's:\n%s", got, w)
			}
			out, _ := s.outputs["PolicyRoleArn"].(map[string]interface{})
			if flat(out["Value"]) != "<"+role+".Arn>" {
				t.Errorf("output PolicyRoleArn: %v, want the role's ARN", out)
			}
		})
	}
}

func TestPolicyAdminsContext(t *testing.T) {
	for _, tt := range []struct {
		name    string
		v       interface{}
		want    []string
		wantErr string
	}{
		{"unset", nil, nil, ""},
		{"a list, sorted", []interface{}{"arn:aws:iam::123456789012:user/ops", "111122223333", "arn:aws:iam::123456789012:root"},
			[]string{"111122223333", "arn:aws:iam::123456789012:root", "arn:aws:iam::123456789012:user/ops"}, ""},
		{"a string", "arn:aws:iam::123456789012:role/platform/admins", []string{"arn:aws:iam::123456789012:role/platform/admins"}, ""},
		{"a wildcard", "arn:aws:iam::123456789012:role/*", nil, `context cairn:policyAdmins: "arn:aws:iam::123456789012:role/*" is not a principal the policy role can trust`},
		{"everyone", "*", nil, `"*" is not a principal the policy role can trust`},
		{"a service", "cloudformation.amazonaws.com", nil, "is not a principal the policy role can trust"},
		{"twice", "111122223333,111122223333", nil, `"111122223333" is listed twice`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := LoadConfig(ctxMap{ctxNamespaces: "shop", ctxPolicyAdmins: tt.v})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadConfig = %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.PolicyAdmins, tt.want) {
				t.Errorf("PolicyAdmins = %v, want %v", cfg.PolicyAdmins, tt.want)
			}
		})
	}
}
