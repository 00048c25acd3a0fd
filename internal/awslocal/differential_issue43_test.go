package awslocal_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-dev/cairn/internal/awslocal"
)

// documented is a scenario of issue 43 with the observation AWS's documentation
// prescribes (want), and that documentation (source).
type documented struct {
	scenario
	want, source string
}

// TestIssue43ScenariosAsAWSDocuments runs issue 43's scenarios against the emulator alone
// and requires what AWS documents; TestDifferentialAgainstMoto runs them against moto too.
func TestIssue43ScenariosAsAWSDocuments(t *testing.T) {
	v := start(t, awslocal.Options{Logger: quiet(), AccountID: "123456789012"})
	cairn := newTarget(t, "cairn", v.e.URL())
	ctx := context.Background()
	for _, d := range issue43Scenarios() {
		t.Run(d.service+"/"+d.name, func(t *testing.T) {
			got, err := d.run(ctx, cairn)
			if err != nil {
				t.Fatalf("cairn: %v", err)
			}
			if got != d.want {
				t.Fatalf("cairn: %q\nwant:  %q (%s)", got, d.want, d.source)
			}
		})
	}
}

// issue43MotoDeviations says why moto 5.2 differs from AWS on issue 43's scenarios, by
// service/scenario; what AWS does (and cairn must) is the scenario's want, and its source
// the documentation that says so.
var issue43MotoDeviations = map[string]string{
	"s3/multipart part checks":                                "moto completes an upload whose parts are listed out of order",
	"s3/an expired presigned URL is refused":                  "moto does not check a presigned URL's X-Amz-Expires and serves it (200)",
	"sqs/a message move task redrives the dead-letter queue":  "moto does not implement StartMessageMoveTask (500)",
	"sns/a FIFO topic needs a MessageGroupId":                 "moto answers MissingParameter; SNS answers InvalidParameter (\"Invalid parameter: The MessageGroupId parameter is required for FIFO topics\")",
	"kms/the deletion window is 7 to 30 days":                 "moto accepts a window of 6 days and answers no KeyState or PendingWindowInDays",
	"events/at most five targets per rule":                    "moto accepts a sixth target",
	"events/an input transformer shapes what the target gets": "moto fails PutEvents (500) when a matched target has an InputTransformer",
}

func init() {
	for _, d := range issue43Scenarios() {
		key := d.service + "/" + d.name
		why, ok := issue43MotoDeviations[key]
		if !ok {
			why, ok = modelMotoDeviations[key]
		}
		if ok {
			knownMotoDeviations[key] = deviation{aws: d.want, why: why, source: d.source}
		}
	}
}

// issue43List is issue43Scenarios as plain scenarios, for the differential suite.
func issue43List() []scenario {
	var out []scenario
	for _, d := range issue43Scenarios() {
		out = append(out, d.scenario)
	}
	return out
}

// partETag is S3's ETag of an object made of parts: the MD5 of their MD5s, "-N".
func partETag(parts ...[]byte) string {
	var sums []byte
	for _, p := range parts {
		s := md5.Sum(p)
		sums = append(sums, s[:]...)
	}
	return fmt.Sprintf(`"%x-%d"`, md5.Sum(sums), len(parts))
}

// multipart uploads parts to bucket/key and completes with the parts listed by order
// (indexes into the uploaded parts; a negative index names part 9, never uploaded).
func multipart(ctx context.Context, t target, bucket, key string, parts [][]byte, order []int) (*s3.CompleteMultipartUploadOutput, error) {
	mu, err := t.s3.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	var done []s3types.CompletedPart
	for i, p := range parts {
		out, err := t.s3.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: mu.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p)})
		if err != nil {
			return nil, err
		}
		done = append(done, s3types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.ETag})
	}
	var list []s3types.CompletedPart
	for _, i := range order {
		if i < 0 {
			list = append(list, s3types.CompletedPart{PartNumber: aws.Int32(9), ETag: done[0].ETag})
			continue
		}
		list = append(list, done[i])
	}
	return t.s3.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: mu.UploadId,
		MultipartUpload: &s3types.CompletedMultipartUpload{Parts: list}})
}

func issue43Scenarios() []documented {
	big, small := bytes.Repeat([]byte("p"), 5<<20), []byte("tail")
	mkBucket := func(ctx context.Context, t target, name string) error {
		_, err := t.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
		return err
	}
	mkQueue := func(ctx context.Context, t target, name string, attrs map[string]string) (url, arn string, err error) {
		out, err := t.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			return "", "", err
		}
		a, err := t.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
		if err != nil {
			return "", "", err
		}
		return aws.ToString(out.QueueUrl), a.Attributes["QueueArn"], nil
	}
	list := []documented{
		{scenario{"s3", "multipart ETag", func(ctx context.Context, t target) (string, error) {
			if err := mkBucket(ctx, t, "d43-mpu"); err != nil {
				return "", err
			}
			out, err := multipart(ctx, t, "d43-mpu", "k", [][]byte{big, small}, []int{0, 1})
			if err != nil {
				return "", err
			}
			head, err := t.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("d43-mpu"), Key: aws.String("k")})
			if err != nil {
				return "", err
			}
			want := partETag(big, small)
			return fmt.Sprintf("complete=%v head=%v", aws.ToString(out.ETag) == want, aws.ToString(head.ETag) == want), nil
		}}, "complete=true head=true",
			"https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html (multipart ETag: a checksum of the parts' checksums and the number of parts)"},
		{scenario{"s3", "multipart part checks", func(ctx context.Context, t target) (string, error) {
			if err := mkBucket(ctx, t, "d43-parts"); err != nil {
				return "", err
			}
			_, tooSmall := multipart(ctx, t, "d43-parts", "a", [][]byte{small, small}, []int{0, 1})
			_, order := multipart(ctx, t, "d43-parts", "b", [][]byte{big, big}, []int{1, 0})
			_, missing := multipart(ctx, t, "d43-parts", "c", [][]byte{small}, []int{0, -1})
			return fmt.Sprintf("small=%s %s order=%s %s missing=%s %s", code(tooSmall), status(tooSmall), code(order), status(order), code(missing), status(missing)), nil
		}}, "small=EntityTooSmall 400 order=InvalidPartOrder 400 missing=InvalidPart 400",
			"https://docs.aws.amazon.com/AmazonS3/latest/API/API_CompleteMultipartUpload.html (Special errors: EntityTooSmall, InvalidPart, InvalidPartOrder)"},
		{scenario{"s3", "an expired presigned URL is refused", func(ctx context.Context, t target) (string, error) {
			if err := mkBucket(ctx, t, "d43-presign"); err != nil {
				return "", err
			}
			if _, err := t.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("d43-presign"), Key: aws.String("k"), Body: strings.NewReader("v")}); err != nil {
				return "", err
			}
			req, err := s3.NewPresignClient(t.s3).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("d43-presign"), Key: aws.String("k")},
				s3.WithPresignExpires(time.Second))
			if err != nil {
				return "", err
			}
			return presignedExpired(ctx, t, req.URL)
		}}, "403 AccessDenied expired=true",
			"https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html (X-Amz-Expires: the time the presigned URL is valid for)"},
		{scenario{"s3", "re-creating your own bucket in us-east-1", func(ctx context.Context, t target) (string, error) {
			if err := mkBucket(ctx, t, "d43-again"); err != nil {
				return "", err
			}
			err := mkBucket(ctx, t, "d43-again")
			return code(err) + " " + status(err), nil
		}}, "ok 200",
			"https://docs.aws.amazon.com/AmazonS3/latest/API/API_CreateBucket.html (BucketAlreadyOwnedByYou: \"In the North Virginia Region (us-east-1), Amazon S3 returns 200 OK and resets the bucket access control lists\")"},
		{scenario{"s3", "bucket CORS", func(ctx context.Context, t target) (string, error) {
			if err := mkBucket(ctx, t, "d43-cors"); err != nil {
				return "", err
			}
			b := aws.String("d43-cors")
			_, before := t.s3.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: b})
			_, put := t.s3.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: b, CORSConfiguration: &s3types.CORSConfiguration{CORSRules: []s3types.CORSRule{{
				AllowedMethods: []string{"GET"}, AllowedOrigins: []string{"*"}}}}})
			got, getErr := t.s3.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: b})
			rules := 0
			if getErr == nil {
				rules = len(got.CORSRules)
			}
			_, del := t.s3.DeleteBucketCors(ctx, &s3.DeleteBucketCorsInput{Bucket: b})
			_, after := t.s3.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: b})
			return fmt.Sprintf("before=%s put=%s rules=%d delete=%s after=%s", code(before), code(put), rules, code(del), code(after)), nil
		}}, "before=NoSuchCORSConfiguration put=ok rules=1 delete=ok after=NoSuchCORSConfiguration",
			"https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetBucketCors.html"},
		{scenario{"s3", "object lock configuration", func(ctx context.Context, t target) (string, error) {
			if err := mkBucket(ctx, t, "d43-lock"); err != nil {
				return "", err
			}
			b := aws.String("d43-lock")
			_, before := t.s3.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: b})
			return "before=" + code(before), nil
		}}, "before=ObjectLockConfigurationNotFoundError",
			"https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObjectLockConfiguration.html"},
		{scenario{"sqs", "ListDeadLetterSourceQueues", func(ctx context.Context, t target) (string, error) {
			dlqURL, dlqARN, err := mkQueue(ctx, t, "d43-dlq", nil)
			if err != nil {
				return "", err
			}
			policy := `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"1"}`
			for _, n := range []string{"d43-src-b", "d43-src-a"} {
				if _, _, err := mkQueue(ctx, t, n, map[string]string{"RedrivePolicy": policy}); err != nil {
					return "", err
				}
			}
			out, err := t.sqs.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlqURL)})
			if err != nil {
				return "", err
			}
			var names []string
			for _, u := range out.QueueUrls {
				names = append(names, u[strings.LastIndex(u, "/")+1:])
			}
			sort.Strings(names)
			return strings.Join(names, ","), nil
		}}, "d43-src-a,d43-src-b",
			"https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ListDeadLetterSourceQueues.html"},
		{scenario{"sqs", "a message move task redrives the dead-letter queue", func(ctx context.Context, t target) (string, error) {
			_, dlqARN, err := mkQueue(ctx, t, "d43-move-dlq", nil)
			if err != nil {
				return "", err
			}
			url, _, err := mkQueue(ctx, t, "d43-move-src", map[string]string{"VisibilityTimeout": "0",
				"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"1"}`})
			if err != nil {
				return "", err
			}
			if _, err := t.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("poison")}); err != nil {
				return "", err
			}
			for range 2 {
				if _, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}); err != nil {
					return "", err
				}
			}
			_, notDLQ := t.sqs.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(strings.Replace(dlqARN, "d43-move-dlq", "d43-move-src", 1))})
			task, err := t.sqs.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqARN)})
			if err != nil {
				return "", err
			}
			var back string
			for range 5 {
				got, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 1})
				if err != nil {
					return "", err
				}
				if len(got.Messages) > 0 {
					back = aws.ToString(got.Messages[0].Body)
					break
				}
			}
			tasks, err := t.sqs.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqARN)})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("not-a-dlq=%s handle=%v back=%s tasks=%d", code(notDLQ), aws.ToString(task.TaskHandle) != "", back, len(tasks.Results)), nil
		}}, "not-a-dlq=InvalidParameterValue handle=true back=poison tasks=1",
			"https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_StartMessageMoveTask.html (the source must be a dead-letter queue; without DestinationArn messages go back to their original source queues)"},
		{scenario{"sns", "a FIFO topic needs a MessageGroupId", func(ctx context.Context, t target) (string, error) {
			tp, err := t.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("d43-nogroup.fifo"),
				Attributes: map[string]string{"FifoTopic": "true", "ContentBasedDeduplication": "true"}})
			if err != nil {
				return "", err
			}
			_, err = t.sns.Publish(ctx, &sns.PublishInput{TopicArn: tp.TopicArn, Message: aws.String("m")})
			return code(err) + " " + status(err), nil
		}}, "InvalidParameter 400",
			"https://docs.aws.amazon.com/sns/latest/api/API_Publish.html (MessageGroupId: \"The MessageGroupId is required for FIFO topics\")"},
		{scenario{"sns", "a FIFO topic delivers to a FIFO queue with its ids", func(ctx context.Context, t target) (string, error) {
			tp, err := t.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("d43-orders.fifo"), Attributes: map[string]string{"FifoTopic": "true"}})
			if err != nil {
				return "", err
			}
			url, arn, err := mkQueue(ctx, t, "d43-orders.fifo", map[string]string{"FifoQueue": "true"})
			if err != nil {
				return "", err
			}
			if _, err := t.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: tp.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(arn),
				Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
				return "", err
			}
			for _, m := range []string{"first", "second", "first"} {
				if _, err := t.sns.Publish(ctx, &sns.PublishInput{TopicArn: tp.TopicArn, Message: aws.String(m), MessageGroupId: aws.String("order-1"),
					MessageDeduplicationId: aws.String("d-" + m)}); err != nil {
					return "", err
				}
			}
			got, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 2,
				MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
			if err != nil {
				return "", err
			}
			var out []string
			for _, m := range got.Messages {
				out = append(out, aws.ToString(m.Body)+"/"+m.Attributes["MessageGroupId"]+"/"+m.Attributes["MessageDeduplicationId"])
			}
			return strings.Join(out, ","), nil
		}}, "first/order-1/d-first,second/order-1/d-second",
			"https://docs.aws.amazon.com/sns/latest/dg/fifo-message-dedup.html (a FIFO topic's message group and deduplication ids reach its FIFO queue subscriptions)"},
	}
	return append(append(list, issue43MoreScenarios()...), modelScenarios()...)
}

// presignedExpired waits for a one-second presigned URL to expire and fetches it.
func presignedExpired(ctx context.Context, t target, url string) (string, error) {
	time.Sleep(2100 * time.Millisecond)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	c := "?"
	if _, rest, ok := strings.Cut(string(b), "<Code>"); ok {
		c, _, _ = strings.Cut(rest, "</Code>")
	}
	return fmt.Sprintf("%d %s expired=%v", resp.StatusCode, c, strings.Contains(string(b), "Request has expired")), nil
}
