package lambdajob

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-dev/cairn/internal/awslocal"
	"github.com/cairn-dev/cairn/internal/clock"
)

func TestEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		beat    int
		wantErr string
	}{
		{name: "complete", env: map[string]string{"T_BUCKET": "b", "T_QUEUE": "q", "T_SECONDS": "5"}, beat: 5},
		{name: "optional unset", env: map[string]string{"T_BUCKET": "b", "T_QUEUE": "q"}},
		{name: "missing", env: map[string]string{}, wantErr: "deployer misconfigured: set T_BUCKET and T_QUEUE"},
		{name: "out of range", env: map[string]string{"T_BUCKET": "b", "T_QUEUE": "q", "T_SECONDS": "901"},
			wantErr: `T_SECONDS="901": want a whole number of seconds from 1 to 900`},
		{name: "everything at once", env: map[string]string{"T_SECONDS": "soon", "T_NAMES": "a/b"},
			wantErr: `deployer misconfigured: set T_BUCKET and T_QUEUE; T_SECONDS="soon": want a whole number of seconds from 1 to 900; T_NAMES: bad name "a/b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"T_BUCKET", "T_QUEUE", "T_SECONDS", "T_NAMES"} {
				t.Setenv(k, tc.env[k])
				if _, ok := tc.env[k]; !ok {
					os.Unsetenv(k)
				}
			}
			e := NewEnv("deployer")
			bucket, queue := e.Required("T_BUCKET"), e.Required("T_QUEUE")
			beat := e.Int("T_SECONDS", 1, 900, "seconds")
			if n := e.Optional("T_NAMES"); n == "a/b" {
				e.Check("T_NAMES", errors.New(`bad name "a/b"`))
			}
			err := e.Err()
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || bucket != "b" || queue != "q" || beat != tc.beat {
				t.Fatalf("read %q %q %d, %v", bucket, queue, beat, err)
			}
		})
	}
}

func TestDelay(t *testing.T) {
	for d, want := range map[time.Duration]int32{0: 0, -time.Second: 0, time.Millisecond: 1, 15 * time.Second: 15, 1500 * time.Millisecond: 2, MaxDelay: 900, time.Hour: 900} {
		if got := Delay(d); got != want {
			t.Errorf("Delay(%s) = %d, want %d", d, got, want)
		}
	}
}

// TestBatchMakesOneStepPerJob: records asking for the same job make one step with their
// triggers merged; a failed step fails every record that asked for it, and only those.
func TestBatchMakesOneStepPerJob(t *testing.T) {
	b := NewBatch[string](func(a, b []int) []int { return append(a, b...) })
	b.Add("run-1", "m1", []int{1})
	b.Add("run-2", "m2", []int{7})
	b.Add("run-1", "m3", []int{2})
	b.Fail("m4") // not JSON, say
	var steps []string
	var merged []int
	b.Run(func(k string, t []int) error {
		steps = append(steps, k)
		if k == "run-1" {
			merged = t
			return errors.New("S3 is down")
		}
		return nil
	}, func(k string, err error) {})
	if !slices.Equal(steps, []string{"run-1", "run-2"}) || !slices.Equal(merged, []int{1, 2}) || !b.Asked("run-2") || b.Asked("run-3") {
		t.Fatalf("steps %v with %v", steps, merged)
	}
	var failed []string
	for _, f := range b.Response().BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if !slices.Equal(failed, []string{"m4", "m1", "m3"}) {
		t.Errorf("failed records %v, want m4, m1 and m3", failed)
	}
	if r := NewBatch[string, int](nil).Response(); r.BatchItemFailures == nil {
		t.Error("an empty batch answers batchItemFailures null")
	}
}

// TestQueueSendsDelayedMessages sends through the emulator's SQS: the message is JSON and
// is not delivered before its delay.
func TestQueueSendsDelayedMessages(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	e, err := awslocal.New(awslocal.Options{Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx := context.Background()
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := sqs.NewFromConfig(cfg)
	url, err := e.SQS().CreateQueue("jobs", nil)
	if err != nil {
		t.Fatal(err)
	}
	q := Queue{SQS: c, URL: url}
	if err := q.Send(ctx, map[string]string{"cairn": "heartbeat", "run": "R1"}, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	receive := func() []sqstypes.Message {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	if m := receive(); len(m) != 0 {
		t.Fatalf("delivered before its delay: %v", aws.ToString(m[0].Body))
	}
	clk.Advance(16 * time.Second)
	if m := receive(); len(m) != 1 || aws.ToString(m[0].Body) != `{"cairn":"heartbeat","run":"R1"}` {
		t.Fatalf("after the delay: %d messages", len(m))
	}
}
