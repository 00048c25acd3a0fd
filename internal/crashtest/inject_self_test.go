package crashtest

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
)

// The injector itself: a crash before a call keeps it from AWS, a crash after lets AWS act
// and loses the answer, a panic unwinds from the call, and nothing the killed invocation
// calls afterwards reaches AWS.
func TestInjectorKills(t *testing.T) {
	tests := []struct {
		name    string
		p       point
		stored  []string // objects that exist afterwards
		panics  bool
		errorIs error
	}{
		{name: "before", p: point{When: before, Label: "s3.PutObject b", Occurrence: 1, How: cancels}, stored: []string{"a/1"}, errorIs: context.Canceled},
		{name: "after", p: point{When: after, Label: "s3.PutObject b", Occurrence: 1, How: cancels}, stored: []string{"a/1", "b/1"}, errorIs: context.Canceled},
		{name: "after, panicking", p: point{When: after, Label: "s3.PutObject b", Occurrence: 1, How: panics}, stored: []string{"a/1", "b/1"}, panics: true},
		{name: "second occurrence", p: point{When: before, Label: "s3.PutObject a", Occurrence: 2, How: cancels}, stored: []string{"a/1", "b/1"}, errorIs: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			em, err := awslocal.New(awslocal.Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			if err := em.Start("127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			defer em.Close()
			cfg, err := em.AWSConfig(ctx)
			if err != nil {
				t.Fatal(err)
			}
			plain := awsclient.S3(cfg)
			if _, err := plain.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("crash-b")}); err != nil {
				t.Fatal(err)
			}
			inj := newInjector([]point{tt.p})
			cfg.APIOptions = append(cfg.APIOptions, inj.middleware)
			crashing := awsclient.S3(cfg)

			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			inv := &invocation{cancel: cancel}
			inj.begin(inv)
			put := func(key string) (err error) {
				defer func() {
					if r := recover(); r != nil {
						if _, ok := r.(crashed); !ok || !tt.panics {
							panic(r)
						}
						err = errors.New("panicked")
					}
				}()
				_, err = crashing.PutObject(context.WithValue(ctx, invocationKey{}, inv), &s3.PutObjectInput{Bucket: aws.String("crash-b"), Key: aws.String(key), Body: strings.NewReader("x")})
				return err
			}
			var errs []error
			for _, key := range []string{"a/1", "b/1", "a/2", "c/1"} {
				errs = append(errs, put(key))
			}
			inj.end()
			if errs[0] != nil {
				t.Fatalf("the call before the crash point failed: %v", errs[0])
			}
			var crashErr error
			for _, err := range errs[1:] {
				if err != nil && !errors.Is(err, errKilled) {
					crashErr = err
				}
			}
			switch {
			case tt.panics && (crashErr == nil || crashErr.Error() != "panicked"):
				t.Errorf("crash error %v, want a panic", crashErr)
			case !tt.panics && !errors.Is(crashErr, tt.errorIs):
				t.Errorf("crash error %v, want %v", crashErr, tt.errorIs)
			}
			for i, err := range errs[2:] {
				if err == nil {
					t.Errorf("call %d after the crash succeeded; a killed invocation reaches nothing", i+3)
				}
			}
			out, err := plain.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("crash-b")})
			if err != nil {
				t.Fatal(err)
			}
			var stored []string
			for _, o := range out.Contents {
				stored = append(stored, aws.ToString(o.Key))
			}
			if strings.Join(stored, " ") != strings.Join(tt.stored, " ") {
				t.Errorf("objects %v, want %v", stored, tt.stored)
			}
			if _, fired, unfired := inj.log(); len(fired) != 1 || len(unfired) != 0 {
				t.Errorf("fired %v, unfired %v: want the point fired once", fired, unfired)
			}
		})
	}
}
