package awslocal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func init() {
	for k, d := range edgeDeviations {
		knownMotoDeviations[k] = d
	}
}

// edgeDeviations are moto's deviations from AWS on the API edges of issue 33.
var edgeDeviations = map[string]deviation{
	"sqs/PurgeQueue twice within 60 seconds": {
		// The SDK reports the query-compatible code SQS sends in x-amzn-query-error.
		aws:    "first=ok second=AWS.SimpleQueueService.PurgeQueueInProgress",
		why:    "moto purges as often as asked",
		source: "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_PurgeQueue.html (PurgeQueueInProgress: \"the specified queue previously received a PurgeQueue request within the last 60 seconds\")",
	},
	"secretsmanager/versions and staging labels": {
		aws:    "AWSCURRENT=three AWSPREVIOUS=two AWSPENDING=ResourceNotFoundException labelled-versions=2",
		why:    "moto lists the version that lost every label in VersionIdsToStages",
		source: "https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_DescribeSecret.html (VersionIdsToStages: \"A list of the versions of the secret that have staging labels attached. Versions that don't have staging labels are considered deprecated\")",
	},
	"secretsmanager/deletion, recovery and restore": {
		aws:    "3-days=InvalidParameterException window-and-force=InvalidParameterException read=InvalidRequestException recreate=InvalidRequestException restored=v forced=ResourceNotFoundException",
		why:    "moto answers ResourceExistsException to a CreateSecret of a name scheduled for deletion",
		source: "https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_CreateSecret.html (InvalidRequestException: \"A parameter value is not valid for the current state of the resource\", e.g. \"The secret is scheduled for deletion\"; AWS says \"You can't create this secret because a secret with this name is already scheduled for deletion.\")",
	},
	"s3/GET of a delete marker's own version": {
		aws:    "MethodNotAllowed 405",
		why:    "moto answers NoSuchVersion 404",
		source: "https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html (\"If the specified version is a delete marker, the response returns a 405 Method Not Allowed error\")",
	},
	"s3/GET behind a delete marker": {
		aws:    "NoSuchKey 404 delete-marker=true",
		why:    "moto answers 404 without x-amz-delete-marker",
		source: "https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html (\"If the current version of the object is a delete marker, Amazon S3 behaves as if the object was deleted and includes x-amz-delete-marker: true in the response\")",
	},
}

// httpResponse returns the HTTP response behind an SDK error, nil when there is none.
func httpResponse(err error) *http.Response {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.Response.Response
	}
	return nil
}

// edgeScenarios are the API edges issue 33 fixed, run against the emulator and moto.
func edgeScenarios() []scenario {
	versioned := func(ctx context.Context, t target, name string) error {
		if _, err := t.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			return err
		}
		_, err := t.s3.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(name),
			VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}})
		return err
	}
	putBody := func(ctx context.Context, t target, b, k, body string) (*s3.PutObjectOutput, error) {
		return t.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k), Body: strings.NewReader(body)})
	}
	fifo := func(ctx context.Context, t target, name string, attrs map[string]string) (string, error) {
		a := map[string]string{"FifoQueue": "true"}
		for k, v := range attrs {
			a[k] = v
		}
		out, err := t.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: a})
		return aws.ToString(out.QueueUrl), err
	}
	receiveAll := func(ctx context.Context, t target, url string, max int32) ([]sqstypes.Message, string, error) {
		out, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: max,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			return nil, "", err
		}
		var b []string
		for _, m := range out.Messages {
			b = append(b, aws.ToString(m.Body))
		}
		return out.Messages, strings.Join(b, ","), nil
	}
	return []scenario{
		{"s3", "undelete by deleting the delete marker", func(ctx context.Context, t target) (string, error) {
			if err := versioned(ctx, t, "d-undelete"); err != nil {
				return "", err
			}
			for _, b := range []string{"one", "two"} {
				if _, err := putBody(ctx, t, "d-undelete", "k", b); err != nil {
					return "", err
				}
			}
			del, err := t.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("d-undelete"), Key: aws.String("k")})
			if err != nil {
				return "", err
			}
			if _, err := t.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("d-undelete"), Key: aws.String("k"), VersionId: del.VersionId}); err != nil {
				return "", err
			}
			got, err := t.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("d-undelete"), Key: aws.String("k")})
			body := code(err)
			if err == nil {
				b, _ := io.ReadAll(got.Body)
				got.Body.Close()
				body = string(b)
			}
			vs, err := t.s3.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("d-undelete")})
			if err != nil {
				return "", err
			}
			var latest []string
			for _, v := range vs.Versions {
				latest = append(latest, fmt.Sprint(aws.ToBool(v.IsLatest)))
			}
			return fmt.Sprintf("get=%s latest=%v markers=%d", body, latest, len(vs.DeleteMarkers)), nil
		}},
		{"s3", "GET behind a delete marker", func(ctx context.Context, t target) (string, error) {
			if err := versioned(ctx, t, "d-behind"); err != nil {
				return "", err
			}
			if _, err := putBody(ctx, t, "d-behind", "k", "v"); err != nil {
				return "", err
			}
			if _, err := t.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("d-behind"), Key: aws.String("k")}); err != nil {
				return "", err
			}
			_, err := t.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("d-behind"), Key: aws.String("k")})
			marker := ""
			if r := httpResponse(err); r != nil {
				marker = r.Header.Get("x-amz-delete-marker")
			}
			return fmt.Sprintf("%s %s delete-marker=%s", code(err), status(err), marker), nil
		}},
		{"s3", "GET of a delete marker's own version", func(ctx context.Context, t target) (string, error) {
			if err := versioned(ctx, t, "d-markerversion"); err != nil {
				return "", err
			}
			if _, err := putBody(ctx, t, "d-markerversion", "k", "v"); err != nil {
				return "", err
			}
			del, err := t.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("d-markerversion"), Key: aws.String("k")})
			if err != nil {
				return "", err
			}
			_, err = t.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("d-markerversion"), Key: aws.String("k"), VersionId: del.VersionId})
			return code(err) + " " + status(err), nil
		}},
		{"s3", "KeyCount of an empty listing", func(ctx context.Context, t target) (string, error) {
			if _, err := t.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("d-empty")}); err != nil {
				return "", err
			}
			out, err := t.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("d-empty")})
			if err != nil {
				return "", err
			}
			if out.KeyCount == nil {
				return "KeyCount absent", nil
			}
			return fmt.Sprint("KeyCount=", *out.KeyCount), nil
		}},
		{"s3", "a last page has no continuation token", func(ctx context.Context, t target) (string, error) {
			if _, err := t.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("d-pages")}); err != nil {
				return "", err
			}
			for _, k := range []string{"a", "b"} {
				if _, err := putBody(ctx, t, "d-pages", k, k); err != nil {
					return "", err
				}
			}
			out, err := t.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("d-pages"), MaxKeys: aws.Int32(2)})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("truncated=%v token=%v keys=%d", aws.ToBool(out.IsTruncated), out.NextContinuationToken != nil, len(out.Contents)), nil
		}},
		{"sqs", "PurgeQueue twice within 60 seconds", func(ctx context.Context, t target) (string, error) {
			out, err := t.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("d-purge")})
			if err != nil {
				return "", err
			}
			_, first := t.sqs.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: out.QueueUrl})
			_, second := t.sqs.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: out.QueueUrl})
			return "first=" + code(first) + " second=" + code(second), nil
		}},
		{"sqs", "FIFO queue attributes", func(ctx context.Context, t target) (string, error) {
			url, err := fifo(ctx, t, "d-attrs.fifo", nil)
			if err != nil {
				return "", err
			}
			a, err := t.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
				AttributeNames: []sqstypes.QueueAttributeName{"FifoQueue", "ContentBasedDeduplication"}})
			if err != nil {
				return "", err
			}
			_, noSuffix := t.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("d-nosuffix"), Attributes: map[string]string{"FifoQueue": "true"}})
			return fmt.Sprintf("FifoQueue=%s ContentBasedDeduplication=%s no-suffix=%s", a.Attributes["FifoQueue"], a.Attributes["ContentBasedDeduplication"], code(noSuffix)), nil
		}},
		{"sqs", "FIFO sends that are refused", func(ctx context.Context, t target) (string, error) {
			url, err := fifo(ctx, t, "d-refused.fifo", nil)
			if err != nil {
				return "", err
			}
			_, noGroup := t.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m"), MessageDeduplicationId: aws.String("d")})
			_, noDedup := t.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m"), MessageGroupId: aws.String("g")})
			_, delay := t.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m"), MessageGroupId: aws.String("g"),
				MessageDeduplicationId: aws.String("d"), DelaySeconds: 5})
			return fmt.Sprintf("no-group=%s no-dedup=%s delay=%s", code(noGroup), code(noDedup), code(delay)), nil
		}},
		{"sqs", "FIFO group order and in-flight groups", func(ctx context.Context, t target) (string, error) {
			url, err := fifo(ctx, t, "d-order.fifo", map[string]string{"ContentBasedDeduplication": "true"})
			if err != nil {
				return "", err
			}
			for _, m := range []struct{ g, b string }{{"a", "a1"}, {"a", "a2"}, {"b", "b1"}, {"a", "a3"}} {
				if _, err := t.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(m.b), MessageGroupId: aws.String(m.g)}); err != nil {
					return "", err
				}
			}
			first, firstBodies, err := receiveAll(ctx, t, url, 1)
			if err != nil || len(first) == 0 {
				return "", fmt.Errorf("first receive: %v", err)
			}
			_, second, err := receiveAll(ctx, t, url, 10)
			if err != nil {
				return "", err
			}
			if _, err := t.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: first[0].ReceiptHandle}); err != nil {
				return "", err
			}
			return fmt.Sprintf("first=%s group=%s then=%s", firstBodies, first[0].Attributes["MessageGroupId"], second), nil
		}},
		{"sqs", "FIFO de-duplication", func(ctx context.Context, t target) (string, error) {
			url, err := fifo(ctx, t, "d-dedup.fifo", nil)
			if err != nil {
				return "", err
			}
			content, err := fifo(ctx, t, "d-content.fifo", map[string]string{"ContentBasedDeduplication": "true"})
			if err != nil {
				return "", err
			}
			for _, m := range []struct{ url, dedup, body string }{{url, "x", "first"}, {url, "x", "again"}, {url, "y", "other"},
				{content, "", "same"}, {content, "", "same"}, {content, "", "different"}} {
				in := &sqs.SendMessageInput{QueueUrl: aws.String(m.url), MessageBody: aws.String(m.body), MessageGroupId: aws.String("g")}
				if m.dedup != "" {
					in.MessageDeduplicationId = aws.String(m.dedup)
				}
				if _, err := t.sqs.SendMessage(ctx, in); err != nil {
					return "", err
				}
			}
			msgs, explicit, err := receiveAll(ctx, t, url, 10)
			if err != nil {
				return "", err
			}
			dedupID := ""
			if len(msgs) > 0 {
				dedupID = msgs[0].Attributes["MessageDeduplicationId"]
			}
			_, byContent, err := receiveAll(ctx, t, content, 10)
			return fmt.Sprintf("explicit=%s id=%s content=%s", explicit, dedupID, byContent), err
		}},
		{"sns", "PublishBatch", func(ctx context.Context, t target) (string, error) {
			topic, url, err := topicWithQueueFor(ctx, t, "d-batch")
			if err != nil {
				return "", err
			}
			out, err := t.sns.PublishBatch(ctx, &sns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
				{Id: aws.String("1"), Message: aws.String("one")}, {Id: aws.String("2"), Message: aws.String("two")}}})
			if err != nil {
				return "", err
			}
			var ids []string
			for _, s := range out.Successful {
				ids = append(ids, aws.ToString(s.Id))
			}
			got, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 1, MaxNumberOfMessages: 10})
			if err != nil {
				return "", err
			}
			var bodies []string
			for _, m := range got.Messages {
				bodies = append(bodies, aws.ToString(m.Body))
			}
			sort.Strings(bodies)
			_, dup := t.sns.PublishBatch(ctx, &sns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
				{Id: aws.String("1"), Message: aws.String("one")}, {Id: aws.String("1"), Message: aws.String("two")}}})
			return fmt.Sprintf("ok=%v failed=%d delivered=%v same-ids=%s", ids, len(out.Failed), bodies, code(dup)), nil
		}},
		{"secretsmanager", "versions and staging labels", func(ctx context.Context, t target) (string, error) {
			if _, err := t.secrets.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("d/stages"), SecretString: aws.String("one")}); err != nil {
				return "", err
			}
			for _, v := range []string{"two", "three"} {
				if _, err := t.secrets.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String("d/stages"), SecretString: aws.String(v)}); err != nil {
					return "", err
				}
			}
			var parts []string
			for _, stage := range []string{"AWSCURRENT", "AWSPREVIOUS", "AWSPENDING"} {
				out, err := t.secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("d/stages"), VersionStage: aws.String(stage)})
				if err != nil {
					parts = append(parts, stage+"="+code(err))
					continue
				}
				parts = append(parts, stage+"="+aws.ToString(out.SecretString))
			}
			d, err := t.secrets.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String("d/stages")})
			if err != nil {
				return "", err
			}
			parts = append(parts, fmt.Sprint("labelled-versions=", len(d.VersionIdsToStages)))
			return strings.Join(parts, " "), nil
		}},
		{"secretsmanager", "deletion, recovery and restore", func(ctx context.Context, t target) (string, error) {
			if _, err := t.secrets.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("d/delete"), SecretString: aws.String("v")}); err != nil {
				return "", err
			}
			_, short := t.secrets.DeleteSecret(ctx, &secretsmanager.DeleteSecretInput{SecretId: aws.String("d/delete"), RecoveryWindowInDays: aws.Int64(3)})
			_, both := t.secrets.DeleteSecret(ctx, &secretsmanager.DeleteSecretInput{SecretId: aws.String("d/delete"), RecoveryWindowInDays: aws.Int64(7), ForceDeleteWithoutRecovery: aws.Bool(true)})
			if _, err := t.secrets.DeleteSecret(ctx, &secretsmanager.DeleteSecretInput{SecretId: aws.String("d/delete"), RecoveryWindowInDays: aws.Int64(7)}); err != nil {
				return "", err
			}
			_, read := t.secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("d/delete")})
			_, recreate := t.secrets.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("d/delete"), SecretString: aws.String("w")})
			if _, err := t.secrets.RestoreSecret(ctx, &secretsmanager.RestoreSecretInput{SecretId: aws.String("d/delete")}); err != nil {
				return "", err
			}
			restored, err := t.secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("d/delete")})
			if err != nil {
				return "", err
			}
			if _, err := t.secrets.DeleteSecret(ctx, &secretsmanager.DeleteSecretInput{SecretId: aws.String("d/delete"), ForceDeleteWithoutRecovery: aws.Bool(true)}); err != nil {
				return "", err
			}
			_, gone := t.secrets.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String("d/delete")})
			return fmt.Sprintf("3-days=%s window-and-force=%s read=%s recreate=%s restored=%s forced=%s", code(short), code(both), code(read), code(recreate),
				aws.ToString(restored.SecretString), code(gone)), nil
		}},
		{"secretsmanager", "refusals", func(ctx context.Context, t target) (string, error) {
			if _, err := t.secrets.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("d/twice"), SecretString: aws.String("v")}); err != nil {
				return "", err
			}
			_, twice := t.secrets.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("d/twice"), SecretString: aws.String("v")})
			_, missing := t.secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("d/none")})
			_, stage := t.secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("d/twice"), VersionStage: aws.String("AWSPENDING")})
			return fmt.Sprintf("twice=%s missing=%s no-version=%s", code(twice), code(missing), code(stage)), nil
		}},
		{"secretsmanager", "GetRandomPassword", func(ctx context.Context, t target) (string, error) {
			out, err := t.secrets.GetRandomPassword(ctx, &secretsmanager.GetRandomPasswordInput{PasswordLength: aws.Int64(24), ExcludePunctuation: aws.Bool(true), ExcludeNumbers: aws.Bool(true)})
			if err != nil {
				return "", err
			}
			p := aws.ToString(out.RandomPassword)
			return fmt.Sprintf("length=%d digits=%v punctuation=%v", len(p), strings.ContainsAny(p, "0123456789"), strings.ContainsAny(p, "!#$%&()*+,-./:;<=>?@[]^_{|}~")), nil
		}},
		{"secretsmanager", "ListSecrets by name", func(ctx context.Context, t target) (string, error) {
			for _, n := range []string{"d-list/a", "d-list/b", "d-other"} {
				if _, err := t.secrets.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(n), SecretString: aws.String("v")}); err != nil {
					return "", err
				}
			}
			out, err := t.secrets.ListSecrets(ctx, &secretsmanager.ListSecretsInput{Filters: []smtypes.Filter{{Key: smtypes.FilterNameStringTypeName, Values: []string{"d-list/"}}}})
			if err != nil {
				return "", err
			}
			var names []string
			for _, e := range out.SecretList {
				names = append(names, aws.ToString(e.Name))
			}
			sort.Strings(names)
			return strings.Join(names, ","), nil
		}},
		{"events", "a rule on a custom bus", func(ctx context.Context, t target) (string, error) {
			if _, err := t.events.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String("d-bus")}); err != nil {
				return "", err
			}
			_, again := t.events.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String("d-bus")})
			q, err := t.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("d-bus-events")})
			if err != nil {
				return "", err
			}
			a, err := t.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
			if err != nil {
				return "", err
			}
			rule, err := t.events.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("d-rule"), EventBusName: aws.String("d-bus"), EventPattern: aws.String(`{"source":["shop"]}`)})
			if err != nil {
				return "", err
			}
			if _, err := t.events.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String("d-rule"), EventBusName: aws.String("d-bus"),
				Targets: []ebtypes.Target{{Id: aws.String("q"), Arn: aws.String(a.Attributes["QueueArn"])}}}); err != nil {
				return "", err
			}
			for _, e := range []ebtypes.PutEventsRequestEntry{
				{Source: aws.String("shop"), DetailType: aws.String("on the default bus"), Detail: aws.String("{}")},
				{EventBusName: aws.String("d-bus"), Source: aws.String("shop"), DetailType: aws.String("on the custom bus"), Detail: aws.String(`{"n":1}`)},
			} {
				if _, err := t.events.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{e}}); err != nil {
					return "", err
				}
			}
			got, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 1, MaxNumberOfMessages: 10})
			if err != nil {
				return "", err
			}
			var kinds []string
			for _, m := range got.Messages {
				var ev struct {
					DetailType string `json:"detail-type"`
					Source     string
					Detail     map[string]any
				}
				if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &ev); err != nil {
					return "", fmt.Errorf("not an event: %s", aws.ToString(m.Body))
				}
				kinds = append(kinds, fmt.Sprint(ev.DetailType, " ", ev.Source, " ", ev.Detail))
			}
			_, withTargets := t.events.DeleteRule(ctx, &eventbridge.DeleteRuleInput{Name: aws.String("d-rule"), EventBusName: aws.String("d-bus")})
			return fmt.Sprintf("rule=%s again=%s delivered=%v delete-with-targets=%s", normalize(aws.ToString(rule.RuleArn)), code(again), kinds, code(withTargets)), nil
		}},
		{"ssm", "GetParameterHistory", func(ctx context.Context, t target) (string, error) {
			for i, v := range []string{"one", "two", "three"} {
				if _, err := t.ssm.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/d/history"), Value: aws.String(v),
					Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(i > 0)}); err != nil {
					return "", err
				}
			}
			out, err := t.ssm.GetParameterHistory(ctx, &ssm.GetParameterHistoryInput{Name: aws.String("/d/history")})
			if err != nil {
				return "", err
			}
			var parts []string
			for _, p := range out.Parameters {
				parts = append(parts, fmt.Sprintf("%d:%s:%s", p.Version, aws.ToString(p.Value), p.Type))
			}
			_, missing := t.ssm.GetParameterHistory(ctx, &ssm.GetParameterHistoryInput{Name: aws.String("/d/missing")})
			return strings.Join(parts, " ") + " missing=" + code(missing), nil
		}},
	}
}

// topicWithQueueFor makes a topic with a raw-delivery SQS subscription.
func topicWithQueueFor(ctx context.Context, t target, name string) (topic, url string, err error) {
	tp, err := t.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(name)})
	if err != nil {
		return "", "", err
	}
	q, err := t.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		return "", "", err
	}
	a, err := t.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
	if err != nil {
		return "", "", err
	}
	if _, err := t.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: tp.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(a.Attributes["QueueArn"]),
		Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		return "", "", err
	}
	return aws.ToString(tp.TopicArn), aws.ToString(q.QueueUrl), nil
}
