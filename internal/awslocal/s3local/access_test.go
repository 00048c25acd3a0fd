package s3local

import (
	"testing"
)

// TestDeniedBy: the explicit Deny statements of a bucket policy as IAM evaluates them, for
// the principals, actions, resources and conditions the emulator knows; a condition on a
// key it cannot evaluate never refuses.
func TestDeniedBy(t *testing.T) {
	role := request{principalARN: "arn:aws:iam::111122223333:role/cairn-policy", account: "111122223333", action: "s3:PutObject", resource: "arn:aws:s3:::b/policies/a.rego"}
	other := role
	other.principalARN = "arn:aws:iam::111122223333:role/cairn-deployer"
	root := role
	root.principalARN, root.root = "arn:aws:iam::111122223333:root", true
	stranger := other
	stranger.account = "444455556666"
	deny := func(body string) string { return `{"Statement":[{"Effect":"Deny",` + body + `}]}` }
	for _, tc := range []struct {
		name, policy string
		q            request
		want         bool
	}{
		{"ArnNotEquals names every other principal", deny(`"Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::b/policies/*","Condition":{"ArnNotEquals":{"aws:PrincipalArn":"arn:aws:iam::111122223333:role/cairn-policy"}}`), other, true},
		{"ArnNotEquals spares the named role", deny(`"Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::b/policies/*","Condition":{"ArnNotEquals":{"aws:PrincipalArn":"arn:aws:iam::111122223333:role/cairn-policy"}}`), role, false},
		{"the root is not spared", deny(`"Principal":{"AWS":"*"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::b/policies/*","Condition":{"ArnNotEquals":{"aws:PrincipalArn":"arn:aws:iam::111122223333:role/cairn-policy"}}`), root, true},
		{"ArnNotLike with a wildcard", deny(`"Principal":"*","Action":"s3:Put*","Resource":"arn:aws:s3:::b/*","Condition":{"ArnNotLike":{"aws:PrincipalArn":"arn:aws:iam::*:role/cairn-pol*"}}`), role, false},
		{"ArnNotLike, another role", deny(`"Principal":"*","Action":"s3:Put*","Resource":"arn:aws:s3:::b/*","Condition":{"ArnNotLike":{"aws:PrincipalArn":"arn:aws:iam::*:role/cairn-pol*"}}`), other, true},
		{"StringNotEquals on the account", deny(`"Principal":"*","Action":"s3:*","Resource":"*","Condition":{"StringNotEquals":{"aws:PrincipalAccount":"111122223333"}}`), stranger, true},
		{"StringNotEquals, the account itself", deny(`"Principal":"*","Action":"s3:*","Resource":"*","Condition":{"StringNotEquals":{"aws:PrincipalAccount":"111122223333"}}`), other, false},
		{"IfExists is the same for keys always present", deny(`"Principal":"*","Action":"s3:PutObject","Resource":"*","Condition":{"ArnNotEqualsIfExists":{"aws:PrincipalArn":["arn:aws:iam::111122223333:role/cairn-policy"]}}`), other, true},
		{"NotPrincipal spares who it names", deny(`"NotPrincipal":{"AWS":"arn:aws:iam::111122223333:role/cairn-policy"},"Action":"s3:PutObject","Resource":"*"`), role, false},
		{"NotPrincipal denies the others", deny(`"NotPrincipal":{"AWS":"arn:aws:iam::111122223333:role/cairn-policy"},"Action":"s3:PutObject","Resource":"*"`), other, true},
		{"another action", deny(`"Principal":"*","Action":["s3:DeleteObject"],"Resource":"*"`), other, false},
		{"actions are case-insensitive", deny(`"Principal":"*","Action":"S3:PUTOBJECT","Resource":"*"`), other, true},
		{"NotAction", deny(`"Principal":"*","NotAction":"s3:Get*","Resource":"*"`), other, true},
		{"another resource", deny(`"Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::b/plans/*"`), other, false},
		{"NotResource", deny(`"Principal":"*","Action":"s3:*","NotResource":"arn:aws:s3:::b/plans/*"`), other, true},
		{"a principal of another account", deny(`"Principal":{"AWS":"444455556666"},"Action":"s3:*","Resource":"*"`), other, false},
		{"the account's root names its principals", deny(`"Principal":{"AWS":"arn:aws:iam::111122223333:root"},"Action":"s3:*","Resource":"*"`), other, true},
		{"a key the emulator cannot evaluate", deny(`"Principal":"*","Action":"s3:*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":"false"}}`), other, false},
		{"an Allow refuses nothing", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*"}]}`, other, false},
		{"one statement, not a list", `{"Statement":{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"*"}}`, other, true},
		{"no policy", ``, other, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := deniedBy(tc.policy, tc.q); got != tc.want {
				t.Errorf("deniedBy = %v, want %v\npolicy %s\nrequest %+v", got, tc.want, tc.policy, tc.q)
			}
		})
	}
	// The bucket owner's root may always change the bucket policy, as in S3.
	q := root
	q.action, q.resource = "s3:PutBucketPolicy", "arn:aws:s3:::b"
	if deniedBy(deny(`"Principal":"*","Action":"s3:*","Resource":"*"`), q) {
		t.Error("the root is refused PutBucketPolicy")
	}
	q.root, q.principalARN = false, other.principalARN
	if !deniedBy(deny(`"Principal":"*","Action":"s3:*","Resource":"*"`), q) {
		t.Error("a role is allowed PutBucketPolicy against a Deny")
	}
}
