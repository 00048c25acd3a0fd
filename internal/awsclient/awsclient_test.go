package awsclient

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

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

// TestFromEnvironment: a function's configuration comes from what Lambda sets alone: its
// region, its role's credentials, an endpoint override when set, and Load's retries and
// checksum settings; missing credentials are named.
func TestFromEnvironment(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "token")
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
	cfg, err := FromEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	creds, err := cfg.Credentials.Retrieve(t.Context())
	if err != nil || creds.AccessKeyID != "ASIAEXAMPLE" || creds.SecretAccessKey != "secret" || creds.SessionToken != "token" {
		t.Errorf("credentials %+v, %v", creds, err)
	}
	if cfg.Region != "eu-west-1" || cfg.BaseEndpoint == nil || *cfg.BaseEndpoint != "http://127.0.0.1:4566" {
		t.Errorf("region %q, endpoint %v", cfg.Region, cfg.BaseEndpoint)
	}
	if cfg.Retryer().MaxAttempts() != MaxAttempts || cfg.RequestChecksumCalculation != aws.RequestChecksumCalculationWhenRequired {
		t.Errorf("retries %d, checksums %v", cfg.Retryer().MaxAttempts(), cfg.RequestChecksumCalculation)
	}
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	if cfg, _ := FromEnvironment(); cfg.Region != "us-east-1" || cfg.BaseEndpoint != nil {
		t.Errorf("without region or endpoint: %q, %v", cfg.Region, cfg.BaseEndpoint)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	if _, err := FromEnvironment(); err == nil || !strings.Contains(err.Error(), "AWS_SECRET_ACCESS_KEY") {
		t.Errorf("without credentials: %v", err)
	}
}
