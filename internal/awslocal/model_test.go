package awslocal_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/awslocal/apimodel"
)

// TestModelValidation: a served operation whose top-level input breaks AWS's model of it
// is refused before its handler runs, as the service answers it; a request that keeps to
// the model reaches the handler. The requests are raw and signed with SigV4, since the
// SDK checks required members itself and would never send them. A sensitive value (a
// secret string, a parameter value) is never repeated.
func TestModelValidation(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet()})
	tab, err := apimodel.Load()
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.Repeat("s3cr3t", 10923) // 65538 characters: over SecretString's 65536
	for _, tc := range []struct {
		name, service, op string
		input             map[string]any
		status            int
		code              string
		message           string // the whole message, or with a trailing "..." its start
		queryError        string
	}{
		{"SSM: a required member missing", "ssm", "GetParameter", nil, 400, "ValidationException",
			"1 validation error detected: Value null at 'name' failed to satisfy constraint: Member must not be null", ""},
		{"SSM: a length and an enum, together", "ssm", "PutParameter",
			map[string]any{"Name": "", "Value": "v", "Type": "Strin"}, 400, "ValidationException",
			"2 validation errors detected: Value '' at 'name' failed to satisfy constraint: Member must have length greater than or equal to 1; " +
				"Value 'Strin' at 'type' failed to satisfy constraint: Member must satisfy enum value set: [String, StringList, SecureString]", ""},
		{"SSM: a valid request reaches the handler", "ssm", "GetParameter", map[string]any{"Name": "/app/missing"}, 400, "ParameterNotFound", "...", ""},
		{"Secrets Manager: a secret over 65536 characters, not repeated", "secretsmanager", "PutSecretValue",
			map[string]any{"SecretId": "app/db", "SecretString": secret}, 400, "ValidationException",
			"1 validation error detected: Value at 'secretString' failed to satisfy constraint: Member must have length less than or equal to 65536", ""},
		{"KMS: a required member missing", "kms", "DescribeKey", nil, 400, "ValidationException",
			"1 validation error detected: Value null at 'keyId' failed to satisfy constraint: Member must not be null", ""},
		{"EventBridge: a rule name outside the pattern", "events", "PutRule", map[string]any{"Name": "bad name!", "ScheduleExpression": "rate(5 minutes)"}, 400, "ValidationException",
			"1 validation error detected: Value 'bad name!' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\.\\-_A-Za-z0-9]+", ""},
		{"ECR: a repository name too short", "ecr", "CreateRepository", map[string]any{"repositoryName": "a"}, 400, "InvalidParameterException",
			"Invalid parameter at 'repositoryName' failed to satisfy constraint: 'Member must have length greater than or equal to 2'", ""},
		{"SQS: the queue URL missing", "sqs", "SendMessage", map[string]any{"MessageBody": "x"}, 400, "MissingParameter",
			"The request must contain the parameter QueueUrl.", "MissingParameter;Sender"},
		{"CloudFormation: a required member missing", "cloudformation", "DescribeStackResource", map[string]any{"StackName": "app"}, 400, "ValidationError",
			"1 validation error detected: Value null at 'logicalResourceId' failed to satisfy constraint: Member must not be null", ""},
		{"STS: a duration under 900 seconds", "sts", "AssumeRole",
			map[string]any{"RoleArn": "arn:aws:iam::000000000000:role/app", "RoleSessionName": "session", "DurationSeconds": 100}, 400, "ValidationError",
			"1 validation error detected: Value '100' at 'durationSeconds' failed to satisfy constraint: Member must have value greater than or equal to 900", ""},
		{"STS: the session name missing", "sts", "AssumeRole", map[string]any{"RoleArn": "arn:aws:iam::000000000000:role/app"}, 400, "ValidationError",
			"1 validation error detected: Value null at 'roleSessionName' failed to satisfy constraint: Member must not be null", ""},
		{"IAM: the role name missing", "iam", "GetRole", nil, 400, "ValidationError",
			"1 validation error detected: Value null at 'roleName' failed to satisfy constraint: Member must not be null", ""},
		{"IAM: a hostile role name is escaped, not echoed as markup", "iam", "GetRole", map[string]any{"RoleName": `a<b>&"c`}, 400, "ValidationError",
			"1 validation error detected: Value 'a<b>&\"c' at 'roleName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]+", ""},
		{"SNS: the topic name missing", "sns", "CreateTopic", nil, 400, "InvalidParameter",
			"Invalid parameter: Name Reason: 1 validation error detected: Value null at 'name' failed to satisfy constraint: Member must not be null", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tab.Service(tc.service)
			protocol := "json"
			if !m.Speaks("json") {
				protocol = "query"
			}
			a := call(t, v.e.URL(), m, protocol, tc.op, tc.input)
			if a.status != tc.status || a.code != tc.code {
				t.Fatalf("%s %s: answered %d %s %q, want %d %s", tc.service, tc.op, a.status, a.code, a.message, tc.status, tc.code)
			}
			if start, ok := strings.CutSuffix(tc.message, "..."); ok {
				if !strings.HasPrefix(a.message, start) {
					t.Errorf("message %q, want it to begin %q", a.message, start)
				}
			} else if a.message != tc.message {
				t.Errorf("message\n %q, want\n %q", a.message, tc.message)
			}
			if strings.Contains(a.message, "s3cr3t") {
				t.Errorf("the answer repeats a secret value: %.200s", a.message)
			}
			if tc.queryError != "" && a.queryError != tc.queryError {
				t.Errorf("x-amzn-query-error %q, want %q", a.queryError, tc.queryError)
			}
		})
	}
}

// TestLambdaUnknownPath: a Lambda path no operation of its model binds is answered 404
// UnknownOperationException, saying so.
func TestLambdaUnknownPath(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet()})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, v.e.URL()+"/2015-03-31/no-such-thing", nil)
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/lambda/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 404 || resp.Header.Get("X-Amzn-Errortype") != "UnknownOperationException" || !strings.Contains(string(body), "is no operation of Lambda") {
		t.Errorf("answered %d %q %s", resp.StatusCode, resp.Header.Get("X-Amzn-Errortype"), body)
	}
}

// TestUnservedThroughTheSDK: an operation of a service's model the emulator does not serve
// reaches an SDK client as AWS's answer to an operation its endpoint does not know, in each
// protocol (AWS JSON, query, SQS's JSON with its query code, CloudWatch's RPC v2 CBOR),
// with a message that says the emulator does not serve it.
func TestUnservedThroughTheSDK(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet()})
	ctx := context.Background()
	cfg, err := v.e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, code string
		call       func() error
	}{
		{"SSM DescribeParameters (JSON)", "UnknownOperationException", func() error {
			_, err := ssm.NewFromConfig(cfg).DescribeParameters(ctx, &ssm.DescribeParametersInput{})
			return err
		}},
		{"CloudFormation ListStackSets (query)", "InvalidAction", func() error {
			_, err := cloudformation.NewFromConfig(cfg).ListStackSets(ctx, &cloudformation.ListStackSetsInput{})
			return err
		}},
		{"SQS AddPermission (JSON, query-compatible)", "UnknownOperationException", func() error {
			_, err := sqs.NewFromConfig(cfg).AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: aws.String("q"), Label: aws.String("l"),
				AWSAccountIds: []string{"000000000000"}, Actions: []string{"SendMessage"}})
			return err
		}},
		{"CloudWatch ListDashboards (RPC v2 CBOR)", "UnknownOperationException", func() error {
			_, err := cloudwatch.NewFromConfig(cfg).ListDashboards(ctx, &cloudwatch.ListDashboardsInput{})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if code(err) != tc.code || status(err) != "400" || !strings.Contains(err.Error(), "the local emulator does not serve") {
				t.Errorf("answered %s %s: %v; want 400 %s saying the emulator does not serve it", code(err), status(err), err, tc.code)
			}
		})
	}
}

// TestLambdaValidation: Lambda's served operations are validated against its model too,
// from the path, query string and headers the SDK sends (it checks none of these limits
// itself), answered 400 ValidationException in Lambda's REST error shape; a valid request
// reaches the handler.
func TestLambdaValidation(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet()})
	ctx := context.Background()
	cfg, err := v.e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lc := lambda.NewFromConfig(cfg)
	long := strings.Repeat("f", 257)
	for _, tc := range []struct {
		name, code, status, message string
		call                        func() error
	}{
		{"a function name over 256 characters", "ValidationException", "400",
			"1 validation error detected: Value '" + long + "' at 'functionName' failed to satisfy constraint: Member must have length less than or equal to 256",
			func() error {
				_, err := lc.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String(long)})
				return err
			}},
		{"an invocation type outside the enum", "ValidationException", "400",
			"1 validation error detected: Value 'Later' at 'invocationType' failed to satisfy constraint: Member must satisfy enum value set: [Event, RequestResponse, DryRun]",
			func() error {
				_, err := lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("fn"), InvocationType: lambdatypes.InvocationType("Later")})
				return err
			}},
		{"a qualifier outside the pattern", "ValidationException", "400",
			"1 validation error detected: Value 'v 1' at 'qualifier' failed to satisfy constraint: Member must satisfy regular expression pattern: \\$(LATEST(\\.PUBLISHED)?)|[a-zA-Z0-9-_$]+",
			func() error {
				_, err := lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("fn"), Qualifier: aws.String("v 1")})
				return err
			}},
		{"a valid name of a missing function reaches the handler", "ResourceNotFoundException", "404", "",
			func() error {
				_, err := lc.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String("arn:aws:lambda:us-east-1:000000000000:function:my-fn_1.x")})
				return err
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if code(err) != tc.code || status(err) != tc.status {
				t.Fatalf("answered %s %s: %v; want %s %s", code(err), status(err), err, tc.status, tc.code)
			}
			if tc.message != "" && !strings.Contains(err.Error(), tc.message) {
				t.Errorf("%v\nwant the message %q", err, tc.message)
			}
		})
	}
}
