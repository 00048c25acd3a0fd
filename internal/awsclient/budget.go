package awsclient

import (
	"context"
	"fmt"

	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/clock"
)

// DefaultBudget is the API budget of one run or drift sweep, which every CloudFormation
// call waits for: 25 calls a second, in bursts of up to 50. A run spends few calls per
// stack (a change set's looks, a few looks at its operation, whose end an event
// announces) but many at once when a wide level of the graph starts, as a
// thread-per-stack deployer does without any budget; at 4 a second, a 50-wide fan-out
// waited a minute on its own budget (see the makespan benchmark of internal/run).
// Throttling beyond it is retried by the SDK.
func DefaultBudget() *rate.Limiter { return rate.NewLimiter(rate.Limit(25), 50) }

// Budget paces calls with Limiter on Clock rather than on the wall clock: the driver's own
// clock, so a deployer simulated on a virtual clock keeps its budget and still runs at the
// speed of that clock. The zero Clock is the wall clock; a nil Limiter allows everything.
type Budget struct {
	Limiter *rate.Limiter
	Clock   clock.Clock
}

// Wait blocks until the budget allows one call, or ctx ends.
func (b Budget) Wait(ctx context.Context) error {
	if b.Limiter == nil {
		return nil
	}
	clk := b.Clock
	if clk == nil {
		clk = clock.Real
	}
	now := clk.Now()
	r := b.Limiter.ReserveN(now, 1)
	if !r.OK() {
		return fmt.Errorf("API budget: a call exceeds the burst of %d", b.Limiter.Burst())
	}
	d := r.DelayFrom(now)
	if d <= 0 {
		return nil
	}
	select {
	case <-clk.After(d):
		return nil
	case <-ctx.Done():
		r.CancelAt(clk.Now())
		return fmt.Errorf("API budget: %w", context.Cause(ctx))
	}
}
