package deployer

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/seal"
)

// CloudFormation quotes values in what it says: a resource's failure reason, a change
// set's status reason, an API error. What a step observed passes the step's
// seal.Scrubber before the run records it, so every text derived from the run (its
// document and report, the CLI's --wait and follow, the published summary) holds the
// run's secrets as ****; the step's logs pass it too (seal.Scrubber.Handler). The
// scrubber learns the secrets the step unseals for its change sets, and the run's others
// are read again for a turn that needs them (one that observed a text, in a run holding
// secrets); all are kept in memory only, for the turn.

// texts are the observation's fields CloudFormation writes: its reasons, and what it
// says of each resource's event (a reason quotes a property's value, a physical id can be
// one).
func texts(o *run.Observation) []*string {
	ts := reasons(o)
	for i := range o.Events {
		ts = append(ts, &o.Events[i].Reason, &o.Events[i].PhysicalID)
	}
	return ts
}

// reasons are the observation's own texts (texts lists them first).
func reasons(o *run.Observation) []*string {
	return []*string{&o.Err, &o.ChangeSetReason, &o.Reason, &o.LookErr}
}

// secrets are what a step knows of its run's secrets: sc scrubs with them; learn reads
// those of a stack again, once a step.
type secrets struct {
	st     stepper
	ctx    context.Context
	doc    *rundoc.Document
	cs     *changeset.Client
	sc     *seal.Scrubber
	learnt map[string]error
}

func (st stepper) secrets(ctx context.Context, doc *rundoc.Document, seen []run.Observation, cs *changeset.Client, sc *seal.Scrubber) *secrets {
	for _, o := range seen {
		if s := doc.Run.Stacks[o.Stack]; s != nil {
			for _, name := range s.SecretOutputs {
				sc.Add(o.Outputs[name])
			}
		}
	}
	return &secrets{st: st, ctx: ctx, doc: doc, cs: cs, sc: sc, learnt: map[string]error{}}
}

// learn reads into sc the secrets stack name of run r was given, which what
// CloudFormation says of it may quote: the NoEcho values its bundle gives, the values its
// sealed parameters stand for (SecureStrings, secret outputs).
func (x *secrets) learn(r *run.Run, name string) error {
	if err, ok := x.learnt[name]; ok {
		return err
	}
	err := x.read(r, name)
	x.learnt[name] = err
	return err
}

func (x *secrets) read(r *run.Run, name string) error {
	s := r.Stacks[name]
	if !plan.HoldsSecrets(s) {
		return nil
	}
	loaded, err := x.st.bundle(x.ctx, x.doc)
	if err != nil {
		return fmt.Errorf("download the bundle: %w", err)
	}
	if loaded.Config == nil {
		return fmt.Errorf("bundle %s no longer loads", x.doc.Bundle)
	}
	c := loaded.Config.Stack(name)
	if c == nil {
		return fmt.Errorf("stack %s is not in the bundle's config", name)
	}
	x.sc.Add(c.BundleSecrets()...)
	k, err := x.st.key(x.ctx)
	if err != nil {
		return fmt.Errorf("read the seal key: %w", err)
	}
	// A NoEcho value the run resolved is stored as its hash only ({{cairn:noecho@HASH}}):
	// an apply run holds those of the plan. Its raw value, resolved again from what the run
	// recorded, gives it back when it has that hash.
	candidates, unresolved := resolveNoEcho(r, s, x.doc)
	params, lost := config.RecoverNoEcho(k, name, s.Parameters, candidates)
	for _, p := range lost {
		delete(params, p)
	}
	plain, _, err := x.st.unseal(x.ctx, params, c, producers(r, loaded, x.cs))
	if err != nil {
		return fmt.Errorf("read the secrets of stack %s: %w", name, err)
	}
	for p, v := range s.Parameters {
		if _, ok := plain[p]; ok && (config.HoldsSealed(v) || slices.Contains(s.NoEcho, p)) {
			x.sc.Add(plain[p])
		}
	}
	return notRecovered(name, lost, unresolved)
}

// notRecovered says why the NoEcho values of stack named in lost could not be read again
// (nil when none is lost): what resolving them said (unresolved), or that they resolve to
// other values now.
func notRecovered(stack string, lost []string, unresolved map[string]error) error {
	if len(lost) == 0 {
		return nil
	}
	var why []string
	for _, p := range lost {
		w := "parameter " + p + " resolves to another value than the run deployed"
		if err := unresolved[p]; err != nil {
			w = err.Error()
		}
		why = append(why, w)
	}
	return fmt.Errorf("stack %s: the NoEcho values the run keeps as hashes only could not be read again (%s)", stack, strings.Join(why, "; "))
}

// resolveNoEcho resolves again, each alone, the raw values of s's NoEcho parameters from
// what run r recorded (its lookups, its SSM parameters, its stacks' outputs), as run.Advance
// resolves them: candidates for the values the run keeps by hash, and why those that do
// not resolve do not.
func resolveNoEcho(r *run.Run, s *run.Stack, doc *rundoc.Document) (map[string][]string, map[string]error) {
	resolve, outputs := plan.Resolver(r, doc.Lookups, doc.SSM), plan.Outputs(r)
	candidates, unresolved := map[string][]string{}, map[string]error{}
	for _, p := range s.NoEcho {
		raw, ok := s.RawParameters[p]
		if !ok {
			unresolved[p] = fmt.Errorf("parameter %s: the run keeps no value of it as written to resolve again", p)
			continue
		}
		v, err := resolve(s.Name, map[string]string{p: raw}, outputs)
		if err != nil {
			unresolved[p] = err
			continue
		}
		candidates[p] = []string{v[p]}
	}
	return candidates, unresolved
}

// scrub replaces the secrets of run r in what the observations say. When those of a stack
// cannot be read, what is said of it is withheld instead, with why.
func (x *secrets) scrub(r *run.Run, obs []*run.Observation, log *slog.Logger) {
	for _, o := range obs {
		if !slices.ContainsFunc(texts(o), func(p *string) bool { return *p != "" }) {
			continue
		}
		err := x.learn(r, o.Stack)
		for i, p := range texts(o) {
			switch {
			case *p == "":
			case err != nil && i < len(reasons(o)):
				*p = "(withheld: the stack holds secrets, which could not be read to mask them in this text: " + err.Error() + "; see the stack's events in CloudFormation)"
			case err != nil: // an event's: short, as a stack has many
				*p = "(withheld: the stack's secrets could not be read to mask it)"
			default:
				*p = x.sc.Scrub(*p)
			}
		}
		if err != nil {
			log.Warn("deploy: texts of CloudFormation withheld: the stack's secrets could not be read to mask them", "stack", o.Stack, "err", err)
		}
	}
}
