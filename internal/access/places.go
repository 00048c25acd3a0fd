package access

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"golang.org/x/time/rate"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/target"
)

// Places is one session's way into the accounts and regions its stacks live in: a run's
// (the deployer keeps it across the steps a warm process makes) or a drift sweep's. It
// gives the CloudFormation client C of each place — the function's own at home, one built
// from the Reacher's configuration elsewhere (the role assumed, credentials cached per
// session and role, the SDK's retries kept) — and the session's API budget there, since
// CloudFormation throttles each account and region on its own. Every call a session makes
// waits for the budget of its place.
type Places[C any] struct {
	session string
	r       *Reacher
	home    C
	region  string
	dial    func(aws.Config) C
	budget  func() *rate.Limiter

	mu      sync.Mutex
	clients map[clientKey]C
	budgets map[target.Target]*rate.Limiter
}

type clientKey struct{ region, role, externalID string }

// PlacesConfig configures NewPlaces.
type PlacesConfig[C any] struct {
	// Session names the run or sweep: the assumed roles' session name, and what Forget drops.
	Session string
	// Reacher reaches other places; nil: cairn's own account and region only.
	Reacher *Reacher
	// Home is the function's own client; Region its region when Reacher is nil.
	Home   C
	Region string
	// Dial builds the client of another place from its configuration.
	Dial func(aws.Config) C
	// Budget makes the session's budget in a place (default awsclient.DefaultBudget).
	Budget func() *rate.Limiter
}

// NewPlaces returns the places of one session.
func NewPlaces[C any](c PlacesConfig[C]) *Places[C] {
	if c.Budget == nil {
		c.Budget = awsclient.DefaultBudget
	}
	return &Places[C]{session: c.Session, r: c.Reacher, home: c.Home, region: c.Region, dial: c.Dial, budget: c.Budget,
		clients: map[clientKey]C{}, budgets: map[target.Target]*rate.Limiter{}}
}

// Session is the session's name.
func (p *Places[C]) Session() string { return p.session }

// Home is the function's own account and region; the account is asked of STS (once per
// process) only when want says it matters: a stack names a role, so a role of cairn's own
// account must be told from another's.
func (p *Places[C]) Home(ctx context.Context, want bool) (target.Target, error) {
	if p.r == nil {
		return target.Target{Region: p.region}, nil
	}
	h, err := p.r.Home(ctx, want)
	if h.Region == "" {
		h.Region = p.region
	}
	return h, err
}

// Budget is the session's API budget in the place loc (relative to home: the zero Target
// is home).
func (p *Places[C]) Budget(loc target.Target) *rate.Limiter {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.budgets[loc]
	if b == nil {
		b = p.budget()
		p.budgets[loc] = b
	}
	return b
}

// At returns the client of t's place and the session's budget there. Home's is the
// function's own client; another region of its account gets a client of that region; a
// role is assumed first, so a refusal is the error, in STS's words (Refused).
func (p *Places[C]) At(ctx context.Context, t target.Spec) (C, *rate.Limiter, error) {
	var none C
	home, err := p.Home(ctx, t.RoleARN != "")
	if err != nil {
		return none, nil, err
	}
	loc := t.Location(home)
	if t.RoleARN == "" && loc == (target.Target{}) {
		return p.home, p.Budget(loc), nil
	}
	if p.r == nil {
		return none, nil, fmt.Errorf("cairn reaches its own account and region only here, not %s", target.Describe(loc, "region "+t.Region))
	}
	if t.RoleARN != "" {
		if _, err := p.r.Assume(ctx, p.session, t.RoleARN, t.ExternalID); err != nil {
			return none, nil, err
		}
	}
	key := clientKey{t.Region, t.RoleARN, t.ExternalID}
	p.mu.Lock()
	c, ok := p.clients[key]
	if !ok {
		c = p.dial(p.r.Config(p.session, t))
		p.clients[key] = c
	}
	p.mu.Unlock()
	return c, p.Budget(loc), nil
}

// Forget drops what the session kept: its clients, budgets and assumed credentials.
func (p *Places[C]) Forget() {
	p.mu.Lock()
	clear(p.clients)
	clear(p.budgets)
	p.mu.Unlock()
	if p.r != nil {
		p.r.Forget(p.session)
	}
}

// Survey reads, with read, the stacks of each place of where (each place with a target
// that reaches it), home first and the others in a stable order, keyed by target.Key of the
// place and the stack's name. A place other than home that cannot be read (its role
// refused, its region throttled past the retries) is unreachable, with the reason
// (Unreachable); home's failure is the error.
func Survey[V any](ctx context.Context, where map[target.Target]target.Spec, read func(ctx context.Context, loc target.Target, t target.Spec) (map[string]V, error)) (map[string]V, map[target.Target]string, error) {
	live := map[string]V{}
	unreachable := map[target.Target]string{}
	// sort.Slice rather than slices.SortedFunc: each instantiation of the latter for a struct
	// type adds 5-9 KB of code to the deployer, held under 15 MB (docs/policy.md).
	locs := slices.Collect(maps.Keys(where))
	sort.Slice(locs, func(i, j int) bool { return locs[i].String() < locs[j].String() })
	for _, loc := range locs {
		got, err := read(ctx, loc, where[loc])
		if err != nil {
			if loc == (target.Target{}) {
				return nil, nil, err
			}
			unreachable[loc] = Unreachable(loc, err)
			continue
		}
		for name, v := range got {
			live[target.Key(loc, name)] = v
		}
	}
	return live, unreachable, nil
}

// Unreachable says why the place loc (relative to home) cannot be reached, as a stack's
// reason or a report says it: "cannot reach account 222222222222 in eu-central-1: cannot
// assume role ...", STS's refusal as Refused words it, any other AWS error as "Code: message".
func Unreachable(loc target.Target, err error) string {
	why := awserr.Message(err)
	var refused *Refused
	if errors.As(err, &refused) {
		why = refused.Error()
	}
	return fmt.Sprintf("cannot reach %s: %s", describePlace(loc), why)
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

// Where returns the places the stacks of specs live in (home always), each with a target
// that reaches it: the first of specs' stacks there.
func Where(home target.Target, specs ...[]target.Spec) map[target.Target]target.Spec {
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
