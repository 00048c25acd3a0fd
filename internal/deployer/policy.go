package deployer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/overrides"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/verdict"
)

// Judger judges a plan or a push with the policies: the policy function, invoked
// synchronously (it alone links the policy engine).
type Judger interface {
	Judge(ctx context.Context, req verdict.Request) (verdict.Answer, error)
}

// MaxJudgeRequest bounds what the deployer sends the policy function: Lambda takes at
// most 6 MB of payload in a synchronous invocation. The templates are not sent (the
// function reads the bundle itself), so only a plan of thousands of stacks comes near.
const MaxJudgeRequest = 5 << 20

// policies judges plans and pushes through the policy function, and checks the
// verdicts an apply runs under.
type policies struct{ *base }

// exist reports whether there is anything to judge with: the bundle's config names
// policies of its own, or the team's prefix holds a policy file (one listing). Without
// either, nothing is judged and the policy function is not invoked.
func (ps policies) exist(ctx context.Context, cfg *config.Config) (bool, error) {
	if cfg != nil && cfg.Policies != "" {
		return true, nil
	}
	keys, err := objects.List(ctx, ps.s3, ps.cfg.Bucket, bucket.PoliciesPrefix)
	if err != nil {
		return false, fmt.Errorf("team policies: %w", err)
	}
	for _, k := range keys {
		if bucket.PolicyFile(k) {
			return true, nil
		}
	}
	return false, nil
}

// judge asks the policy function; any failure is a verdict that fails closed.
func (ps policies) judge(ctx context.Context, req verdict.Request, lifting []verdict.Override, log *slog.Logger) *verdict.Verdict {
	req.Time = ps.clk.Now().UTC()
	fail := func(err error) *verdict.Verdict {
		log.Error("policy: cannot judge (a denial)", "err", err)
		return verdict.Failed(req.Kind, req.Time, err)
	}
	if ps.judger == nil {
		return fail(errors.New("no policy function is configured (CAIRN_POLICY_FUNCTION) while policies exist: deploy cairn's stack with its policy function"))
	}
	if n := len(req.Plan) + len(req.Run) + len(req.Bundle); n > MaxJudgeRequest {
		return fail(fmt.Errorf("the %s is %d bytes, more than the policy function takes (%d): split the deployment", req.Kind, n, MaxJudgeRequest))
	}
	a, err := ps.judger.Judge(ctx, req)
	if err != nil {
		return fail(fmt.Errorf("policy function: %w", err))
	}
	v := verdict.Judged(req.Kind, a, req.Time, lifting)
	deny, warn, lifted := v.Counts()
	log.Info("policy: judged", "deny", deny, "warn", warn, "lifted", lifted, "error", v.Error, "team_files", len(a.Source.Objects), "took", a.Took.String())
	return v
}

// judgePlan judges plan document p, its change sets described, before it is recorded:
// the verdict (with the overrides already written for the plan, if any) is part of the
// document, sealed with it. Nothing to judge with: no verdict, nothing invoked.
func (ps policies) judgePlan(ctx context.Context, doc *rundoc.Document, p *plan.Document, log *slog.Logger) error {
	if p.Status != plan.Planned {
		return nil // a failed or late plan applies nothing
	}
	lb, err := ps.bundle(ctx, doc)
	if err != nil {
		return err
	}
	if ok, err := ps.exist(ctx, lb.Config); err != nil || !ok {
		return err
	}
	lifting, err := overrides.Read(ctx, ps.s3, ps.cfg.Bucket, p.Deployment, p.ID)
	if err != nil {
		return err
	}
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	p.Policy = ps.judge(ctx, verdict.Request{Kind: verdict.Plan, Deployment: p.Deployment, PlanID: p.ID, RunID: p.ID, Plan: body}, lifting, log)
	return nil
}

// gatePush marks a push's run to be judged before any stack starts (run.PolicyPending),
// when there are policies to judge it with. An apply run executes reviewed plans,
// judged when they were made (applyVerdict checks them).
func (ps policies) gatePush(ctx context.Context, doc *rundoc.Document) error {
	if doc.Run.Mode != run.ModeDeploy || doc.Plan != "" || doc.Content || doc.Run.Policy != run.PolicyNone {
		return nil
	}
	lb, err := ps.bundle(ctx, doc)
	if err != nil {
		return err
	}
	ok, err := ps.exist(ctx, lb.Config)
	if ok {
		doc.Run.Policy = run.PolicyPending
	}
	return err
}

// judgePush performs run.JudgePolicies for the push doc, whose run is r: the verdict is
// recorded in the document, and observed by the run (run.PolicyVerdict).
func (ps policies) judgePush(ctx context.Context, doc *rundoc.Document, r *run.Run, log *slog.Logger) run.Observation {
	runJSON, err := json.Marshal(r)
	if err == nil {
		var b []byte
		if b, err = json.Marshal(doc.Bundle); err == nil {
			doc.Policy = ps.judge(ctx, verdict.Request{Kind: verdict.Push, Deployment: r.Deployment, RunID: r.ID, Run: runJSON, Bundle: b}, nil, log)
		}
	}
	if err != nil {
		doc.Policy = verdict.Failed(verdict.Push, ps.clk.Now().UTC(), err)
	}
	v := run.PolicyVerdict{Denied: doc.Policy.Denied}
	if v.Denied {
		v.Reason = doc.Policy.PushRefusal(r.Deployment)
	}
	return run.Observation{Policy: &v}
}

// InvokeAPI invokes a function synchronously (awsclient.Invoker).
type InvokeAPI interface {
	Invoke(ctx context.Context, function string, payload []byte) ([]byte, error)
}

// FunctionJudge is the policy function as the deployer invokes it: synchronously,
// through Lambda's Invoke.
type FunctionJudge struct {
	API      InvokeAPI
	Function string
}

// Judge invokes the policy function with req and decodes its answer.
func (f FunctionJudge) Judge(ctx context.Context, req verdict.Request) (verdict.Answer, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return verdict.Answer{}, err
	}
	out, err := f.API.Invoke(ctx, f.Function, body)
	if err != nil {
		return verdict.Answer{}, err
	}
	var a verdict.Answer
	if err := json.Unmarshal(out, &a); err != nil {
		return verdict.Answer{}, fmt.Errorf("%s answered no verdict: %w", f.Function, err)
	}
	return a, nil
}

// policyChecked checks the verdict of each plan an apply executes entries of (ids, among
// candidates) with the overrides written for it, and records them in the apply run's
// document: the refusals of those with a standing denial, none when all may run.
func (s starter) policyChecked(ctx context.Context, doc *rundoc.Document, candidates []*plan.Document, ids []string) ([]string, error) {
	var refusals []string
	for _, p := range candidates {
		if !slices.Contains(ids, p.ID) {
			continue
		}
		v, refusal, err := overrides.Check(ctx, s.s3, s.cfg.Bucket, p.Deployment, p.ID, p.Policy)
		if err != nil || v == nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		if doc.Policy == nil {
			doc.Policy = v
		} else {
			doc.Policy.Results = append(doc.Policy.Results, v.Results...)
			doc.Policy.Overrides = append(doc.Policy.Overrides, v.Overrides...)
			doc.Policy.Denied = doc.Policy.Denied || v.Denied
		}
		if refusal != "" {
			refusals = append(refusals, refusal)
		}
	}
	return refusals, nil
}
