package deployer

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"

	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/seal"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
	"github.com/cairn-dev/cairn/internal/target"
)

// act performs the actions Advance decided, changeset.Parallel stacks at a time (a
// stack's own actions in order), checking the lock before each, and returns their
// results for the next step. Once a lock check fails, no further action starts.
// The secrets a change set is made with are given to sc, which scrubs the step's texts.
func (st stepper) act(ctx context.Context, doc *rundoc.Document, next *run.Run, actions []run.Action, lock *statestore.Lock, cs *changeset.Client, sc *seal.Scrubber, log *slog.Logger) (map[string]run.Observation, error) {
	var order []string
	byStack := map[string][]run.Action{}
	for _, a := range actions {
		if byStack[a.Stack] == nil {
			order = append(order, a.Stack)
		}
		byStack[a.Stack] = append(byStack[a.Stack], a)
	}
	bundle := sync.OnceValues(func() (*rundoc.Loaded, error) { return st.bundle(ctx, doc) })
	type result struct {
		obs      *run.Observation
		warnings []string
	}
	results := make([]result, len(order))
	var lockErr error
	var mu sync.Mutex
	changeset.Concurrently(len(order), func(i int) {
		for _, a := range byStack[order[i]] {
			mu.Lock()
			stop := lockErr != nil
			mu.Unlock()
			if stop {
				return
			}
			if err := st.store.Check(ctx, lock); err != nil {
				mu.Lock()
				lockErr = cmp.Or(lockErr, err)
				mu.Unlock()
				return
			}
			o, keep, warning := st.perform(ctx, doc, next, a, bundle, cs, sc, log)
			if keep {
				results[i].obs = &o
			}
			if warning != "" {
				results[i].warnings = append(results[i].warnings, warning)
			}
		}
	})
	pending := map[string]run.Observation{}
	for i, r := range results {
		if r.obs != nil {
			pending[order[i]] = *r.obs
		}
		doc.Warnings = append(doc.Warnings, r.warnings...)
	}
	return pending, lockErr
}

// perform makes one action: its result for the next step (keep says whether the next
// step needs it), or a warning of the report (run.Result decides).
func (st stepper) perform(ctx context.Context, doc *rundoc.Document, next *run.Run, a run.Action, bundle func() (*rundoc.Loaded, error), cs *changeset.Client, sc *seal.Scrubber, log *slog.Logger) (o run.Observation, keep bool, warning string) {
	var in *changeset.Inputs
	switch a.Kind {
	case run.CreateChangeSet:
		loaded, err := bundle()
		var plain map[string]string
		var secret []string
		var stack *config.Stack
		if err == nil {
			stack, err = bundleStack(doc, loaded, a)
		}
		if err == nil {
			plain, secret, err = st.unseal(ctx, a.Parameters, stack, producers(next, loaded, cs))
		}
		if err == nil {
			in, err = inputs(doc, next, loaded, a, plain, secret, st.cfg.ServiceRole, st.cfg.Bucket, st.cfg.Region, st.cfg.SSMPaths)
		}
		if err != nil {
			log.Warn("deploy: cannot prepare the change set", "stack", a.Stack, "err", err)
			o = run.Failure(a.Stack, err)
			keep, warning = run.Result(a, o)
			return o, keep, warning
		}
		a.Parameters = plain // for this call only: the run keeps SecureStrings sealed
		for _, k := range secret {
			sc.Add(plain[k])
		}
	case run.ExecuteChangeSet:
		loaded, err := bundle()
		if err == nil {
			in, err = executeInputs(loaded, next, a)
		}
		if err != nil {
			log.Warn("deploy: cannot prepare the execution", "stack", a.Stack, "err", err)
			o = run.Failure(a.Stack, err)
			keep, warning = run.Result(a, o)
			return o, keep, warning
		}
	}
	o = cs.Perform(ctx, a, in)
	keep, warning = run.Result(a, o)
	return o, keep, warning
}

// inputs gathers what CreateChangeSet needs from the loaded bundle (changeset.CreateInputs)
// with the run's tags: plain are a's parameters with their SecureStrings unsealed (those of
// the parameters named in secret). The S3 locations its template computes from those
// values are checked against cairn's bucket, and its dynamic references against the
// namespace's Parameter Store paths (config.CheckReads; home is cairn's region). A
// bundle that no longer loads fails the stack at once (run.Permanent); one that changed
// is retried.
func inputs(doc *rundoc.Document, r *run.Run, lb *rundoc.Loaded, a run.Action, plain map[string]string, secret []string, serviceRole, cairnBucket, home string, paths config.SSMPaths) (*changeset.Inputs, error) {
	cs, err := bundleStack(doc, lb, a)
	if err != nil {
		return nil, err
	}
	if err := config.CheckResolved(cs, plain, secret...); err != nil {
		return nil, run.Permanent(err) // a value the template refuses: retrying cannot help
	}
	if err := config.CheckReads(cs, plain, cairnBucket, home, lb.Config.Namespace, paths); err != nil {
		return nil, run.Permanent(err) // the same values name the same objects
	}
	own, err := config.ResolveTags(cs, plan.Values(r, cs.Name, doc.SSM, plan.Outputs(r)))
	if err != nil {
		return nil, run.Permanent(err)
	}
	rs := r.Stacks[a.Stack]
	ref := doc.Bundle.Ref()
	tags := plan.Tags(lb.Config, cs, own, ref)
	maps.Copy(tags, state.StackTags(lb.Config.Namespace, lb.Config.PersistentGraphKey, ref, &state.Stack{
		Name: cs.Name, TemplateHash: rs.TemplateHash, ParametersHash: rs.ParametersHash, Requires: rs.Requires,
	}))
	return changeset.CreateInputs(cs, a, tags, serviceRole), nil
}

// bundleStack is the stack of action a in the bundle the run deploys, as downloaded again.
// A bundle that no longer loads fails the stack at once (run.Permanent); one that changed
// is retried.
func bundleStack(doc *rundoc.Document, lb *rundoc.Loaded, a run.Action) (*config.Stack, error) {
	if lb.Config == nil {
		return nil, run.Permanent(fmt.Errorf("bundle %s no longer loads: %s", doc.Bundle, strings.Join(lb.Errors, "; ")))
	}
	if lb.Bundle.SHA256 != doc.Bundle.SHA256 {
		return nil, fmt.Errorf("bundle %s changed since the run started (sha256 %s, was %s): push again", doc.Bundle, lb.Bundle.SHA256, doc.Bundle.SHA256)
	}
	cs := lb.Config.Stack(a.Stack)
	if cs == nil {
		return nil, fmt.Errorf("stack %s is not in the bundle's config", a.Stack)
	}
	return cs, nil
}

// executeInputs gathers what ExecuteChangeSet needs from the loaded bundle
// (changeset.ExecuteInputs): the stack policy, and DisableRollback for a create.
func executeInputs(lb *rundoc.Loaded, r *run.Run, a run.Action) (*changeset.Inputs, error) {
	if lb.Config == nil {
		return nil, run.Permanent(fmt.Errorf("bundle no longer loads: %s", strings.Join(lb.Errors, "; ")))
	}
	cs := lb.Config.Stack(a.Stack)
	if cs == nil {
		return nil, fmt.Errorf("stack %s is not in the bundle's config", a.Stack)
	}
	rs := r.Stacks[a.Stack]
	return changeset.ExecuteInputs(cs, rs != nil && rs.ChangeSetType == "CREATE"), nil
}

// producers reads secret outputs again, from the stacks of run r (or of the bundle's
// config, for stacks outside the run) that made them, for unsealing.
func producers(r *run.Run, lb *rundoc.Loaded, cs *changeset.Client) outputReader {
	return func(ctx context.Context, refs [][2]string) (map[[2]string]string, error) {
		out := map[[2]string]string{}
		for _, ref := range refs {
			var spec target.Spec
			var stackName string
			if s := r.Stacks[ref[0]]; s != nil {
				spec, stackName = s.Target, s.StackName
			} else if c := lb.Config.Stack(ref[0]); c != nil {
				spec, stackName = c.Target, c.StackName
			} else {
				continue
			}
			live, err := cs.Stacks(ctx, spec, []string{stackName})
			if err != nil {
				return nil, fmt.Errorf("read output %s of stack %s again: %w", ref[1], stackName, err)
			}
			if v, ok := live[stackName].Outputs[ref[1]]; ok {
				out[ref] = v
			}
		}
		return out, nil
	}
}
