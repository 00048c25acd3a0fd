package drift

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/reach"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

// reacher is the driver's way into targets: CloudFormation clients by sweep and target,
// and the invocation's API budget in each account and region.
type reacher struct {
	mu      sync.Mutex
	clients map[string]CloudFormationAPI
}

// home is the drift function's own account and region (the account only when a graph
// names a role).
func (d *Driver) home(ctx context.Context, want bool) (target.Target, error) {
	if d.c.Reach == nil {
		return target.Target{}, nil
	}
	h, err := d.c.Reach.Home(ctx, want)
	return target.Target{Account: h.Account, Region: h.Region}, err
}

// at returns CloudFormation of t for sweep and the invocation's budget there.
func (d *Driver) at(ctx context.Context, inv *invocation, t target.Spec) (CloudFormationAPI, *rate.Limiter, error) {
	home, err := d.home(ctx, t.RoleARN != "")
	if err != nil {
		return nil, nil, err
	}
	loc := t.Location(home)
	if t.RoleARN == "" && loc == (target.Target{}) {
		return d.c.CFN, inv.budget, nil
	}
	if d.c.Reach == nil {
		return nil, nil, fmt.Errorf("this drift function reaches cairn's own account and region only, not %s", target.Describe(loc, "region "+t.Region))
	}
	session := "drift-" + inv.sweepID
	if t.RoleARN != "" {
		if _, err := d.c.Reach.Assume(ctx, session, t.RoleARN, t.ExternalID); err != nil {
			return nil, nil, err
		}
	}
	key := session + "|" + t.Region + "|" + t.RoleARN + "|" + t.ExternalID
	d.reach.mu.Lock()
	defer d.reach.mu.Unlock()
	if d.reach.clients == nil {
		d.reach.clients = map[string]CloudFormationAPI{}
	}
	c := d.reach.clients[key]
	if c == nil {
		c = cloudformation.NewFromConfig(d.c.Reach.Config(session, t))
		d.reach.clients[key] = c
	}
	if inv.budgets == nil {
		inv.budgets = map[target.Target]*rate.Limiter{}
	}
	b := inv.budgets[loc]
	if b == nil {
		b = d.cfg.Budget()
		inv.budgets[loc] = b
	}
	return c, b, nil
}

// survey describes the stacks of every place the graphs' stacks live in, keyed by
// target.Key; a place other than home that cannot be listed is unreachable, with why.
func (d *Driver) survey(ctx context.Context, inv *invocation, graphs []*state.Graph) (map[string]plan.Live, map[target.Target]string, target.Target, error) {
	want := false
	for _, g := range graphs {
		for _, s := range g.Stacks {
			if s != nil && s.Target.RoleARN != "" {
				want = true
			}
		}
	}
	home, err := d.home(ctx, want)
	if err != nil {
		return nil, nil, home, fmt.Errorf("drift: %w", err)
	}
	where := map[target.Target]target.Spec{{}: {}}
	for _, g := range graphs {
		for _, n := range g.Names() {
			if s := g.Stacks[n]; s != nil {
				if _, ok := where[s.Target.Location(home)]; !ok {
					where[s.Target.Location(home)] = s.Target
				}
			}
		}
	}
	locs := make([]target.Target, 0, len(where))
	for l := range where {
		locs = append(locs, l)
	}
	sort.Slice(locs, func(i, j int) bool { return locs[i].String() < locs[j].String() })
	live := map[string]plan.Live{}
	unreachable := map[target.Target]string{}
	for _, loc := range locs {
		api, budget, err := d.at(ctx, inv, where[loc])
		var l map[string]plan.Live
		if err == nil {
			l, err = changeset.ListStacks(ctx, api, budget)
		}
		if err != nil {
			if loc == (target.Target{}) {
				return nil, nil, home, fmt.Errorf("drift: %w", err)
			}
			why := awsclient.Message(err)
			var refused *reach.Refused
			if errors.As(err, &refused) {
				why = refused.Error()
			}
			unreachable[loc] = "cannot reach " + target.Describe(loc, "its account and region") + ": " + why
			continue
		}
		for name, v := range l {
			live[target.Key(loc, name)] = v
		}
	}
	return live, unreachable, home, nil
}
