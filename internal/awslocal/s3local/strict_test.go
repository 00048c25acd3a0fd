package s3local_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithymw "github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cairn-dev/cairn/internal/awslocal/s3local"
)

// TestNotificationConfigurationIsValidated: S3 refuses a notification configuration
// naming a destination that does not exist or an event it does not know, with its own
// wording, and keeps the configuration it had.
const supported = "'s3:IntelligentTiering', 's3:LifecycleExpiration:*', 's3:LifecycleExpiration:Delete', 's3:LifecycleExpiration:DeleteMarkerCreated', 's3:LifecycleTransition', 's3:ObjectAcl:Put', 's3:ObjectCreated:*', 's3:ObjectCreated:CompleteMultipartUpload', 's3:ObjectCreated:Copy', 's3:ObjectCreated:Post', 's3:ObjectCreated:Put', 's3:ObjectRemoved:*', 's3:ObjectRemoved:Delete', 's3:ObjectRemoved:DeleteMarkerCreated', 's3:ObjectRestore:*', 's3:ObjectRestore:Completed', 's3:ObjectRestore:Delete', 's3:ObjectRestore:Post', 's3:ObjectTagging:*', 's3:ObjectTagging:Delete', 's3:ObjectTagging:Put', 's3:ReducedRedundancyLostObject', 's3:Replication:*', 's3:Replication:OperationFailedReplication', 's3:Replication:OperationMissedThreshold', 's3:Replication:OperationNotTracked', 's3:Replication:OperationReplicatedAfterThreshold'"

func TestNotificationConfigurationIsValidated(t *testing.T) {
	const queue = "arn:aws:sqs:us-east-1:000000000000:deploy"
	const topic = "arn:aws:sns:us-east-1:000000000000:uploads"
	exists := func(arn string) bool { return arn == queue || arn == topic }
	var got sink
	c, _ := start(t, s3local.Options{Notify: got.notify, QueueExists: exists, TopicExists: exists})
	ctx := context.Background()
	mustBucket(t, c, "bkt", false)
	config := func(q, tp string, event types.Event) *types.NotificationConfiguration {
		nc := &types.NotificationConfiguration{}
		if q != "" {
			nc.QueueConfigurations = []types.QueueConfiguration{{QueueArn: aws.String(q), Events: []types.Event{event}}}
		}
		if tp != "" {
			nc.TopicConfigurations = []types.TopicConfiguration{{TopicArn: aws.String(tp), Events: []types.Event{event}}}
		}
		return nc
	}
	if _, err := c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{Bucket: aws.String("bkt"),
		NotificationConfiguration: config(queue, topic, "s3:ObjectCreated:*")}); err != nil {
		t.Fatalf("valid configuration: %v", err)
	}
	tests := []struct {
		name        string
		nc          *types.NotificationConfiguration
		message     string
		argumentsIn []string
	}{
		{"missing queue", config(queue+"-gone", "", "s3:ObjectCreated:*"), "Unable to validate the following destination configurations",
			[]string{"<ArgumentName1>" + queue + "-gone</ArgumentName1>", "<ArgumentValue1>The destination queue does not exist</ArgumentValue1>"}},
		{"missing topic", config("", topic+"-gone", "s3:ObjectRemoved:*"), "Unable to validate the following destination configurations",
			[]string{"<ArgumentValue1>The destination topic does not exist</ArgumentValue1>"}},
		{"both missing", config(queue+"-a", topic+"-b", "s3:ObjectCreated:Put"), "Unable to validate the following destination configurations",
			[]string{"<ArgumentName1>" + queue + "-a</ArgumentName1>", "<ArgumentName2>" + topic + "-b</ArgumentName2>"}},
		{"unknown event", config(queue, "", "s3:ObjectCreated:Upload"), "The event 's3:ObjectCreated:Upload' is not supported for notifications. Supported events are as follows: ['s3:IntelligentTiering', 's3:LifecycleExpiration:*', 's3:LifecycleExpiration:Delete', 's3:LifecycleExpiration:DeleteMarkerCreated', 's3:LifecycleTransition', 's3:ObjectAcl:Put', 's3:ObjectCreated:*', 's3:ObjectCreated:CompleteMultipartUpload', 's3:ObjectCreated:Copy', 's3:ObjectCreated:Post', 's3:ObjectCreated:Put', 's3:ObjectRemoved:*', 's3:ObjectRemoved:Delete', 's3:ObjectRemoved:DeleteMarkerCreated', 's3:ObjectRestore:*', 's3:ObjectRestore:Completed', 's3:ObjectRestore:Delete', 's3:ObjectRestore:Post', 's3:ObjectTagging:*', 's3:ObjectTagging:Delete', 's3:ObjectTagging:Put', 's3:ReducedRedundancyLostObject', 's3:Replication:*', 's3:Replication:OperationFailedReplication', 's3:Replication:OperationMissedThreshold', 's3:Replication:OperationNotTracked', 's3:Replication:OperationReplicatedAfterThreshold']",
			[]string{"<ArgumentName>Event</ArgumentName>", "<ArgumentValue>s3:ObjectCreated:Upload</ArgumentValue>"}},
		{"event without s3: prefix", config(queue, "", "ObjectCreated:*"), "The event 'ObjectCreated:*' is not supported for notifications. Supported events are as follows: [" + supported + "]", nil},
		{"queue ARN of another service", config(topic, "", "s3:ObjectCreated:*"), "The ARN is not well formed", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body string
			_, err := c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{Bucket: aws.String("bkt"), NotificationConfiguration: tt.nc},
				func(o *s3.Options) { o.APIOptions = append(o.APIOptions, captureBody(&body)) })
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidArgument" || ae.ErrorMessage() != tt.message {
				t.Fatalf("err = %v, want InvalidArgument %q", err, tt.message)
			}
			for _, want := range tt.argumentsIn {
				if !strings.Contains(body, want) {
					t.Errorf("error document %s lacks %s", body, want)
				}
			}
		})
	}
	cur, err := c.GetBucketNotificationConfiguration(ctx, &s3.GetBucketNotificationConfigurationInput{Bucket: aws.String("bkt")})
	if err != nil || len(cur.QueueConfigurations) != 1 || len(cur.TopicConfigurations) != 1 {
		t.Fatalf("the refused configurations replaced the stored one: %+v %v", cur, err)
	}
}

// captureBody keeps the raw error document the SDK decodes.
func captureBody(dst *string) func(*smithymw.Stack) error {
	return func(st *smithymw.Stack) error {
		return st.Deserialize.Add(smithymw.DeserializeMiddlewareFunc("capture", func(ctx context.Context, in smithymw.DeserializeInput, next smithymw.DeserializeHandler) (smithymw.DeserializeOutput, smithymw.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp.StatusCode >= 300 {
				b, _ := io.ReadAll(resp.Body)
				*dst = string(b)
				resp.Body = io.NopCloser(strings.NewReader(*dst))
			}
			return out, md, err
		}), smithymw.After)
	}
}

// TestIfNoneMatchOnlyAsterisk: S3 implements If-None-Match on writes only as "*"; any
// other value, or both If-Match and If-None-Match, is NotImplemented (501).
func TestIfNoneMatchOnlyAsterisk(t *testing.T) {
	c, _ := start(t, s3local.Options{})
	ctx := context.Background()
	mustBucket(t, c, "bkt", true)
	out := put(t, c, "bkt", "locks/k", "v1")
	for _, tt := range []struct {
		name        string
		ifNoneMatch string
		ifMatch     string
		code        string
		status      int
	}{
		{"an ETag", aws.ToString(out.ETag), "", "NotImplemented", http.StatusNotImplemented},
		{"a word", "true", "", "NotImplemented", http.StatusNotImplemented},
		{"with If-Match", "*", aws.ToString(out.ETag), "NotImplemented", http.StatusNotImplemented},
		{"asterisk on an existing key", "*", "", "PreconditionFailed", http.StatusPreconditionFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("locks/k"), Body: strings.NewReader("v2"), IfNoneMatch: aws.String(tt.ifNoneMatch)}
			if tt.ifMatch != "" {
				in.IfMatch = aws.String(tt.ifMatch)
			}
			_, err := c.PutObject(ctx, in)
			var re *smithyhttp.ResponseError
			if errorCode(err) != tt.code || !errors.As(err, &re) || re.HTTPStatusCode() != tt.status {
				t.Fatalf("err = %v, want %s (%d)", err, tt.code, tt.status)
			}
			if tt.code == "NotImplemented" && !strings.Contains(err.Error(), "A header you provided implies functionality that is not implemented") {
				t.Fatalf("err = %v, want S3's NotImplemented message", err)
			}
		})
	}
	if got := get(t, c, "bkt", "locks/k"); got != "v1" {
		t.Fatalf("object = %q after refused writes, want v1", got)
	}
}

// TestListObjectVersionsNewestFirst: each key's versions are listed newest first, as S3
// does, also across pages.
func TestListObjectVersionsNewestFirst(t *testing.T) {
	c, _ := start(t, s3local.Options{})
	ctx := context.Background()
	mustBucket(t, c, "bkt", true)
	var want []string // newest first per key, keys in order
	for _, key := range []string{"a", "b"} {
		var ids []string
		for i := range 3 {
			ids = append([]string{aws.ToString(put(t, c, "bkt", key, key+string(rune('0'+i))).VersionId)}, ids...)
		}
		want = append(want, ids...)
	}
	var got []string
	var latest []bool
	in := &s3.ListObjectVersionsInput{Bucket: aws.String("bkt"), MaxKeys: aws.Int32(2)}
	for pages := 0; ; pages++ {
		out, err := c.ListObjectVersions(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range out.Versions {
			got = append(got, aws.ToString(v.VersionId))
			latest = append(latest, aws.ToBool(v.IsLatest))
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		in.KeyMarker, in.VersionIdMarker = out.NextKeyMarker, out.NextVersionIdMarker
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("versions listed %v, want newest first %v", got, want)
	}
	if !latest[0] || latest[1] || !latest[3] {
		t.Fatalf("IsLatest = %v, want the first version of each key", latest)
	}
}
