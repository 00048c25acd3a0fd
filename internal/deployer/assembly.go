package deployer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cairn-dev/cairn/internal/cdkassets"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/statestore"
	"github.com/cairn-dev/cairn/internal/target"
)

// assemblyAssets makes the stacks of a CDK cloud assembly deployable before the run's first
// CloudFormation call, as the CDK CLI does before it deploys (cdkassets.Publisher.Prepare):
// the bootstrap version of their environments, their Docker images already published,
// their missing file assets uploaded. Any problem fails the run with every reason, having
// changed nothing (failed); an error is AWS's own, and the trigger is tried again.
// Disabled and locked stacks, which the run does not deploy, are left alone.
func (s starter) assemblyAssets(ctx context.Context, doc *rundoc.Document, lock *statestore.Lock, cfg *config.Config, log *slog.Logger) (failed bool, err error) {
	var stacks []*config.Stack
	for _, st := range cfg.Stacks {
		if st.Assembly != nil && st.Enabled && !st.Locked {
			stacks = append(stacks, st)
		}
	}
	if len(stacks) == 0 {
		return false, nil
	}
	home, err := s.placesOf(doc.Run.ID).Home(ctx, true)
	if err != nil {
		return false, err
	}
	var jobs []cdkassets.Stack
	var problems cdkassets.Problems
	for _, st := range stacks {
		if s.reach == nil && !st.Target.IsHome() {
			problems = append(problems, fmt.Sprintf("stack %s: this deployer reaches cairn's own account and region only, not %s", st.Name, target.Describe(st.Target.Location(home), st.StackName)))
			continue
		}
		at := target.Target{Account: cmp.Or(st.Target.Account(), home.Account), Region: cmp.Or(st.Target.Region, home.Region)}
		jobs = append(jobs, cdkassets.Stack{Name: st.Name, Assembly: st.Assembly, Account: at.Account, Region: at.Region, Target: st.Target,
			Where: st.Target.Location(home).Where()})
	}
	if len(problems) == 0 {
		runID := doc.Run.ID
		p := &cdkassets.Publisher{Logger: log, Own: s.cfg.Bucket, Trust: home.Account, Clients: cdkassets.FromConfig(func(spec target.Spec) aws.Config {
			if s.reach == nil {
				return aws.Config{}
			}
			return s.reach.Config(runID, spec)
		})}
		err = p.Prepare(ctx, jobs)
		if !errors.As(err, &problems) && err != nil {
			return false, err
		}
	}
	if len(problems) == 0 {
		return false, nil
	}
	log.Warn("deploy: the assembly's assets or environments are not ready; nothing is changed", "problems", problems.Error())
	doc.Errors = append(doc.Errors, problems...)
	return true, s.fail(ctx, doc, lock, fmt.Sprintf("refused: %d problem(s) with the CDK assembly's environments or assets, found before any CloudFormation call; nothing was changed", len(problems)), log)
}
