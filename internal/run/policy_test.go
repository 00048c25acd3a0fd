package run

import (
	"testing"
)

// TestPolicyGate: a push marked to be judged (PolicyPending) starts nothing before the
// verdict: its first step asks the driver to judge (JudgePolicies, alone) and again if the
// answer was lost; a denial ends the run failed with every stack blocked and nothing
// started; a pass lets the run start as if it had not been judged.
func TestPolicyGate(t *testing.T) {
	tests := []struct {
		name       string
		verdict    *PolicyVerdict
		wantStatus Status
		wantGate   PolicyGate
		wantKinds  []ActionKind
	}{
		{"no verdict yet: judge, start nothing", nil, Running, PolicyJudging, []ActionKind{JudgePolicies}},
		{"denied: nothing starts", &PolicyVerdict{Denied: true, Reason: "denied by policy: deny cairn.s3_public"}, RunFailed, PolicyDenied, nil},
		{"passed: the roots start", &PolicyVerdict{}, Running, PolicyPassed, []ActionKind{CreateChangeSet}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := chain("a", "b")
			r.Policy = PolicyPending
			next, actions := Advance(r, nil, t0, Options{})
			if next.Policy != PolicyJudging || len(actions) != 1 || actions[0].Kind != JudgePolicies || actions[0].Stack != "" {
				t.Fatalf("first step: gate %q, actions %+v; want judging and JudgePolicies alone", next.Policy, actions)
			}
			var obs []Observation
			if tt.verdict != nil {
				obs = []Observation{{Policy: tt.verdict}}
			}
			next, actions = Advance(next, obs, t0.Add(1), Options{})
			var kinds []ActionKind
			for _, a := range actions {
				kinds = append(kinds, a.Kind)
			}
			if next.Status != tt.wantStatus || next.Policy != tt.wantGate || len(kinds) != len(tt.wantKinds) || (len(kinds) > 0 && kinds[0] != tt.wantKinds[0]) {
				t.Fatalf("status %s, gate %q, actions %v; want %s, %q, %v", next.Status, next.Policy, kinds, tt.wantStatus, tt.wantGate, tt.wantKinds)
			}
			if tt.wantStatus == RunFailed {
				if next.Reason != tt.verdict.Reason {
					t.Errorf("reason %q, want the verdict's", next.Reason)
				}
				for _, s := range next.Stacks {
					if s.Phase != Blocked || s.Reason != "not started: denied by policy" {
						t.Errorf("stack %s: %s (%s), want blocked by policy", s.Name, s.Phase, s.Reason)
					}
				}
				if again, acts := Advance(next, []Observation{{Policy: &PolicyVerdict{}}}, t0.Add(2), Options{}); again.Status != RunFailed || len(acts) > 0 {
					t.Errorf("a verdict after the denial changed the run: %s, %v", again.Status, acts)
				}
			}
		})
	}
}

// TestUngatedRunIsNotJudged: a run without the gate (no policies, a plan, an apply)
// never asks to judge.
func TestUngatedRunIsNotJudged(t *testing.T) {
	_, actions := Advance(chain("a", "b"), nil, t0, Options{})
	for _, a := range actions {
		if a.Kind == JudgePolicies {
			t.Fatalf("an ungated run asked to judge: %+v", actions)
		}
	}
}
