package sweeper

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/drift"
	"github.com/cairn-dev/cairn/internal/statestore"
	"github.com/cairn-dev/cairn/internal/template"
)

// pass is one look at a sweep: it observes the detections in flight, lets Observe settle
// them, reads the locks of the graphs whose stacks are next, lets Schedule choose the
// detections to start, starts them, and writes the report of every graph that settled.
func (d *Driver) pass(ctx context.Context, inv *invocation) error {
	var seen []drift.Detection
	for _, r := range inv.sw.Watch() {
		det, err := d.look(ctx, inv, inv.sw.At(r))
		if err != nil {
			return err
		}
		det.Ref = r
		seen = append(seen, det)
	}
	sw := drift.Observe(inv.sw, seen, d.clk.Now(), d.cfg.MaxAge)
	locked := map[int]string{}
	for _, g := range sw.Locks(d.cfg.Concurrency) {
		why, err := d.lockReason(ctx, sw.Graphs[g])
		if err != nil {
			inv.sw = sw
			return err
		}
		locked[g] = why
	}
	sw, starts := drift.Schedule(sw, d.cfg.Concurrency, locked)
	var answers []drift.Started
	for _, r := range starts {
		a, err := d.detect(ctx, inv, sw.At(r))
		if err != nil {
			inv.sw = drift.Start(sw, answers, d.clk.Now())
			return err
		}
		a.Ref = r
		answers = append(answers, a)
	}
	inv.sw = drift.Start(sw, answers, d.clk.Now())
	for _, g := range inv.sw.Unreported() {
		if err := d.finishGraph(ctx, inv.sw, inv.sw.Graphs[g]); err != nil {
			return err
		}
	}
	return nil
}

// lockReason returns why g must not be checked now: its lock is held (a deploy runs).
func (d *Driver) lockReason(ctx context.Context, g *drift.Graph) (string, error) {
	l, err := d.store.CurrentLock(ctx, g.Namespace, g.Key)
	if errors.Is(err, statestore.ErrNotLocked) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("drift: graph %s/%s: read its lock: %w", g.Namespace, g.Key, err)
	}
	why := fmt.Sprintf("deploy in progress (lock held by run %s, %s, since %s)", cmp.Or(l.RunID, "(none)"), l.Owner, clock.Stamp(l.AcquiredAt))
	if !d.clk.Now().Before(l.ExpiresAt) {
		why += fmt.Sprintf("; the lock expired at %s: if no run is alive, `cairn unlock %s %s`", clock.Stamp(l.ExpiresAt), g.Namespace, g.Key)
	}
	return why, nil
}

// detect starts the detection of s and returns CloudFormation's answer.
func (d *Driver) detect(ctx context.Context, inv *invocation, s *drift.Stack) (drift.Started, error) {
	api, budget, err := d.at(ctx, inv, s.Target)
	if err != nil {
		return drift.Started{Err: awserr.Message(err)}, nil
	}
	if err := budget.Wait(ctx); err != nil {
		return drift.Started{}, fmt.Errorf("drift: stack %s: waiting for the API budget: %w", s.StackName, err)
	}
	out, err := api.DetectStackDrift(ctx, &cloudformation.DetectStackDriftInput{StackName: aws.String(stackRef(s))})
	switch {
	case err == nil:
		inv.log.Debug("drift: detection started", "stack", s.StackName, "detection", aws.ToString(out.StackDriftDetectionId))
		return drift.Started{DetectionID: aws.ToString(out.StackDriftDetectionId)}, nil
	case awserr.Throttled(err):
		inv.log.Warn("drift: detection not started (throttled); retried next pass", "stack", s.StackName, "err", err)
		return drift.Started{Throttled: true}, nil
	case awserr.StackMissing(err):
		return drift.Started{Missing: true}, nil
	default:
		return drift.Started{Err: awserr.Message(err)}, nil
	}
}

func stackRef(s *drift.Stack) string {
	if s.StackID != "" {
		return s.StackID
	}
	return s.StackName
}

// look reads the state of s's detection and, once it found drift, the drifted resources.
func (d *Driver) look(ctx context.Context, inv *invocation, s *drift.Stack) (drift.Detection, error) {
	api, budget, err := d.at(ctx, inv, s.Target)
	if err != nil {
		return drift.Detection{StatusErr: awserr.Message(err)}, nil
	}
	if err := budget.Wait(ctx); err != nil {
		return drift.Detection{}, fmt.Errorf("drift: stack %s: waiting for the API budget: %w", s.StackName, err)
	}
	out, err := api.DescribeStackDriftDetectionStatus(ctx, &cloudformation.DescribeStackDriftDetectionStatusInput{StackDriftDetectionId: aws.String(s.DetectionID)})
	if err != nil {
		if awserr.Throttled(err) {
			inv.log.Warn("drift: detection status not read (throttled); retried next pass", "stack", s.StackName, "err", err)
		}
		return drift.Detection{StatusErr: awserr.Message(err), Throttled: awserr.Throttled(err)}, nil
	}
	det := drift.Detection{Status: string(out.DetectionStatus), DriftStatus: string(out.StackDriftStatus), Reason: aws.ToString(out.DetectionStatusReason)}
	if drift.NeedsResources(det.Status, det.DriftStatus) {
		res, err := d.resources(ctx, inv, s)
		if err != nil {
			if awserr.Throttled(err) {
				inv.log.Warn("drift: resource drifts not read (throttled); retried next pass", "stack", s.StackName, "err", err)
			}
			det.ResourcesErr, det.Throttled = awserr.Message(err), awserr.Throttled(err)
		}
		det.Resources = res
		if _, unknown := s.Secrets["*"]; unknown && err == nil {
			det.Secrets, det.SecretsRead = d.liveSecrets(ctx, inv, api, budget, s)
		}
	}
	return det, nil
}

// liveSecrets reads the template of s from CloudFormation, for a stack whose applied
// template is not known, and says where it holds secrets (Stack.Secrets); read is false
// when it cannot be read or parsed, and every value of the stack stays masked.
func (d *Driver) liveSecrets(ctx context.Context, inv *invocation, api CloudFormationAPI, budget awsclient.Budget, s *drift.Stack) (secrets map[string][]string, read bool) {
	if err := budget.Wait(ctx); err != nil {
		return nil, false
	}
	out, err := api.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String(stackRef(s)), TemplateStage: cfntypes.TemplateStageOriginal})
	if err != nil {
		inv.log.Warn("drift: template not readable; the stack's drifted values stay masked", "stack", s.StackName, "err", err)
		return nil, false
	}
	t, err := template.Parse([]byte(aws.ToString(out.TemplateBody)))
	if err != nil {
		return nil, false
	}
	return t.Secrecy(template.Sources{}).Properties, true
}

// resources lists the modified and deleted resources of s, all pages.
func (d *Driver) resources(ctx context.Context, inv *invocation, s *drift.Stack) ([]drift.Resource, error) {
	api, budget, err := d.at(ctx, inv, s.Target)
	if err != nil {
		return nil, err
	}
	return changeset.ListResourceDrifts(ctx, api, budget, stackRef(s))
}
