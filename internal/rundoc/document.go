package rundoc

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/runpage"
	"github.com/cairn-dev/cairn/internal/verdict"
)

// Document is the run document stored at runs/NAME/RUN_ID.json: the run state machine
// plus what the driver needs between steps and what the report shows.
type Document struct {
	Run       *run.Run `json:"run"`
	Bundle    Bundle   `json:"bundle"`
	Namespace string   `json:"namespace,omitempty"`
	GraphKey  string   `json:"graph_key,omitempty"`
	// LockToken identifies the lock this run holds; a step that finds another token in
	// the lock object has lost it.
	LockToken string          `json:"lock_token,omitempty"`
	Decisions []plan.Decision `json:"decisions,omitempty"`
	Refusals  []string        `json:"refusals,omitempty"`
	Errors    []string        `json:"errors,omitempty"`
	Warnings  []string        `json:"warnings,omitempty"`
	// Notes say what else the run did (e.g. removed the emptied graph).
	Notes []string `json:"notes,omitempty"`
	// Pending holds the results of the last step's actions, by config name, for the next
	// step's Advance.
	Pending map[string]run.Observation `json:"pending,omitempty"`
	// Lookups are each stack's output lookups, so parameters resolve without the bundle.
	Lookups map[string][]config.Lookup `json:"lookups,omitempty"`
	// SSM holds the SSM parameters the lookups read, fetched when the run began
	// (SecureStrings by hash only: see config.SSMValue).
	SSM map[string]config.SSMValue `json:"ssm,omitempty"`
	// Protection and LiveProtection are read from documents written before the run's
	// stacks carried the termination protection wanted and seen (run.Stack.Protect and
	// Protected).
	Protection     map[string]bool `json:"protection,omitempty"`
	LiveProtection map[string]bool `json:"live_protection,omitempty"`
	// Statuses are the stacks' CloudFormation statuses as last seen.
	Statuses map[string]string `json:"statuses,omitempty"`
	// Drop lists stacks the plan dropped from the graph (gone from AWS and the config).
	Drop []string `json:"drop,omitempty"`
	// Plan is, for an apply run, the id of the approved plan it applies.
	Plan string `json:"plan,omitempty"`
	// Late says why a plan run made nothing: its pull request merged before it
	// (plan.LateFor). Its plan is recorded late.
	Late string `json:"late,omitempty"`
	// Content marks the apply run of a bundle's content (cairn apply); Plans are the
	// plans whose entries an apply run executes, and Applies those all of whose changes
	// it executes (marked applied).
	Content bool     `json:"content,omitempty"`
	Plans   []string `json:"plans,omitempty"`
	Applies []string `json:"applies,omitempty"`
	// Inputs are, by stack, the content of each stack of the bundle (plan.Inputs): a plan
	// records them in its entries, an apply compares them.
	Inputs map[string]plan.Inputs `json:"inputs,omitempty"`
	// Origins say, by stack, where the change a run makes to it comes from ("pull request
	// #21"): the graph records it with the change.
	Origins map[string]string `json:"origins,omitempty"`
	// Waiting holds, while a run waits for stacks another hand is changing to settle
	// before it decides anything, their keys and statuses; WaitingSince since when.
	Waiting      map[string]string `json:"waiting,omitempty"`
	WaitingSince time.Time         `json:"waiting_since,omitzero"`
	// ETag is, in memory only, the ETag the document was last saved with ("" while it was
	// never saved): what a run that waited for busy stacks overwrites once it starts.
	ETag string `json:"-"`
	// Destroy marks a run (a plan or its apply) that deletes every stack of the graph.
	Destroy bool `json:"destroy,omitempty"`
	Steps   int  `json:"steps"`
	// PageAt is when the deployer last wrote the page of the run while it ran (it does as
	// stacks start and finish, at most every so often; the run's end writes it again).
	PageAt time.Time `json:"page_at,omitzero"`
	// Beat is the number of the run's live heartbeat chain: each time the run is found
	// stalled (its heartbeat lost) a new chain starts with the next number, and heartbeats
	// of older chains are not sent on.
	Beat int `json:"beat,omitempty"`
	// Quiet marks a run that found nothing to change: it is recorded in this document
	// alone, written once, ended (no lock, graph write, index entry or Markdown report).
	Quiet bool `json:"quiet,omitempty"`
	// Policy is the policies' verdict on the run: a push's, judged before any stack
	// started; an apply's, the applied plan's verdict with the overrides that lifted its
	// denials.
	Policy *verdict.Verdict `json:"policy,omitempty"`
}

// ReportKey is the object that reports the run: its Markdown report, or this document
// itself for a quiet run, which writes no report.
func (d *Document) ReportKey() string {
	if d.Quiet {
		return bucket.RunKey(d.Run.Deployment, d.Run.ID)
	}
	return bucket.RunReportKey(d.Run.Deployment, d.Run.ID)
}

// Report is the document as the report package shows it.
func (d *Document) Report() report.Input {
	in := report.Input{Run: d.Run, Bundle: d.Bundle.String(), Decisions: d.Decisions, Refusals: d.Refusals, Errors: d.Errors, Warnings: d.Warnings, Notes: d.Notes, Policy: d.Policy}
	if d.Run.Status == run.Superseded {
		in.Status = string(run.Superseded)
	}
	return in
}

// Page is the document as its page shows it (package runpage), with links to other views
// of the run; a page of a run still running loads itself again every refresh seconds.
func (d *Document) Page(refresh int, links ...runpage.Link) runpage.Run {
	return runpage.Run{Report: d.Report(), Statuses: d.Statuses, Links: links, Refresh: refresh}
}

// DecodeDocument parses a run document.
func DecodeDocument(body []byte) (*Document, error) {
	var doc Document
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("not a cairn run document: %w", err)
	}
	if doc.Run == nil {
		return nil, errors.New("not a cairn run document: no run")
	}
	if doc.Run.Stacks == nil {
		doc.Run.Stacks = map[string]*run.Stack{}
	}
	for name, s := range doc.Run.Stacks {
		if want, ok := doc.Protection[name]; ok {
			s.Protect = want
		}
		if have, ok := doc.LiveProtection[name]; ok {
			s.Protected = have
		}
	}
	doc.Protection, doc.LiveProtection = nil, nil
	return &doc, nil
}
