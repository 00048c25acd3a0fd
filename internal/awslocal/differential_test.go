package awslocal_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
)

// target is one AWS endpoint the differential scenarios run against: cairn's emulator or
// moto, with clients configured the same way.
type target struct {
	name    string
	s3      *s3.Client
	sqs     *sqs.Client
	sns     *sns.Client
	ssm     *ssm.Client
	secrets *secretsmanager.Client
	events  *eventbridge.Client
	kms     *kms.Client
	lambda  *lambda.Client
	iam     *iam.Client
}

func newTarget(t *testing.T, name, url string) target {
	t.Helper()
	cfg := clientConfig(t, url, name == "moto")
	return target{name: name, s3: awsclient.S3(cfg), sqs: sqs.NewFromConfig(cfg), sns: sns.NewFromConfig(cfg),
		ssm: ssm.NewFromConfig(cfg), secrets: secretsmanager.NewFromConfig(cfg), events: eventbridge.NewFromConfig(cfg),
		kms: kms.NewFromConfig(cfg), lambda: lambda.NewFromConfig(cfg), iam: iam.NewFromConfig(cfg)}
}

// clientConfig is the SDK configuration of the scenarios' clients of the endpoint url: one
// attempt per call, so what the endpoint answers (an error, a throttle, a 500) is observed
// as it is. A client of moto_server (peer) may try again a call whose answer the
// connection lost, and only that: moto's server (werkzeug) closes the connection after
// every answer, and on a loaded machine a reset can cut an answer while it is read ("use
// of closed network connection", "connection reset"), which is no answer of moto's to
// compare. The SDK's own classification (retry.RetryableConnectionError) says which
// errors those are; a call moto did answer is never asked again.
func clientConfig(t *testing.T, url string, peer bool) aws.Config {
	t.Helper()
	opts := []func(*config.LoadOptions) error{
		config.WithRegion("us-east-1"),
		config.WithBaseEndpoint(url),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if !peer {
		opts = append(opts, config.WithRetryMaxAttempts(1))
	} else {
		opts = append(opts, config.WithRetryMaxAttempts(peerAttempts), config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.Retryables = []retry.IsErrorRetryable{retry.RetryableConnectionError{}}
				o.RateLimiter = ratelimit.None
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 50 * time.Millisecond, nil })
			})
		}))
	}
	cfg, err := config.LoadDefaultConfig(context.Background(), append(opts, awsclient.WithSafeBodies())...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// peerAttempts is how often a moto client tries a call whose answer the connection lost.
const peerAttempts = 3

// startMoto runs moto_server on a free loopback port for the test's duration.
func startMoto(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		t.Skip("moto_server is not installed (pip install 'moto[server]'): the differential test against moto is skipped")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for {
		if resp, err := http.Get(url + "/moto-api/data.json"); err == nil {
			resp.Body.Close()
			return url
		}
		select {
		case err := <-exited:
			t.Fatalf("moto_server exited: %v", err)
		case <-deadline:
			t.Fatal("moto_server did not answer within a minute")
		case <-tick.C:
		}
	}
}

// scenario is one sequence of SDK calls; it returns what was observed, normalized so that
// what may legitimately differ between two correct implementations (generated ids, hosts,
// times) does not.
type scenario struct {
	service, name string
	run           func(ctx context.Context, t target) (string, error)
}

// deviation is a scenario on which moto is known to differ from AWS: aws is the
// observation AWS's documentation prescribes (cairn's emulator must produce it), source
// the documentation that says so.
type deviation struct {
	aws, why, source string
}

// knownMotoDeviations lists, by service/scenario, where moto 5.2 answers differently from
// AWS, with the AWS documentation that says which side is right.
var knownMotoDeviations = map[string]deviation{
	"s3/notification to a missing queue": {
		aws: "InvalidArgument: Unable to validate the following destination configurations",
		why: "S3 checks each destination when the configuration is stored (it sends each an s3:TestEvent); moto stores it unchecked",
		source: "https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketNotificationConfiguration.html " +
			"(S3 validates the SQS, SNS and Lambda destinations unless x-amz-skip-destination-validation is set)",
	},
	"s3/notification event shape": {
		aws: "version=2.1 source=aws:s3 region=us-east-1 name=ObjectCreated:Put schema=1.0 config=uploads bucket=d-notify arn=arn:aws:s3:::d-notify key=deployments/shop+app.zip size=6 etag=true version=true sequencer=true",
		why: "moto writes eventTime without a time zone (aws-lambda-go cannot decode the record) and leaves out versionId and sequencer",
		source: "https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html " +
			"(eventTime \"in ISO-8601 format, for example, 1970-01-01T00:00:00.000Z\"; versionId for versioned buckets; sequencer on every record)",
	},
	"sqs/an out-of-range attribute is refused": {
		aws:    "InvalidAttributeValue",
		why:    "moto accepts a VisibilityTimeout of 50000 seconds",
		source: "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html (VisibilityTimeout \"An integer from 0 to 43,200 (12 hours)\")",
	},
	"sns/the notification envelope": {
		aws:    "type=Notification topic=arn:aws:sns:us-east-1:ACCOUNT:d-envelope subject=run r-1 message={\"status\":\"ok\"} attrs=[kind=map[Type:String Value:summary] stacks=map[Type:Number Value:3]] signatureVersion=1 signed=true cert=true unsubscribe=true",
		why:    "moto signs with SignatureVersion 2 on topics that did not ask for it",
		source: "https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html (SignatureVersion 1, SHA1, unless the topic's SignatureVersion attribute is set to 2)",
	},
	"s3/put with If-None-Match other than *": {
		aws:    "NotImplemented 501",
		why:    "S3 implements If-None-Match on writes only with the value *; moto ignores any other value and writes",
		source: "https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html#API_PutObject_RequestSyntax (If-None-Match: \"Expects the '*' (asterisk) character\")",
	},
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return "error"
	}
	return "ok"
}

func status(err error) string {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return strconv.Itoa(re.HTTPStatusCode())
	}
	return "200"
}

var (
	accountRE = regexp.MustCompile(`\b\d{12}\b`)
	hostRE    = regexp.MustCompile(`https?://[^/"]+`)
)

// normalize hides accounts and hosts.
func normalize(s string) string {
	return hostRE.ReplaceAllString(accountRE.ReplaceAllString(s, "ACCOUNT"), "HOST")
}

func scenarios() []scenario {
	bucket := func(ctx context.Context, t target, name string, versioned bool) error {
		if _, err := t.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			return err
		}
		if versioned {
			_, err := t.s3.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(name),
				VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}})
			return err
		}
		return nil
	}
	put := func(ctx context.Context, t target, b, k, body string, mod func(*s3.PutObjectInput)) (*s3.PutObjectOutput, error) {
		in := &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k), Body: strings.NewReader(body)}
		if mod != nil {
			mod(in)
		}
		return t.s3.PutObject(ctx, in)
	}
	queue := func(ctx context.Context, t target, name string, attrs map[string]string) (url, arn string, err error) {
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
	// receiveRecords receives until a message that is not S3's test event arrives.
	receiveRecords := func(ctx context.Context, t target, url string) (string, error) {
		for range 5 {
			out, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 2, MaxNumberOfMessages: 1})
			if err != nil {
				return "", err
			}
			for _, m := range out.Messages {
				t.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
				if !strings.Contains(aws.ToString(m.Body), "s3:TestEvent") {
					return aws.ToString(m.Body), nil
				}
			}
		}
		return "", errors.New("no message")
	}
	topicWithQueue := func(ctx context.Context, t target, name string, subAttrs map[string]string) (topicARN, queueURL string, err error) {
		tp, err := t.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(name)})
		if err != nil {
			return "", "", err
		}
		url, arn, err := queue(ctx, t, name+"-q", nil)
		if err != nil {
			return "", "", err
		}
		if _, err := t.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: tp.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(arn), Attributes: subAttrs}); err != nil {
			return "", "", err
		}
		return aws.ToString(tp.TopicArn), url, nil
	}
	str := func(v string) snstypes.MessageAttributeValue {
		return snstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	num := func(v string) snstypes.MessageAttributeValue {
		return snstypes.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(v)}
	}

	return []scenario{
		// --- S3: conditional writes ---
		{"s3", "put If-None-Match * on a new key", func(ctx context.Context, t target) (string, error) {
			if err := bucket(ctx, t, "d-cond-new", false); err != nil {
				return "", err
			}
			_, err := put(ctx, t, "d-cond-new", "k", "v", func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") })
			return code(err), nil
		}},
		{"s3", "put If-None-Match * on an existing key", func(ctx context.Context, t target) (string, error) {
			if err := bucket(ctx, t, "d-cond-old", false); err != nil {
				return "", err
			}
			put(ctx, t, "d-cond-old", "k", "v1", nil)
			_, err := put(ctx, t, "d-cond-old", "k", "v2", func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") })
			return code(err) + " " + status(err), nil
		}},
		{"s3", "put If-Match with the current and a stale ETag", func(ctx context.Context, t target) (string, error) {
			if err := bucket(ctx, t, "d-cond-match", false); err != nil {
				return "", err
			}
			first, err := put(ctx, t, "d-cond-match", "k", "v1", nil)
			if err != nil {
				return "", err
			}
			_, ok := put(ctx, t, "d-cond-match", "k", "v2", func(in *s3.PutObjectInput) { in.IfMatch = first.ETag })
			_, stale := put(ctx, t, "d-cond-match", "k", "v3", func(in *s3.PutObjectInput) { in.IfMatch = first.ETag })
			return code(ok) + " " + code(stale) + " " + status(stale), nil
		}},
		{"s3", "put with If-None-Match other than *", func(ctx context.Context, t target) (string, error) {
			if err := bucket(ctx, t, "d-cond-etag", false); err != nil {
				return "", err
			}
			first, _ := put(ctx, t, "d-cond-etag", "k", "v1", nil)
			_, err := put(ctx, t, "d-cond-etag", "k", "v2", func(in *s3.PutObjectInput) { in.IfNoneMatch = first.ETag })
			return code(err) + " " + status(err), nil
		}},
		{"s3", "delete If-Match with a stale ETag", func(ctx context.Context, t target) (string, error) {
			if err := bucket(ctx, t, "d-cond-del", false); err != nil {
				return "", err
			}
			put(ctx, t, "d-cond-del", "k", "v1", nil)
			_, err := t.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("d-cond-del"), Key: aws.String("k"), IfMatch: aws.String(`"0123456789abcdef0123456789abcdef"`)})
			return code(err) + " " + status(err), nil
		}},
		// --- S3: versions ---
		{"s3", "versions are listed newest first", func(ctx context.Context, t target) (string, error) {
			if err := bucket(ctx, t, "d-versions", true); err != nil {
				return "", err
			}
			ids := map[string]string{}
			for _, body := range []string{"v1", "v2", "v3"} {
				out, err := put(ctx, t, "d-versions", "k", body, nil)
				if err != nil {
					return "", err
				}
				ids[aws.ToString(out.VersionId)] = body
			}
			list, err := t.s3.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("d-versions")})
			if err != nil {
				return "", err
			}
			var order []string
			for _, v := range list.Versions {
				order = append(order, fmt.Sprintf("%s latest=%v", ids[aws.ToString(v.VersionId)], aws.ToBool(v.IsLatest)))
			}
			return strings.Join(order, ", "), nil
		}},
		{"s3", "a delete marker hides the object and its versions remain", func(ctx context.Context, t target) (string, error) {
			if err := bucket(ctx, t, "d-marker", true); err != nil {
				return "", err
			}
			first, _ := put(ctx, t, "d-marker", "k", "v1", nil)
			del, err := t.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("d-marker"), Key: aws.String("k")})
			if err != nil {
				return "", err
			}
			_, getErr := t.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("d-marker"), Key: aws.String("k")})
			old, oldErr := t.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("d-marker"), Key: aws.String("k"), VersionId: first.VersionId})
			body := ""
			if oldErr == nil {
				b, _ := io.ReadAll(old.Body)
				body = string(b)
			}
			list, err := t.s3.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("d-marker")})
			if err != nil {
				return "", err
			}
			objs, _ := t.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("d-marker")})
			return fmt.Sprintf("marker=%v get=%s old=%s versions=%d markers=%d latestMarker=%v listed=%d", aws.ToBool(del.DeleteMarker), code(getErr), body,
				len(list.Versions), len(list.DeleteMarkers), len(list.DeleteMarkers) == 1 && aws.ToBool(list.DeleteMarkers[0].IsLatest), len(objs.Contents)), nil
		}},
		{"s3", "missing key and missing bucket", func(ctx context.Context, t target) (string, error) {
			if err := bucket(ctx, t, "d-missing", false); err != nil {
				return "", err
			}
			_, noKey := t.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("d-missing"), Key: aws.String("nope")})
			_, noBucket := t.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("d-no-such-bucket"), Key: aws.String("k")})
			return code(noKey) + " " + status(noKey) + " " + code(noBucket) + " " + status(noBucket), nil
		}},
		// --- S3: notifications ---
		{"s3", "notification event shape", func(ctx context.Context, t target) (string, error) {
			if err := bucket(ctx, t, "d-notify", true); err != nil {
				return "", err
			}
			url, arn, err := queue(ctx, t, "d-notify-q", nil)
			if err != nil {
				return "", err
			}
			if _, err := t.s3.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{Bucket: aws.String("d-notify"),
				NotificationConfiguration: &s3types.NotificationConfiguration{QueueConfigurations: []s3types.QueueConfiguration{{
					Id: aws.String("uploads"), QueueArn: aws.String(arn), Events: []s3types.Event{"s3:ObjectCreated:*"},
					Filter: &s3types.NotificationConfigurationFilter{Key: &s3types.S3KeyFilter{FilterRules: []s3types.FilterRule{{Name: "prefix", Value: aws.String("deployments/")}}}},
				}}}}); err != nil {
				return "", err
			}
			out, err := put(ctx, t, "d-notify", "deployments/shop app.zip", "bundle", nil)
			if err != nil {
				return "", err
			}
			body, err := receiveRecords(ctx, t, url)
			if err != nil {
				return "", err
			}
			var ev events.S3Event
			if err := json.Unmarshal([]byte(body), &ev); err != nil || len(ev.Records) != 1 {
				return "", fmt.Errorf("not one S3 event record: %v %s", err, body)
			}
			r := ev.Records[0]
			o := r.S3.Object
			return fmt.Sprintf("version=%s source=%s region=%s name=%s schema=%s config=%s bucket=%s arn=%s key=%s size=%d etag=%v version=%v sequencer=%v",
				r.EventVersion, r.EventSource, r.AWSRegion, r.EventName, r.S3.SchemaVersion, r.S3.ConfigurationID, r.S3.Bucket.Name, r.S3.Bucket.Arn,
				o.Key, o.Size, `"`+o.ETag+`"` == aws.ToString(out.ETag), o.VersionID == aws.ToString(out.VersionId), o.Sequencer != ""), nil
		}},
		{"s3", "notification to a missing queue", func(ctx context.Context, t target) (string, error) {
			if err := bucket(ctx, t, "d-notify-missing", false); err != nil {
				return "", err
			}
			_, err := t.s3.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{Bucket: aws.String("d-notify-missing"),
				NotificationConfiguration: &s3types.NotificationConfiguration{QueueConfigurations: []s3types.QueueConfiguration{{
					QueueArn: aws.String("arn:aws:sqs:us-east-1:123456789012:no-such-queue"), Events: []s3types.Event{"s3:ObjectCreated:*"}}}}})
			var ae smithy.APIError
			if errors.As(err, &ae) {
				return ae.ErrorCode() + ": " + ae.ErrorMessage(), nil
			}
			return code(err), nil
		}},
		{"s3", "notification with an unknown event", func(ctx context.Context, t target) (string, error) {
			if err := bucket(ctx, t, "d-notify-event", false); err != nil {
				return "", err
			}
			_, arn, err := queue(ctx, t, "d-notify-event-q", nil)
			if err != nil {
				return "", err
			}
			_, err = t.s3.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{Bucket: aws.String("d-notify-event"),
				NotificationConfiguration: &s3types.NotificationConfiguration{QueueConfigurations: []s3types.QueueConfiguration{{
					QueueArn: aws.String(arn), Events: []s3types.Event{"s3:ObjectCreated:Upload"}}}}})
			var ae smithy.APIError
			if errors.As(err, &ae) {
				return ae.ErrorCode() + ": " + ae.ErrorMessage(), nil
			}
			return code(err), nil
		}},
		// --- SQS ---
		{"sqs", "default attributes of a new queue", func(ctx context.Context, t target) (string, error) {
			url, _, err := queue(ctx, t, "d-defaults", nil)
			if err != nil {
				return "", err
			}
			a, err := t.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{"All"}})
			if err != nil {
				return "", err
			}
			var out []string
			for _, k := range []string{"DelaySeconds", "MessageRetentionPeriod", "ReceiveMessageWaitTimeSeconds", "VisibilityTimeout", "ApproximateNumberOfMessages", "QueueArn"} {
				out = append(out, k+"="+a.Attributes[k])
			}
			return normalize(strings.Join(out, " ")), nil
		}},
		{"sqs", "MD5 of body and attributes", func(ctx context.Context, t target) (string, error) {
			url, _, err := queue(ctx, t, "d-md5", nil)
			if err != nil {
				return "", err
			}
			sent, err := t.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(`{"run":"r-1"} ünïcode`),
				MessageAttributes: map[string]sqstypes.MessageAttributeValue{
					"kind":  {DataType: aws.String("String"), StringValue: aws.String("heartbeat")},
					"count": {DataType: aws.String("Number"), StringValue: aws.String("3")},
					"blob":  {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2}},
				}})
			if err != nil {
				return "", err
			}
			got, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 1})
			if err != nil || len(got.Messages) != 1 {
				return "", fmt.Errorf("receive: %v", err)
			}
			m := got.Messages[0]
			return fmt.Sprintf("body=%s attrs=%s received-body=%s received-attrs=%s", aws.ToString(sent.MD5OfMessageBody), aws.ToString(sent.MD5OfMessageAttributes),
				aws.ToString(m.MD5OfBody), aws.ToString(m.MD5OfMessageAttributes)), nil
		}},
		{"sqs", "a delayed message is not received at once", func(ctx context.Context, t target) (string, error) {
			url, _, err := queue(ctx, t, "d-delay", map[string]string{"DelaySeconds": "60"})
			if err != nil {
				return "", err
			}
			if _, err := t.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("later")}); err != nil {
				return "", err
			}
			got, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
			if err != nil {
				return "", err
			}
			a, _ := t.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{"All"}})
			return fmt.Sprintf("received=%d delayed=%s visible=%s", len(got.Messages), a.Attributes["ApproximateNumberOfMessagesDelayed"], a.Attributes["ApproximateNumberOfMessages"]), nil
		}},
		{"sqs", "a message received too often moves to the dead-letter queue", func(ctx context.Context, t target) (string, error) {
			dlqURL, dlqARN, err := queue(ctx, t, "d-dlq", nil)
			if err != nil {
				return "", err
			}
			url, _, err := queue(ctx, t, "d-main", map[string]string{"VisibilityTimeout": "0",
				"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"1"}`})
			if err != nil {
				return "", err
			}
			if _, err := t.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("poison")}); err != nil {
				return "", err
			}
			var counts []string
			for range 2 {
				got, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
				if err != nil {
					return "", err
				}
				counts = append(counts, strconv.Itoa(len(got.Messages)))
			}
			dead, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlqURL), WaitTimeSeconds: 1})
			if err != nil {
				return "", err
			}
			body := ""
			if len(dead.Messages) == 1 {
				body = aws.ToString(dead.Messages[0].Body)
			}
			return "main receives=" + strings.Join(counts, ",") + " dlq=" + body, nil
		}},
		{"sqs", "system attributes of a received message", func(ctx context.Context, t target) (string, error) {
			url, _, err := queue(ctx, t, "d-sysattrs", nil)
			if err != nil {
				return "", err
			}
			t.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")})
			got, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
			if err != nil || len(got.Messages) != 1 {
				return "", fmt.Errorf("receive: %v", err)
			}
			a := got.Messages[0].Attributes
			return fmt.Sprintf("count=%s sent=%v first=%v sender=%v", a["ApproximateReceiveCount"], a["SentTimestamp"] != "", a["ApproximateFirstReceiveTimestamp"] != "", a["SenderId"] != ""), nil
		}},
		{"sqs", "an out-of-range attribute is refused", func(ctx context.Context, t target) (string, error) {
			_, err := t.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("d-bad"), Attributes: map[string]string{"VisibilityTimeout": "50000"}})
			return code(err), nil
		}},
		// --- SNS ---
		{"sns", "the notification envelope", func(ctx context.Context, t target) (string, error) {
			topic, url, err := topicWithQueue(ctx, t, "d-envelope", nil)
			if err != nil {
				return "", err
			}
			if _, err := t.sns.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(topic), Subject: aws.String("run r-1"), Message: aws.String(`{"status":"ok"}`),
				MessageAttributes: map[string]snstypes.MessageAttributeValue{"kind": str("summary"), "stacks": num("3")}}); err != nil {
				return "", err
			}
			got, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 2})
			if err != nil || len(got.Messages) != 1 {
				return "", fmt.Errorf("receive: %v", err)
			}
			var n events.SNSEntity
			if err := json.Unmarshal([]byte(aws.ToString(got.Messages[0].Body)), &n); err != nil {
				return "", err
			}
			var attrs []string
			for k, v := range n.MessageAttributes {
				attrs = append(attrs, fmt.Sprintf("%s=%v", k, v))
			}
			sort.Strings(attrs)
			return normalize(fmt.Sprintf("type=%s topic=%s subject=%s message=%s attrs=%v signatureVersion=%s signed=%v cert=%v unsubscribe=%v",
				n.Type, n.TopicArn, n.Subject, n.Message, attrs, n.SignatureVersion, n.Signature != "", n.SigningCertURL != "",
				strings.Contains(n.UnsubscribeURL, "SubscriptionArn="))), nil
		}},
		{"sns", "raw message delivery", func(ctx context.Context, t target) (string, error) {
			topic, url, err := topicWithQueue(ctx, t, "d-raw", map[string]string{"RawMessageDelivery": "true"})
			if err != nil {
				return "", err
			}
			if _, err := t.sns.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("plain body"),
				MessageAttributes: map[string]snstypes.MessageAttributeValue{"kind": str("summary"), "stacks": num("3")}}); err != nil {
				return "", err
			}
			got, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 2, MessageAttributeNames: []string{"All"}})
			if err != nil || len(got.Messages) != 1 {
				return "", fmt.Errorf("receive: %v", err)
			}
			m := got.Messages[0]
			var attrs []string
			for k, v := range m.MessageAttributes {
				attrs = append(attrs, k+"="+aws.ToString(v.DataType)+":"+aws.ToString(v.StringValue))
			}
			sort.Strings(attrs)
			return fmt.Sprintf("body=%s attrs=%v", aws.ToString(m.Body), attrs), nil
		}},
		{"sns", "an invalid Number attribute is refused", func(ctx context.Context, t target) (string, error) {
			tp, err := t.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("d-number")})
			if err != nil {
				return "", err
			}
			_, err = t.sns.Publish(ctx, &sns.PublishInput{TopicArn: tp.TopicArn, Message: aws.String("m"),
				MessageAttributes: map[string]snstypes.MessageAttributeValue{"n": num("many")}})
			return code(err), nil
		}},
		{"sns", "a filter policy selects messages", func(ctx context.Context, t target) (string, error) {
			topic, url, err := topicWithQueue(ctx, t, "d-filter", map[string]string{"FilterPolicy": `{"kind":["order"],"total":[{"numeric":[">=",100]}]}`, "RawMessageDelivery": "true"})
			if err != nil {
				return "", err
			}
			for _, m := range []struct {
				body  string
				attrs map[string]snstypes.MessageAttributeValue
			}{
				{"small", map[string]snstypes.MessageAttributeValue{"kind": str("order"), "total": num("5")}},
				{"refund", map[string]snstypes.MessageAttributeValue{"kind": str("refund"), "total": num("500")}},
				{"big", map[string]snstypes.MessageAttributeValue{"kind": str("order"), "total": num("250")}},
			} {
				if _, err := t.sns.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(m.body), MessageAttributes: m.attrs}); err != nil {
					return "", err
				}
			}
			got, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 2, MaxNumberOfMessages: 10})
			if err != nil {
				return "", err
			}
			var bodies []string
			for _, m := range got.Messages {
				bodies = append(bodies, aws.ToString(m.Body))
			}
			return strings.Join(bodies, ","), nil
		}},
	}
}

// TestDifferentialAgainstMoto runs the same SDK scenarios against cairn's emulator and
// moto_server and requires the same observations, except where moto is documented to
// deviate from AWS (knownMotoDeviations): there cairn's emulator must do what AWS documents.
func TestDifferentialAgainstMoto(t *testing.T) {
	if testing.Short() {
		t.Skip("starts moto_server")
	}
	moto := newTarget(t, "moto", startMoto(t))
	v := start(t, awslocal.Options{Logger: quiet(), AccountID: "123456789012"})
	cairn := newTarget(t, "cairn", v.e.URL())
	ctx := context.Background()
	var agreed, deviated int
	byService := map[string]*[3]int{} // scenarios, agree, moto deviates
	list := append(append(append(scenarios(), edgeScenarios()...), issue43List()...), bucketPolicyList()...)
	for _, sc := range list {
		key := sc.service + "/" + sc.name
		if byService[sc.service] == nil {
			byService[sc.service] = &[3]int{}
		}
		tally := byService[sc.service]
		tally[0]++
		t.Run(key, func(t *testing.T) {
			want, werr := sc.run(ctx, moto)
			got, gerr := sc.run(ctx, cairn)
			if gerr != nil {
				t.Fatalf("cairn: %v", gerr)
			}
			if d, ok := knownMotoDeviations[key]; ok {
				if got != d.aws {
					t.Fatalf("cairn: %q; want what AWS documents, %q (%s)", got, d.aws, d.source)
				}
				if werr == nil && want == got {
					t.Logf("moto now agrees with AWS here (%q): remove the deviation", want)
				}
				t.Logf("known moto deviation: %s; moto: %q %v; AWS (and cairn): %q — %s", d.why, want, werr, got, d.source)
				deviated++
				tally[2]++
				return
			}
			if werr != nil {
				t.Fatalf("moto: %v (the scenario itself fails against moto)", werr)
			}
			if got != want {
				t.Fatalf("cairn and moto disagree:\ncairn: %s\nmoto:  %s", got, want)
			}
			agreed++
			tally[1]++
		})
	}
	t.Logf("differential against moto: %d scenarios, %d agree, %d documented moto deviations", len(list), agreed, deviated)
	for _, s := range sortedServices(byService) {
		c := byService[s]
		t.Logf("  %-15s scenarios %2d  agree %2d  moto wrong %2d", s, c[0], c[1], c[2])
	}
}

// TestPeerClientRetriesOnlyLostAnswers: a moto client asks again a call whose answer a
// reset cut (as moto's server does on a loaded machine), and never one the server answered:
// a refusal or a server error is observed at the first attempt, as from cairn's emulator.
func TestPeerClientRetriesOnlyLostAnswers(t *testing.T) {
	const answer = `<CreateTopicResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><CreateTopicResult><TopicArn>arn:aws:sns:us-east-1:123456789012:t</TopicArn></CreateTopicResult><ResponseMetadata><RequestId>r1</RequestId></ResponseMetadata></CreateTopicResponse>`
	const refusal = `<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><Error><Type>Sender</Type><Code>InvalidParameter</Code><Message>Invalid parameter: Topic Name</Message></Error><RequestId>r2</RequestId></ErrorResponse>`
	tests := []struct {
		name    string
		answers []string // what the server does on each connection: "cut", or STATUS BODY
		peer    bool
		calls   int
		wantErr string
	}{
		{"an answer cut by a reset is asked again", []string{"cut", "200 " + answer}, true, 2, ""},
		{"answers cut every time fail the call", []string{"cut", "cut", "cut"}, true, peerAttempts, "connection reset"},
		{"a refusal is observed as it is", []string{"400 " + refusal, "200 " + answer}, true, 1, "InvalidParameter"},
		{"a server error is observed as it is", []string{"500 " + refusal, "200 " + answer}, true, 1, "StatusCode: 500"},
		{"the emulator's client never asks again", []string{"cut", "200 " + answer}, false, 1, "connection reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, calls := cuttingServer(t, tt.answers)
			c := sns.NewFromConfig(clientConfig(t, url, tt.peer))
			out, err := c.CreateTopic(context.Background(), &sns.CreateTopicInput{Name: aws.String("t")})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("CreateTopic: %v", err)
			case tt.wantErr == "" && aws.ToString(out.TopicArn) != "arn:aws:sns:us-east-1:123456789012:t":
				t.Fatalf("TopicArn %q", aws.ToString(out.TopicArn))
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("CreateTopic: %v, want an error with %q", err, tt.wantErr)
			}
			if n := calls(); n != tt.calls {
				t.Errorf("the server got %d calls, want %d", n, tt.calls)
			}
		})
	}
}

// cuttingServer answers one request per connection with the next of answers: "STATUS
// BODY", or "cut": half of a 200 answer, then a reset. It returns its URL and a count of
// the requests it got.
func cuttingServer(t *testing.T, answers []string) (string, func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			req, err := http.ReadRequest(bufio.NewReader(conn))
			if err != nil {
				conn.Close()
				continue
			}
			io.Copy(io.Discard, req.Body)
			mu.Lock()
			a := "cut"
			if n < len(answers) {
				a = answers[n]
			}
			n++
			mu.Unlock()
			status, body, _ := strings.Cut(a, " ")
			if status == "cut" {
				body = "<CreateTopicResponse>" + strings.Repeat(" ", 200)
				fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: %d\r\n\r\n%s", 2*len(body), body)
				conn.(*net.TCPConn).SetLinger(0) // close with a reset, as a server that drops the connection
				conn.Close()
				continue
			}
			fmt.Fprintf(conn, "HTTP/1.1 %s %s\r\nContent-Type: text/xml\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", status, http.StatusText(atoi(status)), len(body), body)
			conn.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return "http://" + ln.Addr().String(), func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// sortedServices lists a tally's services in order.
func sortedServices(m map[string]*[3]int) []string {
	out := make([]string, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
