// Package state is cairn's persistent graph as data: each stack as last applied, its
// dependencies and where it lives (Graph, Stack, Validate), how a finished step changes it
// (Record), the cairn:* tags it is rebuilt from (StackTags), and its decoding. It links no
// AWS SDK: the planner and the drift sweep decide from it. Reading and writing it in S3,
// under its lock, is package statestore's.
package state

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/cairn-dev/cairn/internal/graph"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/target"
)

// SchemaVersion is the version of the state document this cairn writes. A document with a
// higher version was written by a newer cairn and is refused rather than misread.
const SchemaVersion = 1

// Graph is the persistent graph: what cairn last applied in one namespace/key, so a later
// run knows which stacks it created (and may delete) and in which order.
type Graph struct {
	SchemaVersion int    `json:"schema_version"`
	Namespace     string `json:"namespace"`
	Key           string `json:"key"`
	// Deployment is the deployment that owns the graph (NAME of deployments/NAME.zip):
	// the one whose runs wrote it. No other deployment's run writes it unless its config
	// takes it over (take_over_graph_from) and the graph records the owner's consent
	// (Guards.HandOverTo naming it). "" in a graph written before owners were
	// recorded, or rebuilt from tags: the next run's deployment claims it.
	Deployment string `json:"deployment,omitempty"`
	// Guards are the graph-wide guard settings (deletion_policy.max_deletions,
	// hand_over_graph_to) as last applied: the next run's config is judged by the stricter
	// of these and its own (plan.GuardChanges). nil in a graph written before they were
	// recorded: the next run's config is then taken as it is.
	Guards *run.Guards `json:"guards,omitempty"`
	// Generation grows by one with every write; Write sets it.
	Generation int64     `json:"generation"`
	Bundle     BundleRef `json:"bundle"`
	// Stacks by config name.
	Stacks    map[string]*Stack `json:"stacks"`
	UpdatedAt time.Time         `json:"updated_at"`
	// LockToken and RunID identify the lock holder that wrote this generation (fencing).
	LockToken string `json:"lock_token"`
	RunID     string `json:"run_id,omitempty"`
	// Rebuilt is set when this graph was reconstructed from stack tags because the state
	// object was missing; stored, it marks the generation written from the rebuild (Read
	// clears it, so later generations do not carry it).
	Rebuilt bool `json:"rebuilt,omitempty"`
}

// BundleRef identifies the applied bundle.
type BundleRef struct {
	VersionID string `json:"version_id,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	GitRef    string `json:"git_ref,omitempty"`
	GitRemote string `json:"git_remote,omitempty"`
}

// Stack is one stack of the graph as last applied.
type Stack struct {
	// Name is the config name; StackName the real CloudFormation stack name.
	Name      string `json:"name"`
	StackName string `json:"stack_name"`
	StackID   string `json:"stack_id,omitempty"`
	// Account and Region are where the stack lives (its stack id's); Target is how it is
	// reached (cairn.yaml's region, role_arn, external_id, service_role), kept so a stack
	// that left the config is deleted where it lives.
	Account string      `json:"account,omitempty"`
	Region  string      `json:"region,omitempty"`
	Target  target.Spec `json:"target,omitzero"`
	// Requires are the config names this stack depends on, refreshed on every write.
	Requires []string `json:"requires,omitempty"`
	// Imports are the export names the applied templates (nested ones included) import
	// with Fn::ImportValue, in the stack's account and region; ImportsKnown says they are
	// all (false in graphs written before imports were kept, in a rebuilt graph, and where
	// an import computes its name): once the stack leaves the config, whose exports it
	// holds, so that it is deleted before they are dropped or changed.
	Imports        []string          `json:"imports,omitempty"`
	ImportsKnown   bool              `json:"imports_known,omitempty"`
	TemplateHash   string            `json:"template_hash,omitempty"`
	ParametersHash string            `json:"parameters_hash,omitempty"`
	Status         string            `json:"status,omitempty"`
	Outputs        map[string]string `json:"outputs,omitempty"`
	Tags           map[string]string `json:"tags,omitempty"`
	UpdatedAt      time.Time         `json:"updated_at,omitzero"`
	// Parameters are the parameters applied, as the run stored them (secrets sealed): what
	// a plan shows a change of them against. Absent in graphs written before they were kept.
	Parameters map[string]string `json:"parameters,omitempty"`
	// ChangedAt and ChangedBy say when and by what the stack last changed (created,
	// updated or re-created: not only checked): "pull request #21 (run R)". An entry of a
	// plan made before then went stale, and the refusal names this.
	ChangedAt time.Time `json:"changed_at,omitzero"`
	ChangedBy string    `json:"changed_by,omitempty"`
	// Code is the sha256 of each local artifact the applied templates name, by bundle path
	// (run.Stack.Code): what the next plan compares to say which code changed.
	Code map[string]string `json:"code,omitempty"`
	// PlanOnly records that the config had the stack protected (protected: true) when it
	// was last applied: dropping it from the config, or its protection, is then a change
	// of a protected stack, made only through an approved plan.
	PlanOnly bool `json:"plan_only,omitempty"`
	// TerminationProtection records that the config had termination protection on when
	// the stack was last applied: turning it off is then a relaxed guard, made only through
	// an approved plan. false in graphs written before it was kept (the live stack's then
	// counts).
	TerminationProtection bool `json:"termination_protection,omitempty"`
}

// Names returns the config names of g's stacks in order.
func (g *Graph) Names() []string {
	names := make([]string, 0, len(g.Stacks))
	for n := range g.Stacks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Validate checks the document's invariants: every stack is named consistently, real stack
// names are unique, every dependency exists and there are no cycles. All problems are
// reported together.
func (g *Graph) Validate() error {
	if g == nil {
		return errors.New("state: no graph")
	}
	var errs []error
	where := fmt.Sprintf("state %s/%s", g.Namespace, g.Key)
	realNames := map[string]string{}
	for _, name := range g.Names() {
		st := g.Stacks[name]
		switch {
		case st == nil:
			errs = append(errs, fmt.Errorf("%s: stack %q has no entry", where, name))
			continue
		case name == "":
			errs = append(errs, fmt.Errorf("%s: a stack has an empty name", where))
		case st.Name != name:
			errs = append(errs, fmt.Errorf("%s: stack %q is filed under %q: the entry's name must match its key", where, st.Name, name))
		}
		// A stack is its account, region and name: the same name in two regions is two.
		id := st.Account + "/" + st.Region + "/" + st.Target.Account() + "/" + st.Target.Region + "/" + st.StackName
		if st.StackName == "" {
			errs = append(errs, fmt.Errorf("%s: stack %q has no real stack name", where, name))
		} else if other, dup := realNames[id]; dup {
			errs = append(errs, fmt.Errorf("%s: stacks %q and %q both use stack name %q in one account and region: stack names must be unique there", where, other, name, st.StackName))
		} else {
			realNames[id] = name
		}
		for _, dep := range st.Requires {
			if dep == name {
				errs = append(errs, fmt.Errorf("%s: stack %q requires itself", where, name))
			} else if _, ok := g.Stacks[dep]; !ok {
				errs = append(errs, fmt.Errorf("%s: stack %q requires %q, which is not in the graph", where, name, dep))
			}
		}
	}
	// Self and missing dependencies are reported above and left out of the graph.
	if err := g.Dependencies().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", where, err))
	}
	return errors.Join(errs...)
}

// Dependencies returns the dependency graph of g's stacks (an edge a -> b: a requires b),
// leaving out dependencies on stacks that are not in g; for example to delete stacks that
// left the config in reverse dependency order.
func (g *Graph) Dependencies() *graph.Graph {
	dg := graph.New()
	names := g.Names()
	for _, n := range names {
		dg.AddNode(n)
	}
	for _, n := range names {
		st := g.Stacks[n]
		if st == nil {
			continue
		}
		for _, d := range st.Requires {
			if d != n && dg.Has(d) {
				_ = dg.AddEdge(n, d) // both ends were added above
			}
		}
	}
	return dg
}

// Normalize sorts and de-duplicates dependencies so equal graphs encode equally.
func (g *Graph) Normalize() {
	for _, st := range g.Stacks {
		if st == nil {
			continue
		}
		// Empty and absent mean the same and are written the same (omitempty), so a document
		// reads back exactly as it was written.
		if len(st.Outputs) == 0 {
			st.Outputs = nil
		}
		if len(st.Tags) == 0 {
			st.Tags = nil
		}
		if len(st.Requires) == 0 {
			st.Requires = nil
			continue
		}
		sort.Strings(st.Requires)
		st.Requires = slices.Compact(st.Requires)
	}
}
