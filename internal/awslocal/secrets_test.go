package awslocal_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

func (v *stackEnv) secretJSON(t *testing.T, id string) map[string]any {
	t.Helper()
	out, err := v.secrets.GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		t.Fatalf("get secret %s: %v", id, err)
	}
	doc := map[string]any{}
	if err := json.Unmarshal([]byte(aws.ToString(out.SecretString)), &doc); err != nil {
		t.Fatalf("secret %s is not JSON: %v", id, err)
	}
	return doc
}

// TestStackSecrets: AWS::SecretsManager::Secret makes a secret (SecretString, or
// GenerateSecretString's password in its template); an update puts a new AWSCURRENT
// version; a SecretTargetAttachment adds its database's connection keys; RDS's
// ManageMasterUserPassword makes an RDS-owned secret whose ARN MasterUserSecret.SecretArn
// gives; deleting the stack deletes them without a recovery window.
func TestStackSecrets(t *testing.T) {
	v := startStacks(t)
	ctx := context.Background()
	template := `Parameters:
  PlainValue: {Type: String, Default: first}
Resources:
  Plain:
    Type: AWS::SecretsManager::Secret
    Properties: {Name: shop/plain, Description: a plain one, SecretString: !Ref PlainValue, Tags: [{Key: team, Value: pay}]}
  Credentials:
    Type: AWS::SecretsManager::Secret
    Properties:
      GenerateSecretString: {SecretStringTemplate: '{"username":"admin"}', GenerateStringKey: password, PasswordLength: 16, ExcludeCharacters: '"@/\'}
  Database:
    Type: AWS::RDS::DBInstance
    Properties:
      Engine: postgres
      DBInstanceClass: db.t3.micro
      AllocatedStorage: "20"
      MasterUsername: !Sub '{{resolve:secretsmanager:${Credentials}:SecretString:username}}'
      MasterUserPassword: !Sub '{{resolve:secretsmanager:${Credentials}:SecretString:password}}'
  Attachment:
    Type: AWS::SecretsManager::SecretTargetAttachment
    Properties: {SecretId: !Ref Credentials, TargetId: !Ref Database, TargetType: AWS::RDS::DBInstance}
  Managed:
    Type: AWS::RDS::DBCluster
    Properties: {Engine: aurora-postgresql, MasterUsername: root, ManageMasterUserPassword: true}
Outputs:
  Plain: {Value: !Ref Plain}
  PlainId: {Value: !GetAtt Plain.Id}
  Credentials: {Value: !Ref Credentials}
  Host: {Value: !GetAtt Database.Endpoint.Address}
  Port: {Value: !GetAtt Database.Endpoint.Port}
  Database: {Value: !Ref Database}
  ManagedSecret: {Value: !GetAtt Managed.MasterUserSecret.SecretArn}
`
	out := v.deploy(t, "shop-secrets", template)
	if !strings.HasPrefix(out["Plain"], "arn:aws:secretsmanager:us-east-1:000000000000:secret:shop/plain-") || out["PlainId"] != out["Plain"] {
		t.Fatalf("Ref and Id of a secret: %v", out)
	}
	d, err := v.secrets.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String("shop/plain")})
	if err != nil || aws.ToString(d.Description) != "a plain one" || len(d.Tags) != 1 {
		t.Fatalf("describe shop/plain: %+v %v", d, err)
	}
	creds := v.secretJSON(t, out["Credentials"])
	password, _ := creds["password"].(string)
	if creds["username"] != "admin" || len(password) != 16 || strings.ContainsAny(password, `"@/\`) {
		t.Fatalf("generated credentials %v", creds)
	}
	if creds["host"] != out["Host"] || creds["port"] != float64(5432) || out["Port"] != "5432" || creds["engine"] != "postgres" || creds["dbInstanceIdentifier"] != out["Database"] {
		t.Fatalf("the attachment's connection keys %v, the database's outputs %v", creds, out)
	}
	managed := v.secretJSON(t, out["ManagedSecret"])
	md, err := v.secrets.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(out["ManagedSecret"])})
	if err != nil || managed["username"] != "root" || managed["password"] == "" || !strings.HasPrefix(aws.ToString(md.Name), "rds!cluster-") || aws.ToString(md.OwningService) != "rds" {
		t.Fatalf("RDS's managed secret %v: %+v %v", managed, md, err)
	}

	// An update of SecretString is a new AWSCURRENT version; the old one is AWSPREVIOUS.
	if _, err := v.cf.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("shop-secrets"), UsePreviousTemplate: aws.Bool(true),
		Parameters: []cfntypes.Parameter{{ParameterKey: aws.String("PlainValue"), ParameterValue: aws.String("second")}}}); err != nil {
		t.Fatal(err)
	}
	waitStack(t, v.cf, "shop-secrets", cfntypes.StackStatusUpdateComplete)
	prev, err := v.secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("shop/plain"), VersionStage: aws.String("AWSPREVIOUS")})
	cur, err2 := v.secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("shop/plain")})
	if err != nil || err2 != nil || aws.ToString(prev.SecretString) != "first" || aws.ToString(cur.SecretString) != "second" {
		t.Fatalf("after the update: previous %v %v, current %v %v", prev, err, cur, err2)
	}

	st, err := v.cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("shop-secrets")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("shop-secrets")}); err != nil {
		t.Fatal(err)
	}
	waitStack(t, v.cf, aws.ToString(st.Stacks[0].StackId), cfntypes.StackStatusDeleteComplete)
	list, err := v.secrets.ListSecrets(ctx, &secretsmanager.ListSecretsInput{IncludePlannedDeletion: aws.Bool(true)})
	if err != nil || len(list.SecretList) != 0 {
		t.Fatalf("secrets left after the stack: %+v %v", list, err)
	}
	// Deleted without a recovery window: the name is free again.
	v.deploy(t, "again", "Resources:\n  S: {Type: AWS::SecretsManager::Secret, Properties: {Name: shop/plain, SecretString: x}}\n")
}

func TestStackSecretRefusals(t *testing.T) {
	v := startStacks(t)
	reason := v.failure(t, "both", "Resources:\n  S: {Type: AWS::SecretsManager::Secret, Properties: {SecretString: x, GenerateSecretString: {}}}\n")
	contains(t, "SecretString and GenerateSecretString", reason, "You can't specify both SecretString and GenerateSecretString.")
	reason = v.failure(t, "half", "Resources:\n  S: {Type: AWS::SecretsManager::Secret, Properties: {GenerateSecretString: {GenerateStringKey: password}}}\n")
	contains(t, "GenerateStringKey alone", reason, "SecretStringTemplate and GenerateStringKey must both be set, or neither.")
	reason = v.failure(t, "managed-and-given", "Resources:\n  D: {Type: AWS::RDS::DBInstance, Properties: {Engine: mysql, DBInstanceClass: db.t3.micro, MasterUsername: a, MasterUserPassword: b, ManageMasterUserPassword: true}}\n")
	contains(t, "a managed master user with a password", reason, "You can't specify MasterUserPassword and ManageMasterUserPassword together")
}
