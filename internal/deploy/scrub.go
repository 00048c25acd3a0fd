package deploy

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/cairn-dev/cairn/internal/changeset"
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

// texts are the observation's fields CloudFormation writes.
func texts(o *run.Observation) []*string {
	return []*string{&o.Err, &o.ChangeSetReason, &o.Reason, &o.LookErr}
}

// learn reads the secrets of doc's run again into sc: the NoEcho values its bundle gives,
// the values its stacks' sealed parameters stand for (SecureStrings, secret outputs), and
// the secret outputs observed in seen.
func (st stepper) learn(ctx context.Context, doc *rundoc.Document, seen []run.Observation, cs *changeset.Client, sc *seal.Scrubber) error {
	for _, o := range seen {
		if s := doc.Run.Stacks[o.Stack]; s != nil {
			for _, name := range s.SecretOutputs {
				sc.Add(o.Outputs[name])
			}
		}
	}
	loaded, err := st.bundle(ctx, doc)
	if err != nil {
		return fmt.Errorf("download the bundle: %w", err)
	}
	if loaded.Config == nil {
		return fmt.Errorf("bundle %s no longer loads", doc.Bundle)
	}
	for _, name := range doc.Run.Names() {
		s, c := doc.Run.Stacks[name], loaded.Config.Stack(name)
		if c == nil {
			continue
		}
		sc.Add(c.BundleSecrets()...)
		plain, secret, err := st.unseal(ctx, s.Parameters, c, producers(doc.Run, loaded, cs))
		if err != nil {
			return fmt.Errorf("read the secrets of stack %s: %w", name, err)
		}
		for _, k := range secret {
			sc.Add(plain[k])
		}
	}
	return nil
}

// scrub replaces the run's secrets in what the observations say, once learn read them
// into sc. When they cannot be read, what the observations say is withheld instead, with
// why.
func (st stepper) scrub(obs []*run.Observation, doc *rundoc.Document, sc *seal.Scrubber, learn func() error, log *slog.Logger) {
	var found bool
	for _, o := range obs {
		found = found || slices.ContainsFunc(texts(o), func(p *string) bool { return *p != "" })
	}
	if !found || !slices.ContainsFunc(slices.Collect(maps.Values(doc.Run.Stacks)), plan.HoldsSecrets) {
		return
	}
	err := learn()
	for _, o := range obs {
		for _, p := range texts(o) {
			switch {
			case *p == "":
			case err != nil:
				*p = "(withheld: the run holds secrets, which could not be read to mask them in this text: " + err.Error() + "; see the stack's events in CloudFormation)"
			default:
				*p = sc.Scrub(*p)
			}
		}
	}
	if err != nil {
		log.Warn("deploy: texts of CloudFormation withheld: the run's secrets could not be read to mask them", "err", err)
	}
}
