package run

import "time"

// PolicyGate is where a run stands with the policies.
type PolicyGate string

const (
	// PolicyNone: nothing to judge (no policies, or a plan or apply run, judged apart).
	PolicyNone PolicyGate = ""
	// PolicyPending: the run must be judged before any stack starts.
	PolicyPending PolicyGate = "pending"
	// PolicyJudging: the driver was asked to judge it (JudgePolicies).
	PolicyJudging PolicyGate = "judging"
	// PolicyPassed: no denial stands; the run goes on.
	PolicyPassed PolicyGate = "passed"
	// PolicyDenied: a denial stands; nothing ran, and the run failed.
	PolicyDenied PolicyGate = "denied"
)

// PolicyVerdict is what the driver observed of judging a run: whether a denial stands,
// and why, as the run's reason says it.
type PolicyVerdict struct {
	Denied bool   `json:"denied"`
	Reason string `json:"reason,omitempty"`
}

// judged records the policies' verdict on r: a denial fails the run before any stack
// started (each blocked, naming it); otherwise the run goes on.
func judged(r *Run, v PolicyVerdict, now time.Time) {
	if r.Policy != PolicyJudging && r.Policy != PolicyPending {
		return // judged already
	}
	if !v.Denied {
		r.Policy = PolicyPassed
		return
	}
	r.Policy = PolicyDenied
	r.Status, r.Reason, r.FinishedAt = RunFailed, v.Reason, now
	for _, s := range r.Stacks {
		if !s.Phase.Terminal() {
			s.Phase, s.FinishedAt, s.PhaseSince = Blocked, now, now
			s.Reason = "not started: denied by policy"
		}
	}
}
