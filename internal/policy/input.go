// Package policy judges a plan (or a push) with policies written in Rego, evaluated by the
// Open Policy Agent library: the input is a documented JSON view of the plan document
// (Input, docs/policy.md), the results each package's deny and warn. Team policies and
// the bundle's own are compiled and evaluated apart (Evaluate), so a bundle's modules can
// only add results, never change how a team rule evaluates.
//
// The package is core: plain data and pure functions, no AWS SDK service package.
package policy

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/run"
)

// Masked is what a secret parameter's value shows as in the input.
const Masked = "****"

// Input is what every policy reads as input: one plan (Kind "plan") or one push run (Kind
// "push"). Each field is documented in docs/policy.md; a field added here is added there.
type Input struct {
	// Kind is "plan" or "push".
	Kind       string `json:"kind"`
	Deployment string `json:"deployment"`
	Namespace  string `json:"namespace,omitempty"`
	// PlanID is the plan's id (Kind plan); RunID the run's (a push, or the plan run).
	PlanID string `json:"plan_id,omitempty"`
	RunID  string `json:"run_id,omitempty"`
	// Time is when the policies are evaluated (RFC 3339, UTC); TimeNS the same in
	// nanoseconds since the epoch, for Rego's time.* built-ins.
	Time   string `json:"time"`
	TimeNS int64  `json:"time_ns"`
	// Destroy marks a plan that deletes every stack of the deployment.
	Destroy    bool       `json:"destroy,omitempty"`
	Provenance Provenance `json:"provenance"`
	// Stacks in name order.
	Stacks []Stack `json:"stacks"`
}

// Provenance is where the bundle came from, as its upload recorded it.
type Provenance struct {
	Commit string `json:"commit,omitempty"`
	// Ref is the ref checked out (refs/heads/main, refs/pull/7/merge); Branch the branch it
	// names, or the pull request's head branch.
	Ref         string `json:"ref,omitempty"`
	Branch      string `json:"branch,omitempty"`
	Remote      string `json:"remote,omitempty"`
	PullRequest int    `json:"pull_request,omitempty"`
	HeadCommit  string `json:"head_commit,omitempty"`
	Merged      bool   `json:"merged,omitempty"`
	RunURL      string `json:"run_url,omitempty"`
	// Author is who the upload records as its author: "" until uploads record one.
	Author       string `json:"author,omitempty"`
	BundleKey    string `json:"bundle_key,omitempty"`
	BundleSHA256 string `json:"bundle_sha256,omitempty"`
}

// Stack is one stack of the plan or run.
type Stack struct {
	Name      string `json:"name"`
	StackName string `json:"stack_name"`
	// Action is the plan's (create, update, delete, recreate, check, adopt, read, disabled,
	// drop, none) or, for a push, the run's intent (deploy, recreate, delete, read).
	Action string `json:"action"`
	// Protected: the config has protected: true (changes only through an approved plan).
	Protected             bool `json:"protected"`
	TerminationProtection bool `json:"termination_protection"`
	// Account and Region are where the stack lives ("" account: the deployer's own).
	Account string `json:"account,omitempty"`
	Region  string `json:"region,omitempty"`
	// Capabilities are those its change sets acknowledge (known with the bundle only).
	Capabilities []string `json:"capabilities,omitempty"`
	// Parameters are the resolved values, each secret one as "****"; Secret names those.
	Parameters map[string]string `json:"parameters,omitempty"`
	Secret     []string          `json:"secret_parameters,omitempty"`
	// Options are the stack options of cairn.yaml (known with the bundle only).
	Options *StackOptions `json:"options,omitempty"`
	// TemplateKnown says Resources come from the template (with properties and policies);
	// otherwise they are what the plan lists (type and logical id only).
	TemplateKnown bool       `json:"template_known"`
	Resources     []Resource `json:"resources,omitempty"`
	Changes       []Change   `json:"changes,omitempty"`
}

// StackOptions are a stack's options as cairn.yaml sets them.
type StackOptions struct {
	StackPolicy      bool     `json:"stack_policy"`
	NotificationARNs []string `json:"notification_arns,omitempty"`
	RollbackTriggers []string `json:"rollback_triggers,omitempty"`
	MonitoringTime   int      `json:"rollback_monitoring_minutes,omitempty"`
	TimeoutInMinutes int      `json:"timeout_in_minutes,omitempty"`
	DisableRollback  bool     `json:"disable_rollback"`
}

// Resource is a resource of the stack's template.
type Resource struct {
	LogicalID           string         `json:"logical_id"`
	Type                string         `json:"type"`
	DeletionPolicy      string         `json:"deletion_policy,omitempty"`
	UpdateReplacePolicy string         `json:"update_replace_policy,omitempty"`
	Properties          map[string]any `json:"properties,omitempty"`
}

// Change is one resource change of the stack's change set.
type Change struct {
	LogicalID  string `json:"logical_id"`
	PhysicalID string `json:"physical_id,omitempty"`
	Type       string `json:"type"`
	// Action is Add, Modify, Remove, Import or Dynamic; Replacement True, False or
	// Conditional (Modify only).
	Action      string `json:"action"`
	Replacement string `json:"replacement,omitempty"`
	// Scope is what of the resource changes (Properties, Tags, Metadata, ...); Details
	// each change detail as the plan shows it.
	Scope   []string `json:"scope,omitempty"`
	Details []string `json:"details,omitempty"`
}

// Source is what the planned bundle says of a stack beyond the plan document: its parsed
// template, capabilities and options. Nil, or a stack missing, means not known.
type Source map[string]*config.Stack

// FromPlan builds the input of a plan document, evaluated at now; src adds what the
// bundle says of each stack (nil: the plan document alone).
func FromPlan(doc *plan.Document, src Source, now time.Time) Input {
	in := Input{Kind: "plan", Deployment: doc.Deployment, Namespace: doc.Namespace, PlanID: doc.ID,
		Destroy: doc.Destroy, Provenance: fromBundle(doc.Bundle)}
	in.setTime(now)
	var rs map[string]*run.Stack
	if doc.Run != nil {
		in.RunID, rs = doc.Run.ID, doc.Run.Stacks
	}
	for _, ps := range doc.Stacks {
		s := Stack{Name: ps.Name, StackName: ps.StackName, Action: string(ps.Action), Protected: doc.Protection[ps.Name]}
		params, noEcho := ps.Parameters, []string(nil)
		if r := rs[ps.Name]; r != nil {
			s.place(r)
			noEcho = r.NoEcho
			if params == nil {
				params = r.Parameters
			}
		}
		s.Parameters, s.Secret = masked(params, noEcho)
		for _, r := range ps.Resources {
			s.Resources = append(s.Resources, Resource{LogicalID: r.LogicalID, Type: r.Type})
		}
		for _, c := range ps.Changes {
			s.Changes = append(s.Changes, change(c))
		}
		s.withSource(src[ps.Name])
		in.Stacks = append(in.Stacks, s)
	}
	return in
}

// FromRun builds the input of a push: the run r of bundle b, evaluated at now, with what
// the bundle says of each stack (src). A push makes its change sets as it goes, so its
// stacks have no Changes: policies judge what the templates declare.
func FromRun(r *run.Run, b plan.BundleVersion, src Source, now time.Time) Input {
	in := Input{Kind: "push", Deployment: r.Deployment, RunID: r.ID, Provenance: fromBundle(b)}
	in.setTime(now)
	names := make([]string, 0, len(r.Stacks))
	for n := range r.Stacks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rs := r.Stacks[n]
		s := Stack{Name: n, StackName: rs.StackName, Action: string(rs.Intent)}
		s.place(rs)
		s.Parameters, s.Secret = masked(rs.Parameters, rs.NoEcho)
		s.withSource(src[n])
		in.Stacks = append(in.Stacks, s)
	}
	return in
}

func (in *Input) setTime(now time.Time) {
	in.Time, in.TimeNS = now.UTC().Format(time.RFC3339), now.UnixNano()
}

// place reads where the stack lives and its guards from the run's stack.
func (s *Stack) place(r *run.Stack) {
	s.Account, s.Region = r.At.Account, r.At.Region
	if s.Region == "" {
		s.Region = r.Target.Region
	}
	s.Protected = s.Protected || r.PlanOnly
	s.TerminationProtection = r.Protect
}

// withSource adds the template's resources, capabilities and options of the bundle.
func (s *Stack) withSource(cs *config.Stack) {
	if cs == nil {
		return
	}
	s.Protected = s.Protected || cs.Protected
	s.TerminationProtection = s.TerminationProtection || cs.TerminationProtection
	s.Capabilities = slices.Clone(cs.Capabilities)
	if s.Region == "" {
		s.Region = cs.Target.Region
	}
	o := cs.Options
	so := &StackOptions{StackPolicy: len(o.StackPolicy) > 0, NotificationARNs: o.NotificationARNs,
		TimeoutInMinutes: o.TimeoutInMinutes, DisableRollback: o.DisableRollback}
	if o.Rollback != nil {
		so.MonitoringTime = o.Rollback.MonitoringTimeInMinutes
		for _, t := range o.Rollback.Triggers {
			so.RollbackTriggers = append(so.RollbackTriggers, t.ARN)
		}
	}
	s.Options = so
	if cs.Template != nil && cs.Template.Node != nil {
		if rs, ok := resources(cs.Template.Node); ok {
			s.Resources, s.TemplateKnown = rs, true
		}
	}
}

// masked returns the parameters with every secret value as Masked (a sealed value, a
// NoEcho parameter's, or anything holding a cairn reference, should one be malformed),
// and the names of those.
func masked(params map[string]string, noEcho []string) (map[string]string, []string) {
	if len(params) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(params))
	var secret []string
	for k, v := range params {
		if slices.Contains(noEcho, k) || config.HoldsSealed(v) || strings.Contains(v, "{{cairn:") || v == Masked {
			out[k] = Masked
			secret = append(secret, k)
			continue
		}
		out[k] = v
	}
	sort.Strings(secret)
	return out, secret
}

func fromBundle(b plan.BundleVersion) Provenance {
	p := Provenance{Commit: b.GitRef, Remote: b.GitRemote, BundleKey: b.Key, BundleSHA256: b.SHA256}
	src := b.Source
	p.Ref, p.PullRequest, p.HeadCommit, p.Merged, p.RunURL = src.Ref, src.PullRequest, src.HeadCommit, src.Merged, src.RunURL
	if src.Commit != "" {
		p.Commit = src.Commit
	}
	if src.Remote != "" {
		p.Remote = src.Remote
	}
	p.Branch = branch(src)
	return p
}

// branch is the branch a source names: the pull request's head branch, or the ref's.
func branch(src provenance.Source) string {
	if src.HeadRef != "" {
		return strings.TrimPrefix(src.HeadRef, "refs/heads/")
	}
	if b, ok := strings.CutPrefix(src.Ref, "refs/heads/"); ok {
		return b
	}
	return ""
}

func change(c plan.Change) Change {
	out := Change{LogicalID: c.LogicalID, PhysicalID: c.PhysicalID, Type: c.Type, Action: c.Action,
		Replacement: c.Replacement, Details: c.Details}
	for _, d := range c.Details {
		scope, _, _ := strings.Cut(d, " ")
		if scope != "" && !slices.Contains(out.Scope, scope) {
			out.Scope = append(out.Scope, scope)
		}
	}
	return out
}

// JSON is the input as policies read it.
func (in Input) JSON() ([]byte, error) { return json.MarshalIndent(in, "", "  ") }
