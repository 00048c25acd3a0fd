package awslocal_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"
)

func (v *stackEnv) putParameter(t *testing.T, name, value string, typ ssmtypes.ParameterType) {
	t.Helper()
	if _, err := v.ssm.PutParameter(context.Background(), &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value), Type: typ, Overwrite: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
}

func (v *stackEnv) parameter(t *testing.T, name string) string {
	t.Helper()
	out, err := v.ssm.GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	if err != nil {
		t.Fatalf("get parameter %s: %v", name, err)
	}
	return aws.ToString(out.Parameter.Value)
}

// TestDynamicReferencesResolve: ssm, ssm-secure and secretsmanager references reach the
// services that make the resources with their values (latest or given versions, JSON keys,
// version stages and ids, inside longer strings, a secret of the same stack), while the
// stack keeps them as written: its template, resources, events and drift show no value.
func TestDynamicReferencesResolve(t *testing.T) {
	v := startStacks(t)
	ctx := context.Background()
	v.putParameter(t, "/probe/display", "first", ssmtypes.ParameterTypeString)
	v.putParameter(t, "/probe/display", "Shop orders", ssmtypes.ParameterTypeString)
	v.putParameter(t, "/probe/db-password", "s3cret-pw", ssmtypes.ParameterTypeSecureString)
	old, err := v.secrets.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("shop/db"), SecretString: aws.String(`{"username":"admin","password":"old-pw","port":5432}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.secrets.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String("shop/db"), SecretString: aws.String(`{"username":"admin","password":"new-pw","port":5432}`)}); err != nil {
		t.Fatal(err)
	}
	template := `Resources:
  Topic:
    Type: AWS::SNS::Topic
    Properties: {DisplayName: '{{resolve:ssm:/probe/display}}'}
  Pinned:
    Type: AWS::SSM::Parameter
    Properties: {Name: /out/pinned, Type: String, Value: 'v1={{resolve:ssm:/probe/display:1}}'}
  Password:
    Type: AWS::SSM::Parameter
    Properties: {Name: /out/password, Type: String, Value: '{{resolve:secretsmanager:shop/db:SecretString:password}}'}
  Previous:
    Type: AWS::SSM::Parameter
    Properties: {Name: /out/previous, Type: String, Value: '{{resolve:secretsmanager:shop/db:SecretString:password:AWSPREVIOUS}}'}
  ByVersion:
    Type: AWS::SSM::Parameter
    Properties: {Name: /out/by-version, Type: String, Value: '{{resolve:secretsmanager:shop/db:SecretString:port::` + aws.ToString(old.VersionId) + `}}'}
  Whole:
    Type: AWS::SSM::Parameter
    Properties: {Name: /out/whole, Type: String, Value: '{{resolve:secretsmanager:` + aws.ToString(old.ARN) + `}}'}
  Generated:
    Type: AWS::SecretsManager::Secret
    Properties:
      GenerateSecretString: {SecretStringTemplate: '{"username":"app"}', GenerateStringKey: password, PasswordLength: 20, ExcludePunctuation: true}
  FromGenerated:
    Type: AWS::SSM::Parameter
    Properties: {Name: /out/generated, Type: String, Value: !Sub '{{resolve:secretsmanager:${Generated}:SecretString:password}}'}
  Database:
    Type: AWS::RDS::DBInstance
    Properties: {Engine: postgres, DBInstanceClass: db.t3.micro, AllocatedStorage: "20", MasterUsername: admin, MasterUserPassword: '{{resolve:ssm-secure:/probe/db-password}}'}
Outputs:
  Topic: {Value: !Ref Topic}
  Generated: {Value: !Ref Generated}
`
	out := v.deploy(t, "refs", template)
	attrs, err := v.sns.GetTopicAttributes(ctx, &sns.GetTopicAttributesInput{TopicArn: aws.String(out["Topic"])})
	if err != nil || attrs.Attributes["DisplayName"] != "Shop orders" {
		t.Fatalf("topic display name: %v %v", attrs, err)
	}
	for name, want := range map[string]string{"/out/pinned": "v1=first", "/out/password": "new-pw", "/out/previous": "old-pw",
		"/out/by-version": "5432", "/out/whole": `{"username":"admin","password":"new-pw","port":5432}`} {
		if got := v.parameter(t, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	gen, err := v.secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(out["Generated"])})
	if err != nil {
		t.Fatal(err)
	}
	if got := v.parameter(t, "/out/generated"); len(got) != 20 || !strings.Contains(aws.ToString(gen.SecretString), `"password":"`+got+`"`) {
		t.Fatalf("the generated password %q, the secret %s", got, aws.ToString(gen.SecretString))
	}
	// The stack keeps the references, never their values.
	seen := []string{}
	res, err := v.cf.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String("refs")})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.StackResources {
		seen = append(seen, aws.ToString(r.PhysicalResourceId))
	}
	evs, err := v.cf.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String("refs")})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.StackEvents {
		seen = append(seen, aws.ToString(e.ResourceProperties), aws.ToString(e.ResourceStatusReason))
	}
	tpl, err := v.cf.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String("refs"), TemplateStage: cfntypes.TemplateStageProcessed})
	if err != nil {
		t.Fatal(err)
	}
	seen = append(seen, aws.ToString(tpl.TemplateBody))
	for _, s := range seen {
		for _, secret := range []string{"s3cret-pw", "new-pw", "old-pw", "Shop orders"} {
			if strings.Contains(s, secret) {
				t.Fatalf("the stack shows the value %q of a dynamic reference: %s", secret, s)
			}
		}
	}
	// Drift leaves properties with references alone: the topic's resolved name is no drift.
	det, err := v.cf.DetectStackDrift(ctx, &cloudformation.DetectStackDriftInput{StackName: aws.String("refs")})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st, err := v.cf.DescribeStackDriftDetectionStatus(ctx, &cloudformation.DescribeStackDriftDetectionStatusInput{StackDriftDetectionId: det.StackDriftDetectionId})
		if err != nil {
			t.Fatal(err)
		}
		if st.DetectionStatus != cfntypes.StackDriftDetectionStatusDetectionInProgress {
			if st.StackDriftStatus != cfntypes.StackDriftStatusInSync {
				t.Fatalf("drift of a stack whose references resolved: %s", st.StackDriftStatus)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("drift detection did not finish")
		}
	}
}

func validationMessage(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	return ""
}

// TestDynamicReferencesFailAsAWS: a reference to a missing parameter fails the stack
// operation when it is asked for (CreateStack, UpdateStack) and the change set when it is
// made, in AWS's words; ssm-secure outside the properties that take it is refused; a
// missing secret or JSON key fails the resource that uses it.
func TestDynamicReferencesFailAsAWS(t *testing.T) {
	v := startStacks(t)
	ctx := context.Background()
	v.putParameter(t, "/probe/secure", "pw", ssmtypes.ParameterTypeSecureString)
	v.putParameter(t, "/probe/plain", "x", ssmtypes.ParameterTypeString)
	create := func(name, body string) error {
		_, err := v.cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body)})
		return err
	}
	for _, tt := range []struct {
		name, body, want string
	}{
		{"missing", "Resources:\n  T: {Type: AWS::SNS::Topic, Properties: {DisplayName: '{{resolve:ssm:/probe/display}}'}}\n",
			"ValidationError: Parameters: [ssm:/probe/display] cannot be found."},
		{"missing-version", "Resources:\n  T: {Type: AWS::SNS::Topic, Properties: {DisplayName: '{{resolve:ssm:/probe/plain:7}}'}}\n",
			"ValidationError: Parameters: [ssm:/probe/plain:7] cannot be found."},
		{"secure-elsewhere", "Resources:\n  T: {Type: AWS::SNS::Topic, Properties: {Tags: [{Key: k, Value: '{{resolve:ssm-secure:/probe/secure}}'}]}}\n",
			"ValidationError: SSM Secure reference is not supported in: [AWS::SNS::Topic/Properties/Tags]"},
		{"secure-in-a-custom-resource", "Resources:\n  C: {Type: Custom::Thing, Properties: {ServiceToken: arn:aws:sns:us-east-1:000000000000:t, Password: '{{resolve:ssm-secure:/probe/secure}}'}}\n",
			"ValidationError: SSM Secure reference is not supported in: [Custom::Thing/Properties/Password]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := validationMessage(create(tt.name, tt.body)); got != tt.want {
				t.Fatalf("CreateStack: %q, want %q", got, tt.want)
			}
		})
	}
	// A change set that needs a missing parameter fails, with the stack left to review.
	if _, err := v.cf.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("by-change-set"), ChangeSetName: aws.String("c1"),
		ChangeSetType: cfntypes.ChangeSetTypeCreate, TemplateBody: aws.String("Resources:\n  T: {Type: AWS::SNS::Topic, Properties: {DisplayName: '{{resolve:ssm:/nope}}'}}\n")}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		cs, err := v.cf.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String("by-change-set"), ChangeSetName: aws.String("c1")})
		if err != nil {
			t.Fatal(err)
		}
		if cs.Status == cfntypes.ChangeSetStatusFailed {
			if aws.ToString(cs.StatusReason) != "Parameters: [ssm:/nope] cannot be found." {
				t.Fatalf("change set status reason %q", aws.ToString(cs.StatusReason))
			}
			break
		}
		if cs.Status == cfntypes.ChangeSetStatusCreateComplete || time.Now().After(deadline) {
			t.Fatalf("change set %s", cs.Status)
		}
	}
	// An update that needs a parameter deleted since is refused.
	v.deploy(t, "updated", "Resources:\n  T: {Type: AWS::SNS::Topic, Properties: {DisplayName: '{{resolve:ssm:/probe/plain}}'}}\n")
	if _, err := v.ssm.DeleteParameter(ctx, &ssm.DeleteParameterInput{Name: aws.String("/probe/plain")}); err != nil {
		t.Fatal(err)
	}
	_, err := v.cf.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("updated"),
		TemplateBody: aws.String("Resources:\n  T: {Type: AWS::SNS::Topic, Properties: {DisplayName: '{{resolve:ssm:/probe/plain}}', Tags: [{Key: a, Value: b}]}}\n")})
	if got := validationMessage(err); got != "ValidationError: Parameters: [ssm:/probe/plain] cannot be found." {
		t.Fatalf("UpdateStack: %q", got)
	}

	if _, err := v.secrets.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("shop/api"), SecretString: aws.String(`{"key":"k"}`)}); err != nil {
		t.Fatal(err)
	}
	reason := v.failure(t, "no-secret", "Resources:\n  P: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: '{{resolve:secretsmanager:shop/none:SecretString:key}}'}}\n")
	contains(t, "a missing secret", reason, "P: Secrets Manager can't find the specified secret. (Service: AWSSecretsManager; Status Code: 400; Error Code: ResourceNotFoundException; Request ID: ")
	reason = v.failure(t, "no-key", "Resources:\n  L: {Type: AWS::Logs::LogGroup, Properties: {LogGroupName: '{{resolve:secretsmanager:shop/api:SecretString:nokey}}'}}\n")
	contains(t, "a missing JSON key", reason, "L: Could not find a value associated with JSONKey in SecretString")
	reason = v.failure(t, "no-stage", "Resources:\n  P: {Type: AWS::SSM::Parameter, Properties: {Type: String, Value: '{{resolve:secretsmanager:shop/api:SecretString:key:AWSPENDING}}'}}\n")
	contains(t, "a missing version stage", reason, "Secrets Manager can't find the specified secret value for staging label: AWSPENDING")
}
