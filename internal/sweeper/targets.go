package sweeper

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/cairn-dev/cairn/internal/access"
	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

// places is an invocation's way into the accounts and regions of its sweep's stacks
// (access.Places): CloudFormation clients and the invocation's API budget in each.
func (d *Driver) places(sweepID string) *access.Places[CloudFormationAPI] {
	return access.NewPlaces(access.PlacesConfig[CloudFormationAPI]{
		Session: "drift-" + sweepID, Reacher: d.c.Reach, Home: d.c.CFN, Budget: d.cfg.Budget,
		Dial: func(c aws.Config) CloudFormationAPI { return cloudformation.NewFromConfig(c) },
	})
}

// at returns CloudFormation of t for the invocation and its budget there, paced on the
// driver's clock.
func (d *Driver) at(ctx context.Context, inv *invocation, t target.Spec) (CloudFormationAPI, awsclient.Budget, error) {
	api, budget, err := inv.places.At(ctx, t)
	return api, awsclient.Budget{Limiter: budget, Clock: d.clk}, err
}

// survey describes the stacks of every place the graphs' stacks live in, keyed by
// target.Key; a place other than home that cannot be listed is unreachable, with why
// (access.Survey).
func (d *Driver) survey(ctx context.Context, inv *invocation, graphs []*state.Graph) (map[string]plan.Live, map[target.Target]string, target.Target, error) {
	want := false
	var specs []target.Spec
	for _, g := range graphs {
		for _, n := range g.Names() {
			if s := g.Stacks[n]; s != nil {
				specs = append(specs, s.Target)
				want = want || s.Target.RoleARN != ""
			}
		}
	}
	home, err := inv.places.Home(ctx, want)
	if err != nil {
		return nil, nil, home, fmt.Errorf("drift: %w", err)
	}
	live, unreachable, err := access.Survey(ctx, access.Where(home, specs), func(ctx context.Context, _ target.Target, t target.Spec) (map[string]plan.Live, error) {
		api, budget, err := inv.places.At(ctx, t)
		if err != nil {
			return nil, err
		}
		return changeset.ListStacks(ctx, api, budget)
	})
	if err != nil {
		return nil, nil, home, fmt.Errorf("drift: %w", err)
	}
	return live, unreachable, home, nil
}
