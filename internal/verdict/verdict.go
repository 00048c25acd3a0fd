// Package verdict is what judging a plan or a push with policies decided, as plain data:
// the policy function's request and answer, the results, where the policies were read,
// the overrides that lift a rule's denials in one plan, and whether what was judged may
// run. It links no policy engine (the policy function's is OPA, in package policy), so
// the deployer and the CLI enforce verdicts without carrying it; it is core: no AWS SDK
// service package (reading overrides from the bucket is package overrides').
package verdict

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Levels of a result: a denial blocks, a warning is shown.
const (
	Deny = "deny"
	Warn = "warn"
)

// Kinds of what is judged.
const (
	Plan = "plan"
	Push = "push"
)

// ErrorRule is the rule a failed evaluation is reported under: it fails closed, as a
// denial no override lifts (fix the policy, or what broke it, and plan again).
const ErrorRule = "cairn.policy_error"

// Result is one policy result: a denial or a warning, from the team's policies or the
// bundle's, naming the stack and resource when the policy says.
type Result struct {
	// Level is deny or warn; Rule the policy's package (cairn.s3_public), its id.
	Level string `json:"level"`
	Rule  string `json:"rule"`
	// Origin is team or bundle: whose policy said it.
	Origin   string `json:"origin"`
	Msg      string `json:"msg"`
	Stack    string `json:"stack,omitempty"`
	Resource string `json:"resource,omitempty"`
}

// Where names what a result is about: "stack web, resource Site".
func (r Result) Where() string {
	var where []string
	if r.Stack != "" {
		where = append(where, "stack "+r.Stack)
	}
	if r.Resource != "" {
		where = append(where, "resource "+r.Resource)
	}
	return strings.Join(where, ", ")
}

func (r Result) String() string {
	s := fmt.Sprintf("%s %s (%s policy)", r.Level, r.Rule, r.Origin)
	if w := r.Where(); w != "" {
		s += " " + w
	}
	return s + ": " + r.Msg
}

// Object is one policy file as it was read: its key, version and ETag.
type Object struct {
	Key       string `json:"key"`
	VersionID string `json:"version_id,omitempty"`
	ETag      string `json:"etag,omitempty"`
}

// Source is where the policies judged were read: the team's from Bucket under Prefix
// (each object with its version), the bundle's from its directory Dir of the bundle.
type Source struct {
	Bucket  string   `json:"bucket,omitempty"`
	Prefix  string   `json:"prefix,omitempty"`
	Objects []Object `json:"objects,omitempty"`
	// BundleDir is the bundle's policies directory (cairn.yaml's policies), BundleFiles
	// how many files it held.
	BundleDir   string `json:"bundle_dir,omitempty"`
	BundleFiles int    `json:"bundle_files,omitempty"`
}

// Request is what the deployer asks the policy function: judge the plan document Plan
// (Kind plan) or the push run Run (Kind push) of Deployment, with the bundle it names,
// at Time. The documents are passed as JSON (the function decodes them), so this
// package stays free of the run and plan types.
type Request struct {
	Kind       string    `json:"kind"`
	Deployment string    `json:"deployment"`
	PlanID     string    `json:"plan_id,omitempty"`
	RunID      string    `json:"run_id,omitempty"`
	Time       time.Time `json:"time"`
	// Plan is the plan document (Kind plan); Run the run and Bundle the bundle it
	// deploys (Kind push): JSON as they are stored, not re-encoded.
	Plan   json.RawMessage `json:"plan,omitempty"`
	Run    json.RawMessage `json:"run,omitempty"`
	Bundle json.RawMessage `json:"bundle,omitempty"`
}

// Answer is the policy function's: the results, where the policies were read, and the
// error that stopped the evaluation ("" when none; any error fails closed).
type Answer struct {
	Results []Result `json:"results,omitempty"`
	Source  Source   `json:"source"`
	Error   string   `json:"error,omitempty"`
	// Took is how long the function took to read and judge.
	Took time.Duration `json:"took_ns,omitempty"`
}

// Override lifts every denial of Rule in one plan: written by the policy role at
// policy-overrides/NAME/PLAN_ID/RULE.json, holding Reason, By and At.
type Override struct {
	Rule   string    `json:"rule"`
	Reason string    `json:"reason"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	// Key and VersionID say which object it was read from.
	Key       string `json:"key,omitempty"`
	VersionID string `json:"version_id,omitempty"`
}

// Verdict is what judging decided, as a plan or a run records it.
type Verdict struct {
	Kind string `json:"kind"`
	// At is when the policies judged; Skipped says none existed (no team policies and no
	// bundle policies), so nothing was evaluated.
	At      time.Time `json:"at"`
	Skipped bool      `json:"skipped,omitempty"`
	Results []Result  `json:"results,omitempty"`
	Source  Source    `json:"source,omitzero"`
	// Error is why the evaluation failed: it fails closed (Denied).
	Error string `json:"error,omitempty"`
	// Overrides are those that lift a denial of this verdict, when it was last checked.
	Overrides []Override `json:"overrides,omitempty"`
	// Denied: a denial stands that no override lifts (or the evaluation failed).
	Denied bool `json:"denied"`
}

// Judged is the verdict of the function's answer a at t, with the overrides that exist
// for the plan judged (none for a push).
func Judged(kind string, a Answer, t time.Time, overrides []Override) *Verdict {
	v := &Verdict{Kind: kind, At: t.UTC(), Results: a.Results, Source: a.Source, Error: a.Error}
	v.Lift(overrides)
	return v
}

// Failed is the verdict of an evaluation that could not be made (the function could not
// be invoked, or answered nothing usable): denied, naming why.
func Failed(kind string, t time.Time, err error) *Verdict {
	return &Verdict{Kind: kind, At: t.UTC(), Error: err.Error(), Denied: true}
}

// Lift applies overrides: those of a rule this verdict denies are kept (the others lift
// nothing and are dropped), and Denied says whether a denial stands.
func (v *Verdict) Lift(overrides []Override) {
	v.Overrides = nil
	for _, o := range overrides {
		if o.Rule == ErrorRule {
			continue // an evaluation error is never lifted
		}
		if slices.ContainsFunc(v.Results, func(r Result) bool { return r.Level == Deny && r.Rule == o.Rule }) &&
			!slices.ContainsFunc(v.Overrides, func(k Override) bool { return k.Rule == o.Rule }) {
			v.Overrides = append(v.Overrides, o)
		}
	}
	// sort.Slice, not slices.SortFunc: a sort instantiated for Override would add 10 KB
	// to the deployer, held under 15 MB.
	sort.Slice(v.Overrides, func(i, j int) bool { return v.Overrides[i].Rule < v.Overrides[j].Rule })
	v.Denied = v.Error != "" || len(v.Standing()) > 0
}

// Standing are the denials no override lifts.
func (v *Verdict) Standing() []Result {
	if v == nil {
		return nil
	}
	var out []Result
	for _, r := range v.Results {
		if r.Level == Deny && !v.Overridden(r.Rule) {
			out = append(out, r)
		}
	}
	return out
}

// Overridden returns whether an override lifts rule's denials.
func (v *Verdict) Overridden(rule string) bool {
	return v != nil && slices.ContainsFunc(v.Overrides, func(o Override) bool { return o.Rule == rule })
}

// Override returns the override of rule.
func (v *Verdict) Override(rule string) (Override, bool) {
	if v != nil {
		for _, o := range v.Overrides {
			if o.Rule == rule {
				return o, true
			}
		}
	}
	return Override{}, false
}

// Counts counts the denials, warnings and lifted denials.
func (v *Verdict) Counts() (deny, warn, lifted int) {
	if v == nil {
		return 0, 0, 0
	}
	for _, r := range v.Results {
		switch {
		case r.Level == Warn:
			warn++
		case v.Overridden(r.Rule):
			lifted++
		default:
			deny++
		}
	}
	return deny, warn, lifted
}

// Refusal says why a plan with standing denials may not be applied, naming each rule,
// stack and resource and the command that overrides it; "" when none stands.
func (v *Verdict) Refusal(deployment, planID string) string {
	if v == nil || !v.Denied {
		return ""
	}
	if v.Error != "" {
		return fmt.Sprintf("plan %s of %s: its policies could not be evaluated (%s), which counts as a denial no override lifts: fix the policies (`cairn policy test DIR`), then plan again", planID, deployment, v.Error)
	}
	// One line: the CLI prints a message's control characters escaped (a policy's message
	// is the policy writer's text), so lines of their own would show as "\n".
	var denials []string
	var rules []string
	for _, r := range v.Standing() {
		denials = append(denials, r.String())
		if !slices.Contains(rules, r.Rule) {
			rules = append(rules, r.Rule)
		}
	}
	var cmds []string
	for _, rule := range rules {
		cmds = append(cmds, fmt.Sprintf("`cairn policy override %s %s %s --reason TEXT`", deployment, planID, rule))
	}
	return fmt.Sprintf("plan %s of %s is denied by policy: %s; fix the change and plan again, or have the policy owner override each rule for this plan: %s",
		planID, deployment, strings.Join(denials, "; "), strings.Join(cmds, ", "))
}

// PushRefusal says why a push with a denial executed nothing and how to proceed.
func (v *Verdict) PushRefusal(deployment string) string {
	if v.Error != "" {
		return fmt.Sprintf("policies could not be evaluated (%s), which counts as a denial: nothing executed; fix the policies (`cairn policy test DIR`), then push again", v.Error)
	}
	var lines []string
	for _, r := range v.Standing() {
		lines = append(lines, r.String())
	}
	return fmt.Sprintf("denied by policy: %s; nothing executed: fix the change and push again, or plan it (`cairn plan %s DIR`) and have the policy owner override the rule for that plan (`cairn policy override %s PLAN_ID RULE --reason TEXT`), then approve it",
		strings.Join(lines, "; "), deployment, deployment)
}

// Overridable says why an override of rule would lift nothing in the plan judged by v
// (nil when it would lift a denial): a plan not judged yet, or judged with no policy, a
// rule it does not deny, or an evaluation error, which no override lifts.
func (v *Verdict) Overridable(rule string) error {
	switch {
	case v == nil:
		return fmt.Errorf("the plan has not been judged by policies (still being made, or made before policies were enforced): wait for `cairn plan --wait` to finish, or plan again")
	case v.Skipped:
		return fmt.Errorf("no policy judged the plan (there were none), so it has no denial to lift")
	case rule == ErrorRule:
		return fmt.Errorf("%s is an evaluation error, which no override lifts: fix the policies (`cairn policy test DIR`), then plan again", ErrorRule)
	}
	var denied []string
	for _, r := range v.Results {
		if r.Level == Deny && !slices.Contains(denied, r.Rule) {
			denied = append(denied, r.Rule)
		}
	}
	if slices.Contains(denied, rule) {
		return nil
	}
	if len(denied) == 0 {
		return fmt.Errorf("the plan has no denial to lift")
	}
	return fmt.Errorf("the plan has no denial of rule %s: it denies %s", rule, strings.Join(denied, ", "))
}
