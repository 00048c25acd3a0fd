package deployer

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairn-dev/cairn/internal/bucket"
)

// Trigger is everything one batch asks of one run: the uploads and replans that begin
// it, and what asks for its next step: its heartbeat, a delayed check, stack status
// events (Stacks: the keys their stacks may have, run.Stack.Key), a restart of a run
// whose heartbeat was lost. A delayed check carries nothing: it only asks for a step,
// which looks at the stacks whose check is due. Every trigger of a run goes through the
// same turn (Driver.turn), whatever sent it.
type Trigger struct {
	// Beats are the chains (Heartbeat.Beat) of the heartbeats that asked; none when no
	// heartbeat did.
	Beats  []int
	Stacks []string
	// restart: the run's heartbeat chain is lost (or never started); the step starts a
	// new one.
	restart bool
	// step: a heartbeat, a check, a stack event or a restart asked for a step.
	step bool
	// starts begin the run: its upload (delivered once or more), or a replan.
	starts []begin
	// lingered is, for the look an invocation lingered for (stepper.trigger), the run's
	// steps as its own step saved them: if another step was saved since, it stands down.
	lingered int
}

// begin is what begins a run: an upload to cairn's bucket (up is what its key names),
// or the replan an apply run that stopped stacks asked for (replan: the message's body).
type begin struct {
	upload Upload
	up     bucket.Upload
	replan string
}

func (t Trigger) merge(o Trigger) Trigger {
	t.Beats = append(t.Beats, o.Beats...)
	t.Stacks = append(t.Stacks, o.Stacks...)
	t.restart = t.restart || o.restart
	t.step = t.step || o.step
	for _, b := range o.starts {
		if !containsBegin(t.starts, b) { // the same upload delivered twice begins it once
			t.starts = append(t.starts, b)
		}
	}
	return t
}

func containsBegin(bs []begin, b begin) bool {
	for _, x := range bs {
		if x.upload.Key == b.upload.Key && x.upload.VersionID == b.upload.VersionID && x.upload.Sequencer == b.upload.Sequencer && x.replan == b.replan {
			return true
		}
	}
	return false
}

// stepKey names a run: the turns of a batch are one per run.
type stepKey struct{ deployment, run string }

// ask is a trigger and the run it is for.
type ask struct {
	key     stepKey
	trigger Trigger
}

// message is any body the deploy queue carries, decoded once to tell the shapes apart.
type message struct {
	// S3 event notification.
	Records []events.S3EventRecord `json:"Records"`
	Event   string                 `json:"Event"` // s3:TestEvent
	// EventBridge event.
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Detail     json.RawMessage `json:"detail"`
	// Heartbeat.
	Cairn      string   `json:"cairn"`
	Deployment string   `json:"deployment"`
	Run        string   `json:"run"`
	Beat       int      `json:"beat"`
	Stacks     []string `json:"stacks"`
}

type stackStatusDetail struct {
	StackID       string `json:"stack-id"`
	StatusDetails struct {
		Status string `json:"status"`
	} `json:"status-details"`
}

// settles reports the stack statuses a run may act on; intermediate ones are ignored so
// a stack's dozens of events cost one step.
func settles(status string) bool {
	return !strings.HasSuffix(status, "_IN_PROGRESS") || status == "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS"
}

// errUndecodable: a record no turn can serve; it goes to the dead-letter queue.
var errUndecodable = errors.New("undecodable record")

// decode turns one SQS record into the triggers it carries, each with the run it is for:
// an upload begins the run Upload.RunID names, a stack event concerns the open run its
// stack is indexed under (none: nothing to do), a heartbeat or a check names its run. An
// error fails the record: undecodable ones go to the dead-letter queue after the queue's
// retries, others (the index unreadable) are delivered again.
func (d *Driver) decode(ctx context.Context, rec events.SQSMessage, log *slog.Logger) ([]ask, error) {
	var m message
	if err := json.Unmarshal([]byte(rec.Body), &m); err != nil {
		log.Error("deploy: message is not JSON; it goes to the dead-letter queue", "err", err, "body", truncate(rec.Body))
		return nil, errUndecodable
	}
	switch {
	case m.Cairn == "heartbeat" || m.Cairn == "check" || m.Cairn == "replan":
		if m.Deployment == "" || m.Run == "" {
			log.Error("deploy: "+m.Cairn+" without deployment or run", "body", truncate(rec.Body))
			return nil, errUndecodable
		}
		if m.Cairn == "replan" {
			// The plan run's id is known once the apply run is read: the turn is keyed by
			// the apply run it replans.
			return []ask{{stepKey{m.Deployment, "replan:" + m.Run}, Trigger{starts: []begin{{replan: rec.Body}}}}}, nil
		}
		t := Trigger{step: true, Stacks: m.Stacks} // a check asks for a step, and looks at the stacks a lost step was asked to
		if m.Cairn == "heartbeat" {
			t.Beats = []int{m.Beat}
		}
		return []ask{{stepKey{m.Deployment, m.Run}, t}}, nil
	case m.DetailType == StackStatusChange && m.Source == "aws.cloudformation":
		var det stackStatusDetail
		if err := json.Unmarshal(m.Detail, &det); err != nil || det.StackID == "" {
			log.Error("deploy: stack status event without a stack id", "err", err, "body", truncate(rec.Body))
			return nil, errUndecodable
		}
		if !settles(det.StatusDetails.Status) {
			log.Debug("deploy: intermediate stack status ignored", "stack_id", det.StackID, "status", det.StatusDetails.Status)
			return nil, nil
		}
		idx, err := d.runs.find(bucket.WithScope(ctx, bucket.Routing()), det.StackID)
		if err != nil {
			log.Warn("deploy: cannot look up the run of a stack event", "err", err)
			return nil, err
		}
		if idx == nil {
			log.Debug("deploy: stack event of no open run ignored", "stack_id", det.StackID, "status", det.StatusDetails.Status)
			return nil, nil
		}
		return []ask{{stepKey{idx.Deployment, idx.Run}, Trigger{step: true, Stacks: eventKeys(det.StackID, d.cfg.Region)}}}, nil
	case m.Event == "s3:TestEvent":
		log.Info("deploy: S3 test event ignored")
		return nil, nil
	case len(m.Records) > 0:
		var asks []ask
		for _, r := range m.Records {
			if !strings.HasPrefix(r.EventName, "ObjectCreated:") {
				log.Info("deploy: S3 event ignored", "event", r.EventName, "key", r.S3.Object.Key)
				continue
			}
			u := Upload{
				Bucket: r.S3.Bucket.Name, Key: decodeKey(r.S3.Object.Key), VersionID: r.S3.Object.VersionID,
				Sequencer: r.S3.Object.Sequencer, Time: r.EventTime, Body: rec.Body,
			}
			up, _ := bucket.ParseUpload(u.Key) // the only parse of the key: its parts go along
			asks = append(asks, ask{stepKey{up.Deployment, u.RunID()}, Trigger{starts: []begin{{upload: u, up: up}}}})
		}
		return asks, nil
	default:
		log.Error("deploy: unknown message; it goes to the dead-letter queue", "body", truncate(rec.Body))
		return nil, errUndecodable
	}
}

// turn is the one way into a run: what begins it (an upload: a bundle's run, an
// approval's or an applied content's run; a replan), then the step its other triggers ask
// for, and the steps of the looks that step lingers for (stepper.trigger). Each start ends
// with the run's first step, the same step (stepper.step: observe, run.Advance, act, save)
// every later trigger makes.
func (d *Driver) turn(ctx context.Context, k stepKey, t Trigger) error {
	var errs []error
	for _, b := range t.starts {
		var err error
		switch {
		case b.replan != "":
			applyRun := strings.TrimPrefix(k.run, "replan:")
			err = d.start.replan(runScope(ctx, k.deployment, applyRun), k.deployment, applyRun, b.replan)
		case b.up.Kind == bucket.ApprovalUpload:
			err = d.start.approval(bucket.WithScope(ctx, bucket.ForDeployment(b.up.Deployment)), b.upload, b.up)
		case b.up.Kind == bucket.ApplyUpload:
			err = d.start.content(bucket.WithScope(ctx, bucket.ForDeployment(b.up.Deployment)), b.upload, b.up)
		default:
			err = d.start.upload(bucket.WithScope(ctx, bucket.ForDeployment(b.up.Deployment)), b.upload, b.up)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if t.step || t.restart {
		if err := d.step.trigger(runScope(ctx, k.deployment, k.run), k.deployment, k.run, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func truncate(s string) string {
	if len(s) > 512 {
		return s[:512] + "..."
	}
	return s
}

// decodeKey undoes the URL encoding of keys in S3 event notifications.
func decodeKey(k string) string {
	if s, err := url.QueryUnescape(k); err == nil {
		return s
	}
	return k
}
