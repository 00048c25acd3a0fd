package deploy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/reach"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/target"
)

// home is the deployer's own account and region; the account is looked up (once per
// process) only when want says a stack names a role, as it matters only then.
func (b *base) home(ctx context.Context, want bool) (target.Target, error) {
	if b.reach == nil {
		return target.Target{Region: b.cfg.Region}, nil
	}
	h, err := b.reach.Home(ctx, want)
	if h.Region == "" {
		h.Region = b.cfg.Region
	}
	return h, err
}

// at returns CloudFormation of t for run runID, and the run's budget there. Home's is the
// deployer's own client; another region of its account gets a client of that region; a
// role is assumed (the credentials are cached per run and role) before its client is
// made, so a refusal is the error, in STS's words.
func (b *base) at(ctx context.Context, runID string, t target.Spec) (changeset.API, *rate.Limiter, error) {
	home, err := b.home(ctx, t.RoleARN != "")
	if err != nil {
		return nil, nil, err
	}
	loc := t.Location(home)
	if t.RoleARN == "" && loc == (target.Target{}) {
		return b.cfn, b.budget(runID, loc), nil
	}
	if b.reach == nil {
		return nil, nil, run.Permanent(fmt.Errorf("this deployer reaches cairn's own account and region only, not %s", target.Describe(loc, "region "+t.Region)))
	}
	if t.RoleARN != "" {
		if _, err := b.reach.Assume(ctx, runID, t.RoleARN, t.ExternalID); err != nil {
			if awsclient.Permanent(err) {
				err = run.Permanent(err)
			}
			return nil, nil, err
		}
	}
	key := runID + "@" + t.Region + "|" + t.RoleARN + "|" + t.ExternalID
	c, ok := b.clients.Load(key)
	if !ok {
		c, _ = b.clients.LoadOrStore(key, cloudformation.NewFromConfig(b.reach.Config(runID, t)))
	}
	return c.(changeset.API), b.budget(runID, loc), nil
}

// assets is where run runID stores the artifacts of stacks of t: cairn's own bucket for
// stacks of its account and region; elsewhere the assets bucket infra's target stack makes
// in that account and region, written with the credentials the stack is reached with (its
// role's, or the deployer's own in another region of its account).
func (b *base) assets(ctx context.Context, runID string, t target.Spec) (*changeset.Assets, error) {
	home, err := b.home(ctx, true)
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
		c, _ = b.clients.LoadOrStore(key, awsclient.S3(b.reach.Config(runID, t)))
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

// places are the accounts and regions a run's stacks live in (home always), each with a
// target that reaches it: the first of the config's stacks there, else of the graph's.
func places(home target.Target, specs ...[]target.Spec) map[target.Target]target.Spec {
	out := map[target.Target]target.Spec{{}: {}}
	for _, list := range specs {
		for _, s := range list {
			loc := s.Location(home)
			if _, ok := out[loc]; !ok {
				out[loc] = s
			}
		}
	}
	return out
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
// run's reads do not grow with the other stacks of an account. A place other than home
// that cannot be read (its role refused, its region throttled past the retries) is
// unreachable, with the reason; home's failure is the error, as without targets.
func survey(ctx context.Context, cs *changeset.Client, where map[target.Target]target.Spec, keys []string) (map[string]plan.Live, map[target.Target]string, error) {
	live := map[string]plan.Live{}
	unreachable := map[target.Target]string{}
	names := map[target.Target][]string{}
	for _, k := range keys {
		loc, name := target.ParseKey(k)
		names[loc] = append(names[loc], name)
	}
	locs := slices.Collect(maps.Keys(where))
	sort.Slice(locs, func(i, j int) bool { return locs[i].String() < locs[j].String() })
	for _, loc := range locs {
		l, err := cs.Stacks(ctx, where[loc], names[loc])
		if err != nil {
			if loc == (target.Target{}) {
				return nil, nil, err
			}
			why := awsclient.Message(err)
			var refused *reach.Refused
			if errors.As(err, &refused) {
				why = refused.Error()
			}
			unreachable[loc] = fmt.Sprintf("cannot reach %s: %s", describePlace(loc), why)
			continue
		}
		for name, v := range l {
			live[target.Key(loc, name)] = v
		}
	}
	return live, unreachable, nil
}

// describePlace names an account and region relative to home for people.
func describePlace(loc target.Target) string {
	acct, region := loc.Account, loc.Region
	if acct == "" {
		acct = "cairn's account"
	} else {
		acct = "account " + acct
	}
	if region == "" {
		region = "cairn's region"
	}
	return acct + " in " + region
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
	home, err := b.home(ctx, hasRoleIn(r))
	if err != nil {
		return nil, err
	}
	live, _, err := survey(ctx, cs, places(home, runSpecs(r)), runKeys(r))
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
				if l.Kind == "xref" || l.Kind == "rxref" || l.Kind == "cfn" {
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
