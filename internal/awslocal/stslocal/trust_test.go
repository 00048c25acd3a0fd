package stslocal

import "testing"

func TestAdmits(t *testing.T) {
	plain := Caller{Account: "000000000000"}
	other := Caller{Account: "333333333333"}
	deployer := Caller{Account: "000000000000", Session: &Session{Account: "000000000000", RoleARN: "arn:aws:iam::000000000000:role/cairn-deployer-us-east-1", Name: "cairn-run"}}
	drift := Caller{Account: "000000000000", Session: &Session{Account: "000000000000", RoleARN: "arn:aws:iam::000000000000:role/cairn-drift-us-east-1", Name: "cairn-sweep"}}
	const byCondition = `{"Statement":{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:root"},"Action":["sts:AssumeRole"],
	  "Condition":{"ArnEquals":{"aws:PrincipalArn":["arn:aws:iam::000000000000:role/cairn-deployer-us-east-1"]}}}}`
	tests := []struct {
		name, trust string
		caller      Caller
		externalID  string
		want        bool
	}{
		{"account id admits its plain credentials", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"000000000000"},"Action":"sts:AssumeRole"}]}`, plain, "", true},
		{"account id refuses another account", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"000000000000"},"Action":"sts:AssumeRole"}]}`, other, "", false},
		{"root admits the account's sessions", `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:root"},"Action":"sts:AssumeRole"}]}`, deployer, "", true},
		{"principal ARN condition admits that role's sessions", byCondition, deployer, "", true},
		{"principal ARN condition refuses another role's sessions", byCondition, drift, "", false},
		{"principal ARN condition admits the account's plain credentials", byCondition, plain, "", true},
		{"principal ARN condition refuses another account", byCondition, other, "", false},
		{"ArnLike matches a pattern", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"000000000000"},"Action":"sts:AssumeRole",
		  "Condition":{"ArnLike":{"aws:PrincipalArn":"arn:aws:iam::000000000000:role/cairn-*"}}}}`, drift, "", true},
		{"role principal admits its sessions only", `{"Statement":{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::000000000000:role/cairn-drift-us-east-1"]},"Action":"sts:AssumeRole"}}`, deployer, "", false},
		{"deny wins", `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"*"},{"Effect":"Deny","Principal":{"AWS":"000000000000"},"Action":"sts:AssumeRole"}]}`, plain, "", false},
		{"another action", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"000000000000"},"Action":"sts:TagSession"}}`, plain, "", false},
		{"external id required and given", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"000000000000"},"Action":"sts:AssumeRole","Condition":{"StringEquals":{"sts:ExternalId":"x1"}}}}`, plain, "x1", true},
		{"external id required and wrong", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"000000000000"},"Action":"sts:AssumeRole","Condition":{"StringEquals":{"sts:ExternalId":"x1"}}}}`, plain, "x2", false},
		{"an unknown condition key never admits", `{"Statement":{"Effect":"Allow","Principal":{"AWS":"000000000000"},"Action":"sts:AssumeRole","Condition":{"Bool":{"aws:MultiFactorAuthPresent":"true"}}}}`, plain, "", false},
		{"a service principal is no caller", `{"Statement":{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}}`, plain, "", false},
		{"not JSON", `{`, plain, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Admits(tc.trust, tc.caller, tc.externalID); got != tc.want {
				t.Errorf("Admits = %v, want %v", got, tc.want)
			}
		})
	}
}
