// Package drift is drift detection's data and decisions, tested without AWS. A check of
// every stack cairn manages (or of one deployment's) is a sweep: a plain document (saved
// at drift/sweeps/ID.json) holding, per persistent graph and per stack, where detection
// stands: pending, detecting (with the detection id), then IN_SYNC, DRIFTED, UNKNOWN or
// NOT_CHECKED with the reason. Pure functions take a sweep and what a step observed to the
// next sweep: NewGraph plans a graph's part, Observe settles finished detections,
// Schedule chooses the detections to start within the concurrency limit (skipping graphs
// a deploy holds), Start records CloudFormation's answers, Changes compares a graph with
// its previous report; Admit, Claim and HandOff decide which trigger drives a sweep and
// how it continues. A graph whose stacks are all settled gets its Report (drift/NAME/ID.json
// and .md, rendered here) and a notification when something drifted or changed since.
// internal/sweeper is the driver that makes the AWS calls.
package drift

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/target"
	"github.com/cairn-dev/cairn/internal/template"
)

// Status is where a stack's check stands.
type Status string

// Statuses of a stack in a sweep. Pending and Detecting are in progress; the others are
// final.
const (
	Pending    Status = "PENDING"
	Detecting  Status = "DETECTING"
	InSync     Status = "IN_SYNC"
	Drifted    Status = "DRIFTED"
	Unknown    Status = "UNKNOWN"
	NotChecked Status = "NOT_CHECKED"
)

// Final reports whether s is a result rather than a step on the way.
func (s Status) Final() bool { return s != Pending && s != Detecting }

// Sweep is one check of every persistent graph (or of one, on demand).
type Sweep struct {
	ID        string    `json:"id"`
	Trigger   string    `json:"trigger"`
	Filter    string    `json:"filter,omitempty"`
	StartedAt time.Time `json:"started_at"`
	// Continuation is the sequence number of the one continuation message that may resume
	// the sweep; older messages are stale and ignored, so chains never multiply.
	Continuation int `json:"continuation"`
	// Holder and HeldUntil claim the sweep for one invocation at a time.
	Holder      string    `json:"holder,omitempty"`
	HeldUntil   time.Time `json:"held_until,omitzero"`
	Invocations int       `json:"invocations"`
	Graphs      []*Graph  `json:"graphs"`
}

// Graph is one persistent graph's part of a sweep, and the content of its report.
type Graph struct {
	// Name names the report folder: the deployment (deployments/NAME.zip) whose bundle
	// the graph applied, or the graph key when that bundle cannot be found.
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	Bundle    string `json:"bundle,omitempty"`
	// Skipped is why the whole graph is not checked (lock held, drift disabled).
	Skipped string `json:"skipped,omitempty"`
	// Notes are things a reader should know, e.g. the config could not be read.
	Notes  []string `json:"notes,omitempty"`
	Stacks []*Stack `json:"stacks"`
	// Missing lists stacks of the graph that do not exist in AWS.
	Missing []string `json:"missing,omitempty"`
	// Untracked lists stacks tagged for this graph that the graph does not know.
	Untracked []string `json:"untracked,omitempty"`
	// Ignore holds the config's drift.ignore patterns.
	Ignore []string `json:"ignore,omitempty"`
	// Report is the report's object key once written; Notified tells whether it was
	// published.
	Report   string `json:"report,omitempty"`
	Notified bool   `json:"notified,omitempty"`
}

// Stack is one stack's check.
type Stack struct {
	// Name is the config name, StackName the CloudFormation name.
	Name        string     `json:"name"`
	StackName   string     `json:"stack_name"`
	StackID     string     `json:"stack_id,omitempty"`
	Status      Status     `json:"status"`
	Reason      string     `json:"reason,omitempty"`
	DetectionID string     `json:"detection_id,omitempty"`
	StartedAt   time.Time  `json:"started_at,omitzero"`
	CheckedAt   time.Time  `json:"checked_at,omitzero"`
	Resources   []Resource `json:"resources,omitempty"`
	// Secrets are, per resource (logical id; "*": every one), the property paths whose
	// values are secret (template.SecretProperties of the applied template, "*" every
	// path when that template is not known): their drift is reported, never their values.
	Secrets map[string][]string `json:"secrets,omitempty"`
	// Target is how the stack is reached (the graph's); At where it lives, relative to
	// cairn's account and region ("" parts: cairn's own).
	Target target.Spec   `json:"target,omitzero"`
	At     target.Target `json:"at,omitzero"`
	// OnDrift is the applied config's on_drift of the stack ("" keep, revert, refuse):
	// which plan reconciles its drift (Reconcile).
	OnDrift string `json:"on_drift,omitempty"`
}

// Reconcile is, for a drifted stack of the deployment (or graph) named name, the plan
// command that reconciles it and what it does: with on_drift revert the next plan brings
// the drift back (its comment lists it under "Changed outside cairn"); else the stack's
// drift is kept until its template adopts the values (then the plan syncs them) or its
// on_drift is set to revert. "" for a stack that did not drift.
func (s *Stack) Reconcile(name string) string {
	if s.Status != Drifted {
		return ""
	}
	plan := "cairn plan PATH --deployment " + name
	if s.OnDrift == string(config.DriftRevert) {
		return fmt.Sprintf("`%s` reverts it (on_drift: revert): its comment lists what it brings back under \"Changed outside cairn\"; approve it to apply", plan)
	}
	return fmt.Sprintf("to revert it through review, set `on_drift: revert` on stack %s, then `%s` (its comment lists what it brings back); to adopt it, set its template to the actual values, then `%s`",
		s.Name, plan, plan)
}

// Describe names the stack for people, with where it lives when that is not cairn's
// account and region (target.Describe).
func (s *Stack) Describe() string { return target.Describe(s.At, s.StackName) }

// Resource is a resource that drifted.
type Resource struct {
	LogicalID  string `json:"logical_id"`
	PhysicalID string `json:"physical_id,omitempty"`
	Type       string `json:"type"`
	// Status is CloudFormation's: MODIFIED or DELETED.
	Status      string       `json:"status"`
	Differences []Difference `json:"differences,omitempty"`
	// Ignored is the drift.ignore pattern that matched; an ignored resource does not make
	// its stack DRIFTED.
	Ignored string `json:"ignored,omitempty"`
}

// Difference is one property that differs from the template.
type Difference struct {
	Path     string `json:"path"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
	// Type is CloudFormation's difference type: ADD, REMOVE or NOT_EQUAL.
	Type string `json:"type"`
	// Masked says the property holds a secret: Expected and Actual are not its values.
	Masked bool `json:"masked,omitempty"`
}

// masked is what a report shows of a secret property's values.
const masked = "****"

// maskSecrets replaces the values of each difference of s on a secret property (see
// Stack.Secrets) with ****: the property drifted, and no report, notification or
// comparison with the next report holds what it was or is.
func maskSecrets(s *Stack) {
	for i := range s.Resources {
		r := &s.Resources[i]
		paths := append(slices.Clone(s.Secrets["*"]), s.Secrets[r.LogicalID]...)
		for j := range r.Differences {
			if d := &r.Differences[j]; template.IsSecretPath(d.Path, paths) {
				d.Expected, d.Actual, d.Masked = masked, masked, true
			}
		}
	}
}

// InFlight counts the detections started and not yet observed finished.
func (sw *Sweep) InFlight() int {
	n := 0
	for _, g := range sw.Graphs {
		for _, s := range g.Stacks {
			if s.Status == Detecting {
				n++
			}
		}
	}
	return n
}

// Next returns the pending stacks to start now so that at most limit detections are in
// flight, in graph then stack order.
func (sw *Sweep) Next(limit int) []*Stack {
	var out []*Stack
	for _, r := range sw.next(limit) {
		out = append(out, sw.At(r))
	}
	return out
}

func (sw *Sweep) next(limit int) []Ref {
	free := limit - sw.InFlight()
	var out []Ref
	for i, g := range sw.Graphs {
		for j, s := range g.Stacks {
			if free <= 0 {
				return out
			}
			if s.Status == Pending {
				out = append(out, Ref{i, j})
				free--
			}
		}
	}
	return out
}

// Settled reports whether every stack of g has its result.
func (g *Graph) Settled() bool {
	for _, s := range g.Stacks {
		if !s.Status.Final() {
			return false
		}
	}
	return true
}

// Done reports whether every graph's report is written.
func (sw *Sweep) Done() bool {
	for _, g := range sw.Graphs {
		if g.Report == "" {
			return false
		}
	}
	return true
}

// SkipPending marks every stack of g that has not started as not checked, for why.
func (g *Graph) SkipPending(why string) {
	for _, s := range g.Stacks {
		if s.Status == Pending {
			s.Status, s.Reason = NotChecked, why
		}
	}
}

// Count returns how many stacks of g have status st.
func (g *Graph) Count(st Status) int {
	n := 0
	for _, s := range g.Stacks {
		if s.Status == st {
			n++
		}
	}
	return n
}

// Drifted reports whether anything in g needs a person: a drifted stack, a stack missing
// from AWS or one tagged for the graph that it does not know.
func (g *Graph) Drifted() bool {
	return g.Count(Drifted) > 0 || len(g.Missing) > 0 || len(g.Untracked) > 0
}

// matchIgnore returns the first pattern that matches one of names.
func matchIgnore(patterns []string, names ...string) string {
	for _, p := range patterns {
		for _, n := range names {
			if n == "" {
				continue
			}
			if ok, _ := path.Match(p, n); ok || p == n {
				return p
			}
		}
	}
	return ""
}

// applyIgnore marks drifted resources of s matched by patterns (by logical id, or
// NAME/LOGICAL_ID with the stack's config or CloudFormation name) and settles s as DRIFTED
// or IN_SYNC by the others.
func applyIgnore(s *Stack, patterns []string) {
	drifted := false
	for i := range s.Resources {
		r := &s.Resources[i]
		r.Ignored = matchIgnore(patterns, r.LogicalID, s.Name+"/"+r.LogicalID, s.StackName+"/"+r.LogicalID)
		if r.Ignored == "" {
			drifted = true
		}
	}
	if drifted {
		s.Status = Drifted
	} else {
		s.Status = InSync
	}
}

// fingerprints returns, per stack that was checked (IN_SYNC or DRIFTED), a digest of its
// drift: the status and every difference that is not ignored. Two reports whose common
// checked stacks have equal digests say the same thing.
func (g *Graph) fingerprints() map[string]string {
	out := map[string]string{}
	for _, s := range g.Stacks {
		if s.Status != InSync && s.Status != Drifted {
			continue
		}
		var lines []string
		for _, r := range s.Resources {
			if r.Ignored != "" {
				continue
			}
			lines = append(lines, fmt.Sprintf("%s %s %s", r.LogicalID, r.Type, r.Status))
			for _, d := range r.Differences {
				lines = append(lines, fmt.Sprintf("%s %s %s %q %q", r.LogicalID, d.Path, d.Type, d.Expected, d.Actual))
			}
		}
		sort.Strings(lines)
		sum := sha256.Sum256([]byte(string(s.Status) + "\n" + strings.Join(lines, "\n")))
		out[s.StackName] = hex.EncodeToString(sum[:8])
	}
	return out
}

// Changes lists what differs between prev (the graph's previous report; nil when there is
// none) and g: stacks checked in both whose drift differs, and stacks newly missing or
// untracked. Stacks not checked in one of the two say nothing, so a sweep that skipped a
// graph during a deploy is not news.
func (g *Graph) Changes(prev *Graph) []string {
	if prev == nil {
		return nil
	}
	var out []string
	was, now := prev.fingerprints(), g.fingerprints()
	status := map[string]Status{}
	for _, s := range prev.Stacks {
		status[s.StackName] = s.Status
	}
	for _, s := range g.Stacks {
		if a, ok := was[s.StackName]; ok {
			if b, ok := now[s.StackName]; ok && a != b {
				out = append(out, fmt.Sprintf("stack %s: %s, was %s", s.StackName, s.Status, status[s.StackName]))
			}
		}
	}
	for _, m := range newIn(g.Missing, prev.Missing) {
		out = append(out, fmt.Sprintf("stack %s: missing from AWS", m))
	}
	for _, m := range newIn(g.Untracked, prev.Untracked) {
		out = append(out, fmt.Sprintf("stack %s: tagged for this graph but not in it", m))
	}
	return out
}

func newIn(now, before []string) []string {
	seen := map[string]bool{}
	for _, b := range before {
		seen[b] = true
	}
	var out []string
	for _, n := range now {
		if !seen[n] {
			out = append(out, n)
		}
	}
	return out
}

// NewID returns a sweep id that sorts by time: 20261130T120000Z-1a2b3c4d.
func NewID(t time.Time, suffix string) string {
	if suffix == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		suffix = hex.EncodeToString(b)
	}
	var clean strings.Builder
	for _, r := range suffix {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' {
			clean.WriteRune(r)
		}
		if clean.Len() == 8 {
			break
		}
	}
	return t.UTC().Format("20060102T150405Z") + "-" + clean.String()
}
