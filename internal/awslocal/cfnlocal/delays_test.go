package cfnlocal

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// TestChangeSetDelaysDrawn creates change sets with ChangeSetDelay 2s and
// ChangeSetDelayMax 12s and steps the virtual clock a quarter second at a time until each
// is CREATE_COMPLETE: each took 2 to 12 s, they do not all take the same, and the same
// seed draws the same times again (a different one other times).
func TestChangeSetDelaysDrawn(t *testing.T) {
	times := func(seed uint64) []time.Duration {
		e := newEnv(t, func(o *Options) {
			o.ChangeSetDelay, o.ChangeSetDelayMax, o.DelaySeed = 2*time.Second, 12*time.Second, seed
		})
		ctx := context.Background()
		var took []time.Duration
		for i := range 8 {
			stack, name := fmt.Sprintf("s%d", i), fmt.Sprintf("cs%d", i)
			if _, err := e.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String(stack),
				ChangeSetName: aws.String(name), TemplateBody: aws.String(queueV1), ChangeSetType: types.ChangeSetTypeCreate}); err != nil {
				t.Fatal(err)
			}
			start := e.clk.Now()
			for {
				out, err := e.cfn.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String(stack), ChangeSetName: aws.String(name)})
				if err != nil {
					t.Fatal(err)
				}
				if out.Status == types.ChangeSetStatusCreateComplete {
					break
				}
				if e.clk.Now().Sub(start) > 13*time.Second {
					t.Fatalf("change set %s: still %s after %v", name, out.Status, e.clk.Now().Sub(start))
				}
				e.clk.Advance(250 * time.Millisecond)
			}
			took = append(took, e.clk.Now().Sub(start))
		}
		return took
	}
	a, b, c := times(7), times(7), times(8)
	for _, d := range a {
		if d < 2*time.Second || d > 12*time.Second+250*time.Millisecond {
			t.Errorf("a change set took %v, want 2 to 12 s", d)
		}
	}
	if slices.Max(a)-slices.Min(a) < 2*time.Second {
		t.Errorf("8 change sets took %v: want times spread over 2 to 12 s", a)
	}
	if !slices.Equal(a, b) {
		t.Errorf("seed 7 drew %v, then %v: want the same", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 7 and 8 both drew %v", a)
	}
}
