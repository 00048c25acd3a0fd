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
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

// issue43MoreScenarios are issue 43's scenarios of SSM, KMS, EventBridge, Lambda and IAM.
func issue43MoreScenarios() []documented {
	putParam := func(ctx context.Context, t target, name, value string, overwrite bool) error {
		_, err := t.ssm.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value), Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(overwrite)})
		return err
	}
	return []documented{
		{scenario{"ssm", "parameter labels", func(ctx context.Context, t target) (string, error) {
			for i, v := range []string{"one", "two"} {
				if err := putParam(ctx, t, "/d43/labelled", v, i > 0); err != nil {
					return "", err
				}
			}
			out, err := t.ssm.LabelParameterVersion(ctx, &ssm.LabelParameterVersionInput{Name: aws.String("/d43/labelled"), ParameterVersion: aws.Int64(1),
				Labels: []string{"stable", "awsReserved"}})
			if err != nil {
				return "", err
			}
			p, err := t.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/d43/labelled:stable")})
			value := code(err)
			if err == nil {
				value = aws.ToString(p.Parameter.Value)
			}
			return fmt.Sprintf("version=%d invalid=%v stable=%s", out.ParameterVersion, out.InvalidLabels, value), nil
		}}, "version=1 invalid=[awsReserved] stable=one",
			"https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_LabelParameterVersion.html (labels can't begin with aws or ssm; InvalidLabels)"},
		{scenario{"ssm", "DeleteParameters", func(ctx context.Context, t target) (string, error) {
			if err := putParam(ctx, t, "/d43/del-a", "a", false); err != nil {
				return "", err
			}
			out, err := t.ssm.DeleteParameters(ctx, &ssm.DeleteParametersInput{Names: []string{"/d43/del-a", "/d43/del-missing"}})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("deleted=%v invalid=%v", out.DeletedParameters, out.InvalidParameters), nil
		}}, "deleted=[/d43/del-a] invalid=[/d43/del-missing]",
			"https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_DeleteParameters.html"},
		{scenario{"kms", "Encrypt and Decrypt", func(ctx context.Context, t target) (string, error) {
			k, err := t.kms.CreateKey(ctx, &kms.CreateKeyInput{})
			if err != nil {
				return "", err
			}
			enc, err := t.kms.Encrypt(ctx, &kms.EncryptInput{KeyId: k.KeyMetadata.KeyId, Plaintext: []byte("hello"), EncryptionContext: map[string]string{"app": "d43"}})
			if err != nil {
				return "", err
			}
			dec, err := t.kms.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: enc.CiphertextBlob, EncryptionContext: map[string]string{"app": "d43"}})
			if err != nil {
				return "", err
			}
			_, noContext := t.kms.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: enc.CiphertextBlob})
			return fmt.Sprintf("plaintext=%s key=%v without-context=%s", dec.Plaintext, aws.ToString(dec.KeyId) == aws.ToString(k.KeyMetadata.Arn), code(noContext)), nil
		}}, "plaintext=hello key=true without-context=InvalidCiphertextException",
			"https://docs.aws.amazon.com/kms/latest/APIReference/API_Decrypt.html (the same encryption context is required; InvalidCiphertextException)"},
		{scenario{"kms", "aliases", func(ctx context.Context, t target) (string, error) {
			k, err := t.kms.CreateKey(ctx, &kms.CreateKeyInput{})
			if err != nil {
				return "", err
			}
			if _, err := t.kms.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String("alias/d43"), TargetKeyId: k.KeyMetadata.KeyId}); err != nil {
				return "", err
			}
			d, err := t.kms.DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String("alias/d43")})
			if err != nil {
				return "", err
			}
			list, err := t.kms.ListAliases(ctx, &kms.ListAliasesInput{KeyId: k.KeyMetadata.KeyId})
			if err != nil {
				return "", err
			}
			var names []string
			for _, a := range list.Aliases {
				names = append(names, aws.ToString(a.AliasName))
			}
			if _, err := t.kms.DeleteAlias(ctx, &kms.DeleteAliasInput{AliasName: aws.String("alias/d43")}); err != nil {
				return "", err
			}
			_, after := t.kms.DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String("alias/d43")})
			return fmt.Sprintf("describe=%v aliases=%s after=%s", aws.ToString(d.KeyMetadata.KeyId) == aws.ToString(k.KeyMetadata.KeyId), strings.Join(names, ","), code(after)), nil
		}}, "describe=true aliases=alias/d43 after=NotFoundException",
			"https://docs.aws.amazon.com/kms/latest/APIReference/API_CreateAlias.html (an alias can name the key in cryptographic operations and DescribeKey)"},
		{scenario{"kms", "the deletion window is 7 to 30 days", func(ctx context.Context, t target) (string, error) {
			k, err := t.kms.CreateKey(ctx, &kms.CreateKeyInput{})
			if err != nil {
				return "", err
			}
			_, six := t.kms.ScheduleKeyDeletion(ctx, &kms.ScheduleKeyDeletionInput{KeyId: k.KeyMetadata.KeyId, PendingWindowInDays: aws.Int32(6)})
			seven, err := t.kms.ScheduleKeyDeletion(ctx, &kms.ScheduleKeyDeletionInput{KeyId: k.KeyMetadata.KeyId, PendingWindowInDays: aws.Int32(7)})
			if err != nil {
				return "", err
			}
			if _, err := t.kms.CancelKeyDeletion(ctx, &kms.CancelKeyDeletionInput{KeyId: k.KeyMetadata.KeyId}); err != nil {
				return "", err
			}
			d, err := t.kms.DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: k.KeyMetadata.KeyId})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("6=%s 7=%s/%d cancelled=%s", code(six), seven.KeyState, aws.ToInt32(seven.PendingWindowInDays), d.KeyMetadata.KeyState), nil
		}}, "6=ValidationException 7=PendingDeletion/7 cancelled=Disabled",
			"https://docs.aws.amazon.com/kms/latest/APIReference/API_ScheduleKeyDeletion.html (PendingWindowInDays: \"a value between 7 and 30, inclusive\")"},
		{scenario{"events", "at most five targets per rule", func(ctx context.Context, t target) (string, error) {
			if _, err := t.events.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("d43-many"), EventPattern: aws.String(`{"source":["d43.many"]}`)}); err != nil {
				return "", err
			}
			var five []ebtypes.Target
			for i := range 5 {
				five = append(five, ebtypes.Target{Id: aws.String(fmt.Sprint("t", i)), Arn: aws.String("arn:aws:sqs:us-east-1:123456789012:d43-many")})
			}
			_, first := t.events.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String("d43-many"), Targets: five})
			_, sixth := t.events.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String("d43-many"),
				Targets: []ebtypes.Target{{Id: aws.String("t5"), Arn: aws.String("arn:aws:sqs:us-east-1:123456789012:d43-many")}}})
			return "five=" + code(first) + " sixth=" + code(sixth), nil
		}}, "five=ok sixth=LimitExceededException",
			"https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutTargets.html (\"Each rule can have up to five (5) targets associated with it at one time\"; LimitExceededException)"},
		{scenario{"events", "an input transformer shapes what the target gets", func(ctx context.Context, t target) (string, error) {
			q, err := t.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("d43-shaped")})
			if err != nil {
				return "", err
			}
			a, err := t.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
			if err != nil {
				return "", err
			}
			if _, err := t.events.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("d43-shaped"), EventPattern: aws.String(`{"source":["d43.shaped"]}`)}); err != nil {
				return "", err
			}
			if _, err := t.events.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String("d43-shaped"), Targets: []ebtypes.Target{{
				Id: aws.String("q"), Arn: aws.String(a.Attributes["QueueArn"]), InputTransformer: &ebtypes.InputTransformer{
					InputPathsMap: map[string]string{"state": "$.detail.state", "count": "$.detail.count"},
					InputTemplate: aws.String(`{"state": <state>, "count": <count>, "text": "now <state>"}`)}}}}); err != nil {
				return "", err
			}
			if _, err := t.events.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
				Source: aws.String("d43.shaped"), DetailType: aws.String("d"), Detail: aws.String(`{"state":"ok","count":3}`)}}}); err != nil {
				return "", err
			}
			got, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 2})
			if err != nil || len(got.Messages) != 1 {
				return "", fmt.Errorf("receive: %v", err)
			}
			return aws.ToString(got.Messages[0].Body), nil
		}}, `{"state": "ok", "count": 3, "text": "now ok"}`,
			"https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-transform-target-input.html (InputPathsMap values replace <key> in InputTemplate)"},
		{scenario{"lambda", "GetFunction of a missing function", func(ctx context.Context, t target) (string, error) {
			_, err := t.lambda.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String("d43-missing")})
			return code(err) + " " + status(err), nil
		}}, "ResourceNotFoundException 404",
			"https://docs.aws.amazon.com/lambda/latest/api/API_GetFunction.html (ResourceNotFoundException, HTTP 404)"},
		{scenario{"iam", "GetRole of a missing role", func(ctx context.Context, t target) (string, error) {
			_, err := t.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("d43-missing")})
			return code(err) + " " + status(err), nil
		}}, "NoSuchEntity 404",
			"https://docs.aws.amazon.com/IAM/latest/APIReference/API_GetRole.html (NoSuchEntity, HTTP 404)"},
	}
}
