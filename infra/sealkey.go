package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"
)

// newSealKey makes the seal key.
func newSealKey(stack awscdk.Stack) awskms.Key {
	// The seal key: what cairn stores of a secret (a NoEcho value, a SecureString, a
	// secret output) in its bucket is a MAC under a key derived from this KMS HMAC key,
	// so the readers of the bucket cannot test a guessed secret against it (package
	// seal). Only the deployer's role may make MACs with it (GenerateMac, below); the
	// account administers the key but is not granted its use. Retained with the stack:
	// the seals recorded in the persistent graphs were made with it.
	return awskms.NewKey(stack, jsii.String("SealKey"), &awskms.KeyProps{
		Description:   jsii.String("cairn: seals of secrets in cairn's bucket (HMAC; used by the deployer only)"),
		KeySpec:       awskms.KeySpec_HMAC_256,
		KeyUsage:      awskms.KeyUsage_GENERATE_VERIFY_MAC,
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
		Policy: awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &[]awsiam.PolicyStatement{
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:        jsii.String("KeyAdministration"),
				Principals: &[]awsiam.IPrincipal{awsiam.NewAccountRootPrincipal()},
				Actions:    jsii.Strings(sealKeyAdminActions...),
				Resources:  jsii.Strings("*"),
			}),
		}}),
	})
}
