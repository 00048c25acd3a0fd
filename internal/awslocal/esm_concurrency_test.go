package awslocal_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-dev/cairn/internal/awslocal"
)

// TestMappingInvokesBatchesConcurrently: an SQS mapping invokes several batches at once, as
// Lambda's does (five to begin with, or at most ScalingConfig's MaximumConcurrency), so a
// batch whose invocation lingers holds up nothing behind it; MaximumConcurrency outside 2
// to 1000 is refused as Lambda refuses it.
func TestMappingInvokesBatchesConcurrently(t *testing.T) {
	for _, tc := range []struct {
		name    string
		max     int
		want    int    // batches in flight at once
		refused string // the error, when the mapping is refused
	}{
		{name: "default", want: awslocal.DefaultESMConcurrency},
		{name: "MaximumConcurrency 2", max: 2, want: 2},
		{name: "MaximumConcurrency 8", max: 8, want: 8},
		{name: "MaximumConcurrency 1", max: 1, refused: "MaximumConcurrency 1 is not valid: 2 to 1000"},
		{name: "MaximumConcurrency 1001", max: 1001, refused: "MaximumConcurrency 1001 is not valid: 2 to 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := start(t, awslocal.Options{})
			url, _ := v.queue(t, "work", nil)
			var mu sync.Mutex
			inFlight, most := 0, 0
			release := make(chan struct{})
			entered := make(chan struct{}, 100)
			err := v.e.RegisterFunction("worker", func(ctx context.Context, ev events.SQSEvent) error {
				mu.Lock()
				inFlight++
				most = max(most, inFlight)
				mu.Unlock()
				entered <- struct{}{}
				<-release
				mu.Lock()
				inFlight--
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			err = v.e.AddEventSourceMapping("work", "worker", awslocal.ESMOptions{BatchSize: 1, MaxConcurrency: tc.max})
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("err = %v, want %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.want + 3 {
				if _, err := v.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(fmt.Sprint(i))}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range tc.want {
				select {
				case <-entered:
				case <-time.After(10 * time.Second):
					t.Fatalf("%d batches in flight after 10 s, want %d", i, tc.want)
				}
			}
			// No more than want: the others wait in the queue until one ends.
			select {
			case <-entered:
				t.Fatalf("batch %d invoked while %d were in flight", tc.want+1, tc.want)
			case <-time.After(200 * time.Millisecond):
			}
			close(release)
			for range 3 {
				select {
				case <-entered:
				case <-time.After(10 * time.Second):
					t.Fatal("the waiting batches were never invoked")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if most != tc.want {
				t.Errorf("at most %d batches in flight at once, want %d", most, tc.want)
			}
		})
	}
}
