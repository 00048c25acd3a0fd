package deployer

import (
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/seal"
)

// TestScrubResourceEvents: what CloudFormation says of a stack's resources passes the
// step's scrubber with its other texts: a reason or a physical id quoting a secret holds
// it as ****; when the stack's secrets cannot be read, the events are kept (resource,
// type, status, time) with their texts withheld, in short, and the stack's own reason
// says why.
func TestScrubResourceEvents(t *testing.T) {
	const secret = "hunter2-Secret"
	at := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	events := func() []run.ResourceEvent {
		return []run.ResourceEvent{
			{LogicalID: "Parameter", Type: "AWS::SSM::Parameter", Status: "CREATE_IN_PROGRESS", Time: at},
			{LogicalID: "Parameter", Type: "AWS::SSM::Parameter", PhysicalID: "/app/" + secret, Status: "CREATE_FAILED", Reason: "Value " + secret + " is invalid", Time: at.Add(time.Second)},
		}
	}
	for _, tc := range []struct {
		name       string
		learnt     error
		reason     string
		wantEvents []run.ResourceEvent
	}{
		{"secrets read", nil, "Parameter (AWS::SSM::Parameter): Value **** is invalid", []run.ResourceEvent{
			{LogicalID: "Parameter", Type: "AWS::SSM::Parameter", Status: "CREATE_IN_PROGRESS", Time: at},
			{LogicalID: "Parameter", Type: "AWS::SSM::Parameter", PhysicalID: "/app/****", Status: "CREATE_FAILED", Reason: "Value **** is invalid", Time: at.Add(time.Second)},
		}},
		{"secrets unreadable", errors.New("download the bundle: gone"), "(withheld: the stack holds secrets, which could not be read to mask them in this text: download the bundle: gone; see the stack's events in CloudFormation)", []run.ResourceEvent{
			{LogicalID: "Parameter", Type: "AWS::SSM::Parameter", Status: "CREATE_IN_PROGRESS", Time: at},
			{LogicalID: "Parameter", Type: "AWS::SSM::Parameter", PhysicalID: "(withheld: the stack's secrets could not be read to mask it)", Status: "CREATE_FAILED", Reason: "(withheld: the stack's secrets could not be read to mask it)", Time: at.Add(time.Second)},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &seal.Scrubber{}
			sc.Add(secret)
			x := &secrets{sc: sc, learnt: map[string]error{"app": tc.learnt}} // as learn left them
			o := run.Observation{Stack: "app", StackStatus: "ROLLBACK_COMPLETE", Reason: "Parameter (AWS::SSM::Parameter): Value " + secret + " is invalid", Events: events()}
			x.scrub(&run.Run{Stacks: map[string]*run.Stack{"app": {Name: "app"}}}, []*run.Observation{&o}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if o.Reason != tc.reason {
				t.Errorf("reason %q, want %q", o.Reason, tc.reason)
			}
			if !slices.Equal(o.Events, tc.wantEvents) {
				t.Errorf("events\n got %+v\nwant %+v", o.Events, tc.wantEvents)
			}
			for _, e := range o.Events {
				if strings.Contains(e.Reason+e.PhysicalID, secret) {
					t.Errorf("an event holds the secret: %+v", e)
				}
			}
		})
	}
}
