package main

import (
	"fmt"
	"io"
	"time"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/printer"
	runstate "github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
)

// jsonView streams a run as JSON events, one object a line: see event.
type jsonView struct {
	w   io.Writer
	id  string
	dep string
}

// event is one line of the --json stream. Every event has "event" and "time"; the
// others are set by kind:
//
//	run       the run was found: run, deployment, kind (push, plan run, apply), plan, started_at
//	step      a stack reached a phase: stack, stack_name, account, region, action, phase, changes, reason, at, elapsed_seconds
//	resource  a resource reached a status: stack, stack_name, account, region, nested, logical_id, type, status, reason, at, elapsed_seconds, event_id
//	note      something the follower cannot show: message
//	end       the run ended: status, summary, reason, errors, refusals, report, next, exit
//	detached  the follower stopped first (why: interrupted, timeout): run, follow (the command to follow it again), exit
type event struct {
	Event      string    `json:"event"`
	Time       time.Time `json:"time"`
	Run        string    `json:"run,omitempty"`
	Deployment string    `json:"deployment,omitempty"`
	Kind       string    `json:"kind,omitempty"`
	Plan       string    `json:"plan,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero"`

	Stack     string    `json:"stack,omitempty"`
	StackName string    `json:"stack_name,omitempty"`
	Account   string    `json:"account,omitempty"`
	Region    string    `json:"region,omitempty"`
	Action    string    `json:"action,omitempty"`
	Phase     string    `json:"phase,omitempty"`
	Changes   int       `json:"changes,omitempty"`
	Nested    []string  `json:"nested,omitempty"`
	LogicalID string    `json:"logical_id,omitempty"`
	Type      string    `json:"type,omitempty"`
	Status    string    `json:"status,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	At        time.Time `json:"at,omitzero"`
	Elapsed   *float64  `json:"elapsed_seconds,omitempty"`
	EventID   string    `json:"event_id,omitempty"`

	Message  string         `json:"message,omitempty"`
	Summary  *summary       `json:"summary,omitempty"`
	Errors   []string       `json:"errors,omitempty"`
	Refusals []string       `json:"refusals,omitempty"`
	Report   string         `json:"report,omitempty"`
	Next     *runstate.Next `json:"next,omitempty"`
	Why      string         `json:"why,omitempty"`
	Follow   string         `json:"follow,omitempty"`
	Exit     *int           `json:"exit,omitempty"`
}

// summary is follow.Summary as the end event gives it.
type summary struct {
	Created   int     `json:"created"`
	Updated   int     `json:"updated"`
	Deleted   int     `json:"deleted"`
	Unchanged int     `json:"unchanged"`
	Failed    int     `json:"failed"`
	Blocked   int     `json:"blocked"`
	Duration  float64 `json:"duration_seconds"`
}

func seconds(d time.Duration) *float64 {
	s := d.Round(time.Millisecond).Seconds()
	return &s
}

func (j *jsonView) emit(e event) {
	e.Time = time.Now().UTC()
	if e.Run == "" {
		e.Run = j.id
	}
	_ = printer.WriteJSON(j.w, e, "")
}

func (j *jsonView) runID() string { return j.id }

func (j *jsonView) Found(doc *rundoc.Document) {
	j.id, j.dep = doc.Run.ID, doc.Run.Deployment
	j.emit(event{Event: "run", Deployment: doc.Run.Deployment, Kind: kindOf(doc), Plan: doc.Plan, StartedAt: doc.Run.StartedAt})
}

func (j *jsonView) Stepped(s follow.Step) {
	j.emit(event{Event: "step", Stack: s.Stack, StackName: s.StackName, Account: s.Place.Account, Region: s.Place.Region, Action: string(s.Action),
		Phase: string(s.Phase), Changes: s.Changes, Reason: s.Reason, At: s.At, Elapsed: seconds(s.Elapsed)})
}

func (j *jsonView) Changed(r follow.Resource) {
	j.emit(event{Event: "resource", Stack: r.Stack, StackName: r.StackName, Account: r.Place.Account, Region: r.Place.Region, Nested: r.Nested,
		LogicalID: r.LogicalID, Type: r.Type, Status: r.Status, Reason: r.Reason, At: r.At, Elapsed: seconds(r.Elapsed), EventID: r.EventID})
}

func (j *jsonView) Noted(note string) { j.emit(event{Event: "note", Message: note}) }

func (j *jsonView) Polled(*rundoc.Document, time.Time) {}

func (j *jsonView) detached(id, again, why string) {
	code := 130
	if why == "timeout" {
		code = 4
	}
	j.emit(event{Event: "detached", Run: id, Why: why, Follow: again, Exit: &code})
}

func (j *jsonView) close() {}

// end emits the run's end and returns its exit code, as outcome gives it, as an
// exitError: the caller prints nothing more.
func (j *jsonView) end(doc *rundoc.Document) error {
	r := doc.Run
	code := exitOf(doc)
	sum := follow.Summarize(doc)
	e := event{Event: "end", Deployment: r.Deployment, Status: string(r.Status),
		Summary: &summary{sum.Created, sum.Updated, sum.Deleted, sum.Unchanged, sum.Failed, sum.Blocked, *seconds(sum.Duration)}, Reason: r.Reason, Errors: doc.Errors, Refusals: doc.Refusals,
		Report: fmt.Sprintf("s3://%s/%s", doc.Bundle.Bucket, layout.RunReportKey(r.Deployment, r.ID)), Exit: &code}
	if n, ok := nextOf(doc, ""); ok {
		e.Next = &n
	}
	j.emit(e)
	return exitError{code} // exit 0 too: the end event said everything
}
