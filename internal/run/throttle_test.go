package run_test

import (
	"math"
	"math/rand/v2"
	"time"
)

// What the readiness model's world adds to the makespan model's (issue 42, "make the model
// honest first"): CloudFormation throttling an account's Describe* calls, the SDK's standard
// retryer answering the throttling, and stack events whose lateness has a tail.

// describeRate and describeBurst are the token bucket CloudFormation keeps, in the model,
// for each Describe* action (DescribeStacks, DescribeChangeSet, DescribeStackEvents) of one
// account and region. CloudFormation publishes no per-action rate (its quotas page lists
// stacks, outputs and the like; AWS Support tells users the limits are internal). 5 calls a
// second is what a SAM CLI user reported of DescribeStacks ("rate caps describe-stacks to 5
// calls per second and this cannot be increased", aws/aws-sam-cli#2671); throttled
// Describe* calls are reported from 17 to 20 stacks deployed at once (Sceptre/sceptre#910,
// Kotaimen/awscfncli#68, cloudtools/stacker#337, aws/aws-cli#3186). That the other two
// actions have buckets of their own at the same rate, and the burst of 10, are assumptions.
const (
	describeRate  = 5.0
	describeBurst = 10.0
)

// api is a Describe* action CloudFormation throttles in the model.
type api int

const (
	describeStacks api = iota
	describeChangeSet
	describeStackEvents
	numAPIs
	notThrottled api = -1 // a call the model never throttles (creating or executing a change set)
)

// account is CloudFormation's throttle of one account's Describe* calls.
type account struct {
	tokens    [numAPIs]float64
	last      [numAPIs]time.Time
	throttled int // calls answered "Throttling: Rate exceeded"
}

func newAccount() *account {
	a := &account{}
	for i := range a.tokens {
		a.tokens[i] = describeBurst
	}
	return a
}

// allow takes a token of k's bucket for a call reaching CloudFormation at t, if there is one.
// The simulations make their calls in time order (cairn's within a few lanes of one step):
// a call earlier than the last refills nothing. A nil account throttles nothing.
func (a *account) allow(k api, t time.Time) bool {
	if a == nil || k == notThrottled {
		return true
	}
	if t.After(a.last[k]) {
		if !a.last[k].IsZero() {
			a.tokens[k] = min(describeBurst, a.tokens[k]+describeRate*t.Sub(a.last[k]).Seconds())
		}
		a.last[k] = t
	}
	if a.tokens[k] >= 1 {
		a.tokens[k]--
		return true
	}
	a.throttled++
	return false
}

// sdkRetryer is aws-sdk-go-v2's standard retryer (retry.NewStandard, v1.48.0) as one SDK
// client of a deployer has it: an attempt throttled is retried after a backoff drawn
// uniformly below min(1 s × 2^i, 20 s) (i counts the retries from 0: the throttling base
// delay is 1 s, retry.DefaultMaxBackoff 20 s), up to maxAttempts attempts in all
// (retry.DefaultMaxAttempts 3; cairn's awsclient.MaxAttempts 8), while its retry quota lasts
// (retry.DefaultRetryRateTokens 500: a throttled retry takes DefaultThrottlingRetryCost 5, a
// first attempt that succeeds gives DefaultNoRetryIncrement 1 back, a retry that succeeds
// its 5). A nil retryer never retries.
type sdkRetryer struct {
	maxAttempts int
	quota       int
	rng         *rand.Rand
}

func newRetryer(maxAttempts int, seed uint64) *sdkRetryer {
	return &sdkRetryer{maxAttempts: maxAttempts, quota: 500, rng: rand.New(rand.NewPCG(seed, 29))}
}

// after is the retryer's decision after attempt n (from 1) of an operation, which succeeded
// (ok) or was throttled: the backoff before the next attempt, if there is one.
func (r *sdkRetryer) after(n int, ok bool) (time.Duration, bool) {
	if r == nil {
		return 0, false
	}
	if ok {
		refund := 1
		if n > 1 {
			refund = 5
		}
		r.quota = min(500, r.quota+refund)
		return 0, false
	}
	if n >= r.maxAttempts || r.quota < 5 {
		return 0, false // the operation fails: Throttling, or the retry quota exceeded
	}
	r.quota -= 5
	d := min(time.Second<<(n-1), 20*time.Second)
	return time.Duration(r.rng.Float64() * float64(d)), true
}

// describe makes one Describe* operation of kind k whose first attempt reaches
// CloudFormation at at, retrying as r does: it returns when its last attempt reached
// CloudFormation, its attempts (each a call) and whether one was answered.
func describe(a *account, r *sdkRetryer, k api, at time.Time) (time.Time, int, bool) {
	for n := 1; ; n++ {
		ok := a.allow(k, at)
		wait, again := r.after(n, ok)
		if ok || !again {
			return at, n, ok
		}
		at = at.Add(simCallLatency).Add(wait)
	}
}

// eventLateness draws how late a stack status event reaches the deployer (EventBridge, the
// SQS queue, the event source mapping), or that it never does. 1% are lost, as in the
// makespan model; of the others 90% arrive within 0 to 2 s (uniform), and the rest form a
// tail, log-uniform from 2 to 60 s (a median of 11 s). CloudFormation publishes no
// delivery latency: its documentation has called these events best-effort and possibly out of
// order, and EventBridge retries a target it could not invoke for up to 24 hours; the
// shares and the tail's reach are assumptions, chosen so a late event costs a stack more
// than its looks do.
func eventLateness(rng *rand.Rand) (late time.Duration, delivered bool) {
	u := rng.Float64()
	switch {
	case u < 0.01:
		return 0, false
	case u < 0.01+0.99*0.9:
		return time.Duration(rng.Int64N(int64(2 * time.Second))), true
	}
	return time.Duration(float64(2*time.Second) * math.Pow(30, rng.Float64())), true
}

// flatLateness is the makespan model's: 0 to 2 s late, 1% lost.
func flatLateness(rng *rand.Rand) (time.Duration, bool) {
	if rng.IntN(100) == 0 {
		return 0, false
	}
	return time.Duration(rng.Int64N(int64(2 * time.Second))), true
}
