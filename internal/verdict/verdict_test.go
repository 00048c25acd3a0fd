package verdict

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var at = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

func results() []Result {
	return []Result{
		{Level: Deny, Rule: "cairn.s3_public", Origin: "team", Msg: "bucket Site has the public ACL PublicRead", Stack: "web", Resource: "Site"},
		{Level: Deny, Rule: "cairn.s3_public", Origin: "team", Msg: "bucket Logs turns BlockPublicAcls off", Stack: "web", Resource: "Logs"},
		{Level: Deny, Rule: "shop.tags", Origin: "bundle", Msg: "bucket Site has no tags", Stack: "web", Resource: "Site"},
		{Level: Warn, Rule: "cairn.encryption", Origin: "team", Msg: "computed", Stack: "db"},
	}
}

// TestLift: an override lifts every denial of its rule and nothing else; an evaluation
// error stands whatever is overridden.
func TestLift(t *testing.T) {
	s3 := Override{Rule: "cairn.s3_public", Reason: "public site", By: "arn:aws:sts::1:assumed-role/policy/alice", At: at}
	tags := Override{Rule: "shop.tags", Reason: "tags come later", By: "arn:aws:sts::1:assumed-role/policy/bob", At: at}
	tests := []struct {
		name      string
		err       string
		overrides []Override
		denied    bool
		standing  []string // resources of the standing denials
		kept      []string // rules of the overrides kept
	}{
		{"no override", "", nil, true, []string{"Site", "Logs", "Site"}, nil},
		{"one rule lifted, every denial of it", "", []Override{s3}, true, []string{"Site"}, []string{"cairn.s3_public"}},
		{"both rules lifted", "", []Override{tags, s3}, false, nil, []string{"cairn.s3_public", "shop.tags"}},
		{"an override of a rule nothing denies lifts nothing", "", []Override{{Rule: "cairn.iam_wildcard", Reason: "x", By: "y"}, s3}, true, []string{"Site"}, []string{"cairn.s3_public"}},
		{"a warning's rule is not a denial", "", []Override{{Rule: "cairn.encryption", Reason: "x", By: "y"}}, true, []string{"Site", "Logs", "Site"}, nil},
		{"an error is never lifted", "team policy policies/a.rego:3: var x is unsafe", []Override{tags, s3, {Rule: ErrorRule, Reason: "x", By: "y"}}, true, nil, []string{"cairn.s3_public", "shop.tags"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judged(Plan, Answer{Results: results(), Error: tt.err}, at, tt.overrides)
			if v.Denied != tt.denied {
				t.Errorf("Denied = %v, want %v", v.Denied, tt.denied)
			}
			var standing, kept []string
			for _, r := range v.Standing() {
				standing = append(standing, r.Resource)
			}
			for _, o := range v.Overrides {
				kept = append(kept, o.Rule)
			}
			if strings.Join(standing, ",") != strings.Join(tt.standing, ",") || strings.Join(kept, ",") != strings.Join(tt.kept, ",") {
				t.Errorf("standing %v, overrides kept %v; want %v, %v", standing, kept, tt.standing, tt.kept)
			}
			if refusal := v.Refusal("shop", "p1"); (refusal != "") != tt.denied {
				t.Errorf("refusal %q with Denied %v", refusal, v.Denied)
			}
		})
	}
}

// TestRefusalNamesRuleStackResourceAndCommand: what `cairn approve` prints.
func TestRefusalNamesRuleStackResourceAndCommand(t *testing.T) {
	v := Judged(Plan, Answer{Results: results()}, at, []Override{{Rule: "shop.tags", Reason: "r", By: "b"}})
	got := v.Refusal("shop", "p1")
	want := "plan p1 of shop is denied by policy: " +
		"deny cairn.s3_public (team policy) stack web, resource Site: bucket Site has the public ACL PublicRead; " +
		"deny cairn.s3_public (team policy) stack web, resource Logs: bucket Logs turns BlockPublicAcls off; " +
		"fix the change and plan again, or have the policy owner override each rule for this plan: " +
		"`cairn policy override shop p1 cairn.s3_public --reason TEXT`"
	if got != want {
		t.Errorf("refusal:\n%s\nwant:\n%s", got, want)
	}
	failed := Failed(Push, at, errors.New("invoke cairn-policy: timeout"))
	if !failed.Denied || !strings.Contains(failed.PushRefusal("shop"), "policies could not be evaluated (invoke cairn-policy: timeout), which counts as a denial: nothing executed") {
		t.Errorf("a failed evaluation: %+v %q", failed, failed.PushRefusal("shop"))
	}
}

// TestDecodeOverride: what the policy role writes, and what it must not.
func TestDecodeOverride(t *testing.T) {
	tests := []struct {
		body, err string
	}{
		{`{"reason": "reviewed", "by": "arn:aws:iam::1:role/policy", "at": "2026-12-07T09:00:00Z"}`, ""},
		{`{"reason": "", "by": "arn"}`, "needs a reason and who wrote it"},
		{`{"reason": "r"}`, "needs a reason and who wrote it"},
		{`not json`, "not an override"},
	}
	for _, tt := range tests {
		o, err := DecodeOverride("cairn.s3_public", []byte(tt.body))
		if tt.err == "" && (err != nil || o.Rule != "cairn.s3_public" || !o.At.Equal(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))) {
			t.Errorf("%s: %+v, %v", tt.body, o, err)
		}
		if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: error %v, want %q", tt.body, err, tt.err)
		}
	}
}
