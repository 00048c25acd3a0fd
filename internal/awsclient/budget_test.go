package awsclient

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/clock"
)

// TestBudgetPacesOnItsClock spends the default budget's burst at once, then waits for the
// virtual clock, never for the wall clock: a call beyond the burst returns only once the
// fake clock has moved by the refill time.
func TestBudgetPacesOnItsClock(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	b := Budget{Limiter: DefaultBudget(), Clock: clk}
	ctx := context.Background()
	for i := range 50 {
		if err := b.Wait(ctx); err != nil {
			t.Fatalf("call %d of the burst: %v", i+1, err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- b.Wait(ctx) }()
	if !clk.WaitForWaiters(1, 5*time.Second) {
		t.Fatal("the call after the burst did not wait on the budget's clock")
	}
	select {
	case err := <-done:
		t.Fatalf("the call after the burst returned before the clock moved: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	clk.Advance(39 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the call after the burst returned 39ms into a 40ms refill: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	clk.Advance(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestBudgetWaitEndsWithItsContext(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	b := Budget{Limiter: rate.NewLimiter(1, 1), Clock: clk}
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("lambda deadline")
	done := make(chan error, 1)
	go func() { done <- b.Wait(ctx) }()
	clk.WaitForWaiters(1, 5*time.Second)
	cancel(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("err %v, want the context's cause", err)
	}
	// The cancelled call gave its reservation back: a second later one call is allowed
	// at once (without the refund, it would wait for a second more).
	clk.Advance(time.Second)
	go func() { done <- b.Wait(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled call's reservation was not given back")
	}
}

func TestBudgetWithoutLimiterAllowsEverything(t *testing.T) {
	for range 100 {
		if err := (Budget{}).Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
