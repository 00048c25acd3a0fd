package bucket

import (
	"strings"
	"testing"
)

func TestPolicyKeys(t *testing.T) {
	if got := PolicyKey("iam/regions.json"); got != "policies/iam/regions.json" {
		t.Errorf("PolicyKey = %s", got)
	}
	if got := PolicyOverrideKey("shop", "20261207-100000-aaaaaaaa", "cairn.s3_public"); got != "policy-overrides/shop/20261207-100000-aaaaaaaa/cairn.s3_public.json" {
		t.Errorf("PolicyOverrideKey = %s", got)
	}
	for rule, ok := range map[string]bool{
		"cairn.s3_public": true, "team.buckets": true, "p": true, "_x.y1": true,
		"": false, "../cairn.s3_public": false, "cairn/s3": false, "cairn..s3": false, "cairn.s3.": false, "1team": false,
		"cairn.s3 public": false, strings.Repeat("a", 201): false,
	} {
		if err := ValidRule(rule); (err == nil) != ok {
			t.Errorf("ValidRule(%q) = %v, want ok %v", rule, err, ok)
		}
	}
}

// TestWriteGuard: the statement denies every object write on exactly the two folders to
// everyone but the policy role.
func TestWriteGuard(t *testing.T) {
	st := WriteGuard("arn:aws:s3:::b", "arn:aws:iam::111122223333:role/p")
	if st["Effect"] != "Deny" || st["Sid"] != GuardSid {
		t.Fatalf("%v", st)
	}
	res := st["Resource"].([]any)
	if len(res) != 2 || res[0] != "arn:aws:s3:::b/policies/*" || res[1] != "arn:aws:s3:::b/policy-overrides/*" {
		t.Errorf("Resource %v", res)
	}
	cond := st["Condition"].(map[string]any)["ArnNotEquals"].(map[string]any)["aws:PrincipalArn"]
	if cond != "arn:aws:iam::111122223333:role/p" {
		t.Errorf("Condition %v", st["Condition"])
	}
	acts := st["Action"].([]any)
	for _, want := range []string{"s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:PutObjectAcl", "s3:PutObjectTagging"} {
		found := false
		for _, a := range acts {
			found = found || a == want
		}
		if !found {
			t.Errorf("Action lacks %s: %v", want, acts)
		}
	}
}
