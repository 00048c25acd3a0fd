package awslocal_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

// modelScenarios grow the differential suite where it was thin (Secrets Manager, SSM, KMS,
// EventBridge, Lambda, IAM): refusals AWS's API references document, several of them the
// limits of the API models that the SDK does not check on the client (lengths, ranges,
// enums, patterns, list sizes) and the emulator now checks before its handler runs. Each
// want is what the operation's API reference says; where moto differs, the reason is in
// modelMotoDeviations.
func modelScenarios() []documented {
	return []documented{
		// --- Secrets Manager ---
		{scenario{"secretsmanager", "GetSecretValue of a missing secret", func(ctx context.Context, t target) (string, error) {
			_, err := t.secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("dm/missing")})
			return code(err) + " " + status(err), nil
		}}, "ResourceNotFoundException 400",
			"https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html (ResourceNotFoundException, HTTP 400)"},
		{scenario{"secretsmanager", "CreateSecret of a name in use", func(ctx context.Context, t target) (string, error) {
			// two inputs: the SDK fills in ClientRequestToken, and a request of the same token
			// and value is the same request, which Secrets Manager ignores
			if _, err := t.secrets.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("dm/twice"), SecretString: aws.String("v")}); err != nil {
				return "", err
			}
			_, err := t.secrets.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("dm/twice"), SecretString: aws.String("w")})
			return code(err) + " " + status(err), nil
		}}, "ResourceExistsException 400",
			"https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_CreateSecret.html (ResourceExistsException: \"A resource with the ID you requested already exists\")"},
		{scenario{"secretsmanager", "a name over 512 characters", func(ctx context.Context, t target) (string, error) {
			_, err := t.secrets.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(strings.Repeat("n", 513)), SecretString: aws.String("v")})
			return code(err) + " " + status(err), nil
		}}, "ValidationException 400",
			"https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_CreateSecret.html (Name: \"Length Constraints: Minimum length of 1. Maximum length of 512\"; the common ValidationException)"},
		// --- SSM ---
		{scenario{"ssm", "GetParameter of a missing parameter", func(ctx context.Context, t target) (string, error) {
			_, err := t.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/dm/missing")})
			return code(err) + " " + status(err), nil
		}}, "ParameterNotFound 400",
			"https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParameter.html (ParameterNotFound, HTTP 400)"},
		{scenario{"ssm", "PutParameter of a name in use without Overwrite", func(ctx context.Context, t target) (string, error) {
			in := &ssm.PutParameterInput{Name: aws.String("/dm/twice"), Value: aws.String("v"), Type: ssmtypes.ParameterTypeString}
			if _, err := t.ssm.PutParameter(ctx, in); err != nil {
				return "", err
			}
			_, err := t.ssm.PutParameter(ctx, in)
			return code(err) + " " + status(err), nil
		}}, "ParameterAlreadyExists 400",
			"https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html (ParameterAlreadyExists: \"The parameter already exists. You can't create duplicate parameters\")"},
		{scenario{"ssm", "GetParameters of eleven names", func(ctx context.Context, t target) (string, error) {
			names := make([]string, 11)
			for i := range names {
				names[i] = fmt.Sprintf("/dm/p%d", i)
			}
			_, err := t.ssm.GetParameters(ctx, &ssm.GetParametersInput{Names: names})
			return code(err) + " " + status(err), nil
		}}, "ValidationException 400",
			"https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParameters.html (Names: \"Array Members: Minimum number of 1 item. Maximum number of 10 items\")"},
		{scenario{"ssm", "PutParameter of an unknown type", func(ctx context.Context, t target) (string, error) {
			_, err := t.ssm.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/dm/typed"), Value: aws.String("v"), Type: ssmtypes.ParameterType("Strin")})
			return code(err) + " " + status(err), nil
		}}, "ValidationException 400",
			"https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html (Type: \"Valid Values: String | StringList | SecureString\")"},
		// --- KMS ---
		{scenario{"kms", "DescribeKey of a missing key", func(ctx context.Context, t target) (string, error) {
			_, err := t.kms.DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String("11111111-2222-3333-4444-555555555555")})
			return code(err) + " " + status(err), nil
		}}, "NotFoundException 400",
			"https://docs.aws.amazon.com/kms/latest/APIReference/API_DescribeKey.html (NotFoundException, HTTP 400)"},
		{scenario{"kms", "Encrypt of more than 4096 bytes", func(ctx context.Context, t target) (string, error) {
			k, err := t.kms.CreateKey(ctx, &kms.CreateKeyInput{})
			if err != nil {
				return "", err
			}
			_, err = t.kms.Encrypt(ctx, &kms.EncryptInput{KeyId: k.KeyMetadata.KeyId, Plaintext: make([]byte, 4097)})
			return code(err) + " " + status(err), nil
		}}, "ValidationException 400",
			"https://docs.aws.amazon.com/kms/latest/APIReference/API_Encrypt.html (Plaintext: \"Length Constraints: Minimum length of 1. Maximum length of 4096\")"},
		{scenario{"kms", "ListKeys with a Limit of 1001", func(ctx context.Context, t target) (string, error) {
			_, err := t.kms.ListKeys(ctx, &kms.ListKeysInput{Limit: aws.Int32(1001)})
			return code(err) + " " + status(err), nil
		}}, "ValidationException 400",
			"https://docs.aws.amazon.com/kms/latest/APIReference/API_ListKeys.html (Limit: \"Valid Range: Minimum value of 1. Maximum value of 1000\")"},
		// --- EventBridge ---
		{scenario{"events", "DescribeRule of a missing rule", func(ctx context.Context, t target) (string, error) {
			_, err := t.events.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String("dm-missing")})
			return code(err) + " " + status(err), nil
		}}, "ResourceNotFoundException 400",
			"https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_DescribeRule.html (ResourceNotFoundException, HTTP 400)"},
		{scenario{"events", "a rule name outside the pattern", func(ctx context.Context, t target) (string, error) {
			_, err := t.events.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("dm bad name"), EventPattern: aws.String(`{"source":["dm"]}`)})
			return code(err) + " " + status(err), nil
		}}, "ValidationException 400",
			"https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutRule.html (Name: \"Pattern: [\\.\\-_A-Za-z0-9]+\")"},
		{scenario{"events", "PutEvents of eleven entries", func(ctx context.Context, t target) (string, error) {
			entries := make([]ebtypes.PutEventsRequestEntry, 11)
			for i := range entries {
				entries[i] = ebtypes.PutEventsRequestEntry{Source: aws.String("dm.many"), DetailType: aws.String("d"), Detail: aws.String(`{}`)}
			}
			_, err := t.events.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries})
			return code(err) + " " + status(err), nil
		}}, "ValidationException 400",
			"https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html (Entries: \"Array Members: Minimum number of 1 item. Maximum number of 10 items\")"},
		// --- Lambda ---
		{scenario{"lambda", "Invoke of a missing function", func(ctx context.Context, t target) (string, error) {
			_, err := t.lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("dm-missing"), Payload: []byte(`{}`)})
			return code(err) + " " + status(err), nil
		}}, "ResourceNotFoundException 404",
			"https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html (ResourceNotFoundException, HTTP 404)"},
		{scenario{"lambda", "GetFunctionConfiguration of a missing function", func(ctx context.Context, t target) (string, error) {
			_, err := t.lambda.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("dm-missing")})
			return code(err) + " " + status(err), nil
		}}, "ResourceNotFoundException 404",
			"https://docs.aws.amazon.com/lambda/latest/api/API_GetFunctionConfiguration.html (ResourceNotFoundException, HTTP 404)"},
		{scenario{"lambda", "GetFunction of a missing function by ARN", func(ctx context.Context, t target) (string, error) {
			_, err := t.lambda.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String("arn:aws:lambda:us-east-1:123456789012:function:dm-missing")})
			return code(err) + " " + status(err), nil
		}}, "ResourceNotFoundException 404",
			"https://docs.aws.amazon.com/lambda/latest/api/API_GetFunction.html (FunctionName: a name or an ARN; ResourceNotFoundException, HTTP 404)"},
		{scenario{"lambda", "GetFunction of a name over 256 characters", func(ctx context.Context, t target) (string, error) {
			_, err := t.lambda.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String(strings.Repeat("f", 257))})
			return code(err) + " " + status(err), nil
		}}, "ValidationException 400",
			"https://docs.aws.amazon.com/lambda/latest/api/API_GetFunction.html (FunctionName: \"Length Constraints: Minimum length of 1. Maximum length of 256\"; the common ValidationException)"},
		// --- IAM ---
		{scenario{"iam", "GetUser of a missing user", func(ctx context.Context, t target) (string, error) {
			_, err := t.iam.GetUser(ctx, &iam.GetUserInput{UserName: aws.String("dm-missing")})
			return code(err) + " " + status(err), nil
		}}, "NoSuchEntity 404",
			"https://docs.aws.amazon.com/IAM/latest/APIReference/API_GetUser.html (NoSuchEntity, HTTP 404)"},
		{scenario{"iam", "GetRole of a name over 64 characters", func(ctx context.Context, t target) (string, error) {
			_, err := t.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(strings.Repeat("r", 65))})
			return code(err) + " " + status(err), nil
		}}, "ValidationError 400",
			"https://docs.aws.amazon.com/IAM/latest/APIReference/API_GetRole.html (RoleName: \"Length Constraints: Minimum length of 1. Maximum length of 64\"; the common ValidationError)"},
		{scenario{"iam", "GetRole of a name outside the pattern", func(ctx context.Context, t target) (string, error) {
			_, err := t.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("bad name")})
			return code(err) + " " + status(err), nil
		}}, "ValidationError 400",
			"https://docs.aws.amazon.com/IAM/latest/APIReference/API_GetRole.html (RoleName: \"Pattern: [\\w+=,.@-]+\")"},
	}
}

// modelMotoDeviations says why moto differs from AWS on modelScenarios, by service/scenario.
var modelMotoDeviations = map[string]string{
	"secretsmanager/GetSecretValue of a missing secret": "moto answers ResourceNotFoundException with HTTP 404; Secrets Manager's reference gives 400",
	"secretsmanager/a name over 512 characters":         "moto creates a secret of a 513-character name",
	"kms/ListKeys with a Limit of 1001":                 "moto accepts a Limit beyond 1000",
	"events/a rule name outside the pattern":            "moto creates a rule whose name has spaces",
	"lambda/GetFunction of a name over 256 characters":  "moto looks the function up (ResourceNotFoundException 404) instead of refusing the name",
	"iam/GetRole of a name over 64 characters":          "moto looks the role up (NoSuchEntity 404) instead of refusing the name",
	"iam/GetRole of a name outside the pattern":         "moto looks the role up (NoSuchEntity 404) instead of refusing the name",
}
