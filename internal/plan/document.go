package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/verdict"
)

// Status of a reviewed plan.
type Status string

const (
	// Planned: change sets created, waiting for approval.
	Planned Status = "planned"
	// PlanFailed: the plan could not be made; it can never be applied.
	PlanFailed Status = "failed"
	// Applying and Applied: an approval started the apply run (a plan applies at most once);
	// ApplyFailed: that run ended otherwise than succeeded (Reason says how): the plan
	// does not apply again, and its comment must not say applied.
	Applying    Status = "applying"
	Applied     Status = "applied"
	ApplyFailed Status = "apply-failed"
	// Superseded and Expired plans had their change sets (and the stacks created only for
	// them) deleted.
	Superseded Status = "superseded"
	Expired    Status = "expired"
	// Late: a plan of a pull request's own checkout uploaded after the pull request
	// merged (its merged content was planned for the gate already): nothing was planned,
	// and no one reviews it (Late).
	Late Status = "late"
)

// Document is a reviewed plan, stored at plans/NAME/PLAN_ID.json. It records what an
// approval checks before anything runs: the graph generation, the bundle version, and for
// every stack the exact change set and the stack's status and LastUpdatedTime at plan time.
type Document struct {
	ID         string    `json:"id"`
	Deployment string    `json:"deployment"`
	Namespace  string    `json:"namespace"`
	GraphKey   string    `json:"graph_key"`
	Status     Status    `json:"status"`
	Reason     string    `json:"reason,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	// Generation is the persistent graph's generation at plan time (0: no graph yet).
	Generation int64 `json:"generation"`
	// Bundle is the planned upload: key, version id, sha256, git ref.
	Bundle BundleVersion `json:"bundle"`
	// Stacks in name order; Deletions are the config names the plan deletes.
	Stacks    []Stack    `json:"stacks"`
	Deletions []string   `json:"deletions,omitempty"`
	Decisions []Decision `json:"decisions,omitempty"`
	Refusals  []string   `json:"refusals,omitempty"`
	Errors    []string   `json:"errors,omitempty"`
	Warnings  []string   `json:"warnings,omitempty"`
	// Destroy marks a plan that deletes every stack of the graph.
	Destroy bool `json:"destroy,omitempty"`
	// AppliedBy is the apply run an approval started; AppliedAt when.
	AppliedBy string    `json:"applied_by,omitempty"`
	AppliedAt time.Time `json:"applied_at,omitzero"`
	// Run is the plan run as it ended; the apply run is built from it.
	Run *run.Run `json:"run"`
	// Lookups carry what the apply run needs without reloading the config.
	Lookups map[string][]config.Lookup `json:"lookups,omitempty"`
	// SSM holds the SSM parameters the lookups read when the plan was made (SecureStrings
	// by hash only).
	SSM map[string]config.SSMValue `json:"ssm,omitempty"`
	// Protection is read from plans recorded before the run's stacks carried the
	// termination protection the config wants (run.Stack.Protect).
	Protection map[string]bool `json:"protection,omitempty"`
	Drop       []string        `json:"drop,omitempty"`
	// Policy is the policies' verdict on the plan, judged once its change sets were
	// described (nil: a plan made before policies were enforced). Sealed with the rest:
	// a verdict edited by hand fails the seal.
	Policy *verdict.Verdict `json:"policy,omitempty"`
	// Seal is a MAC of the document, but its status, by the deployer's seal key (Sign):
	// an approval executes only a document the deployer wrote.
	Seal string `json:"seal,omitempty"`
}

// BundleVersion identifies the exact upload a plan was made from.
type BundleVersion struct {
	Bucket    string `json:"bucket"`
	Key       string `json:"key"`
	VersionID string `json:"version_id,omitempty"`
	// Sequencer orders the upload's S3 events (it names the run of the upload).
	Sequencer string `json:"sequencer,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	GitRef    string `json:"git_ref,omitempty"`
	GitRemote string `json:"git_remote,omitempty"`
	// Source is where the upload came from (its commit and remote are GitRef and
	// GitRemote, as the graph records them): its ref, pull request and CI run.
	Source provenance.Source `json:"source,omitzero"`
}

// Ref is the bundle as the persistent graph and the stack tags record it.
func (b BundleVersion) Ref() state.BundleRef {
	return state.BundleRef{VersionID: b.VersionID, SHA256: b.SHA256, GitRef: b.GitRef, GitRemote: b.GitRemote}
}

func (b BundleVersion) String() string {
	s := fmt.Sprintf("s3://%s/%s", b.Bucket, b.Key)
	if b.VersionID != "" {
		s += " version " + b.VersionID
	}
	if b.SHA256 != "" {
		s += ", sha256 " + b.SHA256
	}
	if b.GitRef != "" {
		s += ", git " + b.GitRef
	}
	if b.GitRemote != "" {
		s += " of " + b.GitRemote
	}
	return s
}

// Stack is one stack of a plan.
type Stack struct {
	Name      string `json:"name"`
	StackName string `json:"stack_name"`
	StackID   string `json:"stack_id,omitempty"`
	// Action is Create, Update, Delete, Recreate or None.
	Action        Action `json:"action"`
	ChangeSetName string `json:"change_set_name,omitempty"`
	ChangeSetID   string `json:"change_set_id,omitempty"`
	// Status and LastUpdated are the live stack's at plan time ("" and zero: no stack).
	Status         string    `json:"status,omitempty"`
	LastUpdated    time.Time `json:"last_updated,omitzero"`
	TemplateHash   string    `json:"template_hash,omitempty"`
	ParametersHash string    `json:"parameters_hash,omitempty"`
	// Parameters are the resolved values the change set was made with (secrets sealed).
	Parameters map[string]string `json:"parameters,omitempty"`
	// Inputs are the content of the stack the entry was made for; Consumed the outputs
	// its parameters read at plan time (by "STACK::OUTPUT", secret ones sealed): with the
	// live stack's id, Status and LastUpdated above, the base it was planned from.
	Inputs   Inputs            `json:"inputs,omitzero"`
	Consumed map[string]string `json:"consumed,omitempty"`
	// InputsMayChange marks a stack whose parameters read outputs of a stack the plan
	// changes: its inputs are known only after apply. KnownAfterApply names those
	// parameters, and Feeds the resources of its template that read each of them. At
	// apply, once what it reads is applied, a stack whose parameters came out as planned
	// executes its reviewed change set (or stays unchanged); one whose parameters
	// differ gets a new change set, executed only if every change in it is explained by
	// those parameters (see Explained).
	InputsMayChange bool                `json:"inputs_may_change,omitempty"`
	KnownAfterApply []string            `json:"known_after_apply,omitempty"`
	Feeds           map[string][]string `json:"feeds,omitempty"`
	CreatedAtApply  bool                `json:"created_at_apply,omitempty"`
	Changes         []Change            `json:"changes,omitempty"`
	// ParameterChanges are the parameters the change set changes, old → new (secrets as
	// ****), for the reviewer.
	ParameterChanges []ParameterChange `json:"parameter_changes,omitempty"`
	// Resources are what the template declares, for a stack the plan creates that has no
	// change set yet (created at apply): what its creation will add; for a stack the plan
	// deletes, what it holds now: what its deletion removes.
	Resources []Resource `json:"resources,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	// CodeChanges are the local artifacts whose content changed since applied.
	CodeChanges []run.CodeChange `json:"code_changes,omitempty"`
	// Outside is what changed outside cairn in a stack whose change set is not
	// drift-aware (on_drift keep, or no update), as its last drift report (recent
	// enough) says, each property with what this plan does with it (SettleDrift);
	// DriftFrom says which report. A drift-aware change set's drift is in Changes.
	Outside   []ResourceDrift `json:"outside,omitempty"`
	DriftFrom string          `json:"drift_from,omitempty"`
}

// ResourceDrift is a resource changed outside cairn, as a drift report shows it: Status
// MODIFIED (Properties) or DELETED.
type ResourceDrift struct {
	LogicalID  string          `json:"logical_id"`
	Type       string          `json:"type,omitempty"`
	Status     string          `json:"status"`
	Properties []PropertyDrift `json:"properties,omitempty"`
	// Does is what this plan does with a deleted resource (Leave: its ordinary change set
	// does not re-create it).
	Does Outcome `json:"does,omitempty"`
}

// Outcome is what a plan does with a property changed outside cairn.
type Outcome string

// The outcomes of a drifted property. Revert and Keep are a drift-aware change set's
// (PropertyDrift.Revert, SyncWithActual); Leave and Overwrite an ordinary change set's:
// CloudFormation does not touch a property the template does not change (the drift stays),
// and sets one it changes to the template's new value (the drift is overwritten).
const (
	Revert    Outcome = "revert"
	Keep      Outcome = "keep"
	Leave     Outcome = "leave"
	Overwrite Outcome = "overwrite"
	// Refused is a property a stack whose on_drift is refuse would have brought back: the
	// plan stopped, nothing is done with it until the template adopts it or the stack is
	// set to revert (RefusedDrift).
	Refused Outcome = "refused"
)

// RefusedDrift is what changed outside cairn in a stack whose on_drift refuse stopped the
// plan, as its drift-aware change set (changes; not executed, not recorded as the plan's)
// showed it: each resource deleted out of band, and each property it would have brought
// back, three ways, masked; every one Refused. A plan records it in Outside, without DriftFrom: the stack's own change set
// found it.
func RefusedDrift(changes []Change) []ResourceDrift {
	var out []ResourceDrift
	for _, c := range changes {
		switch c.DriftStatus {
		case "DELETED":
			out = append(out, ResourceDrift{LogicalID: c.LogicalID, Type: c.Type, Status: c.DriftStatus, Does: Refused})
		case "MODIFIED":
			r := ResourceDrift{LogicalID: c.LogicalID, Type: c.Type, Status: c.DriftStatus, Does: Refused}
			for _, d := range c.Drift {
				if d.Revert { // one the template adopts (SyncWithActual) stops nothing
					d.Revert, d.Does = false, Refused
					r.Properties = append(r.Properties, d.Masked())
				}
			}
			if len(r.Properties) > 0 {
				out = append(out, r)
			}
		}
	}
	return out
}

// SettleDrift records found, what stack s's drift report (from) says changed outside
// cairn, with what s's ordinary change set does with each property: Overwrite when a
// change of the resource names the property, else Leave. A resource deleted out of band is
// left (an ordinary change set does not re-create it).
func (s *Stack) SettleDrift(found []ResourceDrift, from string) {
	if len(found) == 0 {
		return
	}
	touched := map[string]bool{}
	for _, c := range s.Changes {
		for _, p := range c.Properties {
			touched[c.LogicalID+"\x00"+p] = true
		}
	}
	out := make([]ResourceDrift, 0, len(found))
	for _, r := range found {
		r.Properties = slices.Clone(r.Properties)
		if r.Status == "DELETED" {
			r.Does = Leave
		}
		for i := range r.Properties {
			d := &r.Properties[i]
			d.Revert, d.Does, d.Template = false, Leave, d.Previous // the template still sets it so
			if touched[r.LogicalID+"\x00"+TopProperty(d.Property)] {
				d.Does, d.Template = Overwrite, "" // its new value is the change set's
			}
			*d = d.Masked()
		}
		out = append(out, r)
	}
	s.Outside, s.DriftFrom = out, from
}

// TopProperty is the top-level property a drift report's property path is in:
// "/SecurityGroupIngress/1/CidrIp" is in SecurityGroupIngress.
func TopProperty(path string) string { return run.TopProperty(path) }

// Resource is a resource a stack's template declares, or one of a live stack.
type Resource struct {
	LogicalID string `json:"logical_id"`
	Type      string `json:"type"`
	// Reason is why CloudFormation failed to delete it (Input.Undeletable).
	Reason string `json:"reason,omitempty"`
}

// Change is one resource change of a change set.
type Change struct {
	LogicalID  string `json:"logical_id"`
	PhysicalID string `json:"physical_id,omitempty"`
	Type       string `json:"type"`
	// Action is Add, Modify, Remove, Import or Dynamic.
	Action string `json:"action"`
	// Replacement is True, False or Conditional for Modify.
	Replacement string   `json:"replacement,omitempty"`
	Details     []string `json:"details,omitempty"`
	// Properties are the properties the change's details name (Details' targets of
	// attribute Properties).
	Properties []string `json:"properties,omitempty"`
	// DriftStatus is the resource's drift as a drift-aware change set shows it (MODIFIED,
	// DELETED; "" when in sync or not known), Drift its properties changed outside cairn.
	DriftStatus string          `json:"drift_status,omitempty"`
	Drift       []PropertyDrift `json:"drift,omitempty"`
}

// PropertyDrift is a property changed outside cairn, three ways: what the last deployment
// set (Previous), what it is now (Actual), what the template wants (Template; "" when the
// template no longer sets it); Revert says this plan brings it back to the template's
// value, else it keeps it (SyncWithActual: the template now sets the value it has).
// Values CloudFormation masks (****) mask all three: a secret's new value is a secret too.
type PropertyDrift struct {
	Property string `json:"property"`
	Previous string `json:"previous,omitempty"`
	Actual   string `json:"actual,omitempty"`
	Template string `json:"template,omitempty"`
	Revert   bool   `json:"revert,omitempty"`
	// Does is the outcome of a property an ordinary change set meets (Leave, Overwrite);
	// "" for a drift-aware change set's (Outcome reads Revert).
	Does Outcome `json:"does,omitempty"`
}

// Outcome is what the plan does with the property.
func (d PropertyDrift) Outcome() Outcome {
	switch {
	case d.Does != "":
		return d.Does
	case d.Revert:
		return Revert
	}
	return Keep
}

// Masked is the drift as a report shows it: when any of the three values holds a masked
// secret (****), every one is ****.
func (d PropertyDrift) Masked() PropertyDrift {
	for _, v := range []string{d.Previous, d.Actual, d.Template} {
		if strings.Contains(v, "****") {
			d.Previous, d.Actual, d.Template = "****", "****", "****"
			break
		}
	}
	return d
}

// Marks returns the plan's notes about a stack: "known after apply", "created at apply",
// "code changed (src/, sha256 1a2b… → 3c4d…)".
func (s Stack) Marks() []string {
	var m []string
	if s.InputsMayChange {
		m = append(m, "known after apply")
	}
	if s.CreatedAtApply {
		m = append(m, "created at apply")
	}
	for _, c := range s.CodeChanges {
		m = append(m, c.String())
	}
	return m
}

// Replacements counts the resources the stack's change set replaces (True or Conditional).
func (s Stack) Replacements() int {
	n := 0
	for _, c := range s.Changes {
		if c.Replacement == "True" || c.Replacement == "Conditional" {
			n++
		}
	}
	return n
}

// Stack returns the plan's stack of config name name, or nil.
func (d *Document) Stack(name string) *Stack {
	for i := range d.Stacks {
		if d.Stacks[i].Name == name {
			return &d.Stacks[i]
		}
	}
	return nil
}

// Changing lists the stacks that change (every action but none).
func (d *Document) Changing() []Stack {
	var out []Stack
	for _, s := range d.Stacks {
		if s.Action != None {
			out = append(out, s)
		}
	}
	return out
}

// GuardChanges are the guard settings the plan changes from what the graph applied
// (run.Run.GuardChanges): what a reviewer approves besides the change sets.
func (d *Document) GuardChanges() []run.GuardChange {
	if d.Run == nil {
		return nil
	}
	return d.Run.GuardChanges
}

// Approvable reports whether the plan has anything to approve: a stack that changes, or a
// guard it loosens.
func (d *Document) Approvable() bool {
	return len(d.Changing()) > 0 || len(Relaxed(d.GuardChanges())) > 0
}

// ServiceRole is the CloudFormation service role the plan's stack name acts with ("":
// none named: the deployer's, or the one the stack has).
func (d *Document) ServiceRole(name string) string {
	if d.Run == nil || d.Run.Stacks[name] == nil {
		return ""
	}
	return d.Run.Stacks[name].Target.ServiceRole
}

// Decode parses a plan document.
func Decode(body []byte) (*Document, error) {
	var d Document
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("not a cairn plan document: %w", err)
	}
	if d.ID == "" || d.Run == nil {
		return nil, errors.New("not a cairn plan document: no id or run")
	}
	return &d, nil
}
