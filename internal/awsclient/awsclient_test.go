package awsclient

import "testing"

func TestStackName(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"arn:aws:cloudformation:us-east-1:123456789012:stack/shop-app/5b0f3f20-6a1f-11f0-9c2b-0affd3a1e5b1", "shop-app"},
		{"arn:aws:cloudformation:eu-west-1:123456789012:stack/shop-web", "shop-web"},
		{"shop-app", "shop-app"},
		{"", ""},
	} {
		if got := StackName(tc.id); got != tc.want {
			t.Errorf("StackName(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
}
