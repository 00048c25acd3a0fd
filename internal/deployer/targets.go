package deployer

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/access"
	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

// at returns CloudFormation of t for run runID, and the run's budget there
// (access.Places.At); a refusal retrying cannot help fails the stack at once.
func (b *base) at(ctx context.Context, runID string, t target.Spec) (changeset.API, *rate.Limiter, error) {
	api, budget, err := b.placesOf(runID).At(ctx, t)
	if err != nil && (awserr.Permanent(err) || b.reach == nil) {
		err = run.Permanent(err)
	}
	return api, budget, err
}

// assets is where run runID stores the artifacts of stacks of t: cairn's own bucket for
// stacks of its account and region; elsewhere the assets bucket infra's target stack makes
// in that account and region, written with the credentials the stack is reached with (its
// role's, or the deployer's own in another region of its account).
func (b *base) assets(ctx context.Context, runID string, t target.Spec) (*changeset.Assets, error) {
	home, err := b.placesOf(runID).Home(ctx, true)
	if err != nil {
		return nil, err
	}
	loc := t.Location(home)
	if t.RoleARN == "" && loc == (target.Target{}) {
		return &changeset.Assets{S3: b.s3, Bucket: b.cfg.Bucket, Where: "cairn's bucket"}, nil
	}
	if b.reach == nil {
		return nil, run.Permanent(fmt.Errorf("this deployer reaches cairn's own account and region only, not %s", target.Describe(loc, "region "+t.Region)))
	}
	at := target.Target{Account: cmp.Or(t.Account(), home.Account), Region: cmp.Or(t.Region, home.Region)}
	key := runID + "@s3@" + t.Region + "|" + t.RoleARN + "|" + t.ExternalID
	c, ok := b.clients.Load(key)
	if !ok {
		// The target's assets bucket is cairn's too: its keys pass the same gate.
		c, _ = b.clients.LoadOrStore(key, objects.Gate(awsclient.S3(b.reach.Config(runID, t)), at.AssetsBucketName()))
	}
	return &changeset.Assets{S3: c.(changeset.AssetsAPI), Bucket: at.AssetsBucketName(), Where: "account " + at.Account + ", " + at.Region}, nil
}

// hasRole reports whether a stack of the config or the graph names a role: then the
// deployer's account matters, to tell a role of its own account from another's.
func hasRole(cfg *config.Config, g *state.Graph) bool {
	if cfg != nil {
		for _, s := range cfg.Stacks {
			if s.Target.RoleARN != "" {
				return true
			}
		}
	}
	if g != nil {
		for _, s := range g.Stacks {
			if s != nil && s.Target.RoleARN != "" {
				return true
			}
		}
	}
	return false
}

func configSpecs(cfg *config.Config) []target.Spec {
	var out []target.Spec
	if cfg != nil {
		for _, s := range cfg.Stacks {
			out = append(out, s.Target)
		}
	}
	return out
}

func graphSpecs(g *state.Graph) []target.Spec {
	var out []target.Spec
	if g != nil {
		for _, name := range g.Names() {
			if s := g.Stacks[name]; s != nil {
				out = append(out, s.Target)
			}
		}
	}
	return out
}

func runSpecs(r *run.Run) []target.Spec {
	var out []target.Spec
	for _, name := range r.Names() {
		out = append(out, r.Stacks[name].Target)
	}
	return out
}

// survey describes the stacks of keys (target.Key: place and name) in the given places,
// keyed by target.Key, each place read the cheaper way (changeset.Client.Stacks), so a
// run's reads do not grow with the other stacks of an account; a place other than home
// that cannot be read is unreachable, with the reason (access.Survey).
func survey(ctx context.Context, cs *changeset.Client, where map[target.Target]target.Spec, keys []string) (map[string]plan.Live, map[target.Target]string, error) {
	names := map[target.Target][]string{}
	for _, k := range keys {
		loc, name := target.ParseKey(k)
		names[loc] = append(names[loc], name)
	}
	return access.Survey(ctx, where, func(ctx context.Context, loc target.Target, t target.Spec) (map[string]plan.Live, error) {
		return cs.Stacks(ctx, t, names[loc])
	})
}

// importers looks up, in each place, who imports the exports of the stacks the plan may
// delete (in the graph, not in the config), keyed target.Key(place, export).
func importers(ctx context.Context, cs *changeset.Client, cfg *config.Config, g *state.Graph, home target.Target, live map[string]plan.Live) (map[string][]string, error) {
	byPlace := map[target.Target][]string{}
	specs := map[target.Target]target.Spec{}
	for _, name := range g.Names() {
		if cfg.Stack(name) != nil {
			continue
		}
		st := g.Stacks[name]
		loc := st.Target.Location(home)
		if l, ok := live[target.Key(loc, st.StackName)]; ok {
			byPlace[loc] = append(byPlace[loc], slices.Sorted(maps.Values(l.Exports))...)
			specs[loc] = st.Target
		}
	}
	out := map[string][]string{}
	for loc, exports := range byPlace {
		got, err := cs.Importers(ctx, specs[loc], exports)
		if err != nil {
			return nil, err
		}
		for exp, stacks := range got {
			out[target.Key(loc, exp)] = stacks
		}
	}
	return out, nil
}

// liveOf describes the stacks of the places of a run's stacks, for plan documents,
// approvals and hygiene; a place that cannot be reached is left out (its stacks read as
// missing, so an approval of their change sets is refused as stale).
func liveOf(ctx context.Context, b *base, cs *changeset.Client, r *run.Run) (map[string]plan.Live, error) {
	home, err := b.placesOf(r.ID).Home(ctx, hasRoleIn(r))
	if err != nil {
		return nil, err
	}
	live, _, err := survey(ctx, cs, access.Where(home, runSpecs(r)), runKeys(r))
	return live, err
}

// runKeys are the stacks a run's documents compare with what is live: its own, and those
// whose outputs it read (External's keys).
func runKeys(r *run.Run) []string {
	var keys []string
	for _, s := range r.Stacks {
		keys = append(keys, s.Key())
	}
	for k := range r.External {
		if stack, _, ok := strings.Cut(k, "::"); ok {
			keys = append(keys, stack)
		}
	}
	return keys
}

// plannedKeys are the stacks a plan of cfg against g looks at: the config's stacks and
// the stacks whose outputs they read by name (xref, rxref, cfn: in the reader's account
// and region), and the graph's stacks.
func plannedKeys(home target.Target, cfg *config.Config, g *state.Graph) []string {
	var keys []string
	if cfg != nil {
		for _, s := range cfg.Stacks {
			at := s.Target.Location(home)
			keys = append(keys, target.Key(at, s.StackName))
			for _, l := range s.Lookups {
				if l.Kind.ByStackName() {
					keys = append(keys, target.Key(at, l.StackName))
				}
			}
		}
	}
	if g != nil {
		for _, s := range g.Stacks {
			if s != nil {
				keys = append(keys, target.Key(s.Target.Location(home), s.StackName))
			}
		}
	}
	return keys
}

func hasRoleIn(r *run.Run) bool {
	for _, s := range r.Stacks {
		if s.Target.RoleARN != "" {
			return true
		}
	}
	return false
}
