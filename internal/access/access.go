// Package access gives the deployer (and the drift function) its way into each target: the
// SDK configuration of an account and region, with the credentials of the role a stack
// names (role_arn) assumed through STS — with the run's id in the session name, the
// optional external id, and cached per run and role until shortly before they expire — or
// the function's own credentials in another region of its account.
package access

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"golang.org/x/sync/singleflight"

	"github.com/cairn-dev/cairn/internal/awserr"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/target"
)

// DefaultWindow is how long before they expire assumed credentials are renewed: longer
// than any call a step makes with them.
const DefaultWindow = 5 * time.Minute

// STSAPI is the part of *sts.Client a Reacher uses.
type STSAPI interface {
	AssumeRole(ctx context.Context, in *sts.AssumeRoleInput, optFns ...func(*sts.Options)) (*sts.AssumeRoleOutput, error)
	GetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, optFns ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

// Reacher builds the configuration of targets from the function's own.
type Reacher struct {
	// Base is the function's own configuration: its region is home.
	Base aws.Config
	STS  STSAPI
	// Clock decides when cached credentials are due for renewal (default clock.Real).
	Clock clock.Clock
	// Window: see DefaultWindow.
	Window time.Duration

	mu      sync.Mutex
	creds   map[credKey]aws.Credentials
	account string
	// assuming makes the goroutines that miss the cache for one key at once (a run's
	// stacks looked at in parallel, concurrent invocations) share one AssumeRole.
	assuming singleflight.Group
}

type credKey struct{ session, role, externalID string }

// New returns a Reacher of cfg's account and region.
func New(cfg aws.Config, c clock.Clock) *Reacher {
	return &Reacher{Base: cfg, STS: sts.NewFromConfig(cfg), Clock: c}
}

func (r *Reacher) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// Home is the function's own account and region; the account is asked of STS once, and
// only when want is true (a run with a role_arn), as stacks at home need no account.
func (r *Reacher) Home(ctx context.Context, want bool) (target.Target, error) {
	home := target.Target{Region: r.Base.Region}
	r.mu.Lock()
	home.Account = r.account
	r.mu.Unlock()
	if home.Account != "" || !want {
		return home, nil
	}
	out, err := r.STS.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return home, fmt.Errorf("who am I (sts GetCallerIdentity): %w", err)
	}
	home.Account = aws.ToString(out.Account)
	r.mu.Lock()
	r.account = home.Account
	r.mu.Unlock()
	return home, nil
}

// Config returns the configuration reaching spec for session (a run's or sweep's id): in
// spec's region, with spec's role's credentials when it names one.
func (r *Reacher) Config(session string, spec target.Spec) aws.Config {
	cfg := r.Base.Copy()
	if spec.Region != "" {
		cfg.Region = spec.Region
	}
	if spec.RoleARN != "" {
		cfg.Credentials = assumed{r: r, key: credKey{session, spec.RoleARN, spec.ExternalID}}
	}
	return cfg
}

// SessionName is the RoleSessionName of a session: cairn-ID, as STS allows it (at most 64
// of letters, digits and +=,.@-), so CloudTrail shows which run made each call.
func SessionName(session string) string {
	name := "cairn-" + strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("+=,.@-_", c) {
			return c
		}
		return '-'
	}, session)
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}

// Assume returns credentials of role for session, from the cache while they are good for
// more than Window.
func (r *Reacher) Assume(ctx context.Context, session, role, externalID string) (aws.Credentials, error) {
	key := credKey{session, role, externalID}
	window := r.Window
	if window <= 0 {
		window = DefaultWindow
	}
	r.mu.Lock()
	c, ok := r.creds[key]
	r.mu.Unlock()
	if ok && r.now().Before(c.Expires.Add(-window)) {
		return c, nil
	}
	v, err, _ := r.assuming.Do(fmt.Sprintf("%q %q %q", session, role, externalID), func() (any, error) {
		return r.assume(ctx, key)
	})
	if err != nil {
		return aws.Credentials{}, err
	}
	return v.(aws.Credentials), nil
}

// assume asks STS for the credentials of key and caches them.
func (r *Reacher) assume(ctx context.Context, key credKey) (aws.Credentials, error) {
	session, role, externalID := key.session, key.role, key.externalID
	in := &sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String(SessionName(session))}
	if externalID != "" {
		in.ExternalId = aws.String(externalID)
	}
	out, err := r.STS.AssumeRole(ctx, in)
	if err != nil {
		how := ""
		if externalID != "" {
			how = " with its external_id"
		}
		return aws.Credentials{}, &Refused{msg: fmt.Sprintf("cannot assume role %s%s: %s (its trust policy must admit cairn's deployer and drift roles: the target stack's deploy role does)",
			role, how, awserr.Message(err)), err: err}
	}
	c := aws.Credentials{
		AccessKeyID: aws.ToString(out.Credentials.AccessKeyId), SecretAccessKey: aws.ToString(out.Credentials.SecretAccessKey),
		SessionToken: aws.ToString(out.Credentials.SessionToken), Source: "cairn-assume-role",
		CanExpire: true, Expires: aws.ToTime(out.Credentials.Expiration),
	}
	r.mu.Lock()
	if r.creds == nil {
		r.creds = map[credKey]aws.Credentials{}
	}
	r.creds[key] = c
	r.mu.Unlock()
	return c, nil
}

// Forget drops the credentials cached for session, once its run ended.
func (r *Reacher) Forget(session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.creds {
		if k.session == session {
			delete(r.creds, k)
		}
	}
}

// assumed is the credentials provider of one session and role.
type assumed struct {
	r   *Reacher
	key credKey
}

// Retrieve returns the cached credentials. The SDK keeps credentials in a cache of its own
// that judges expiry by the wall clock; so that the Reacher's cache (on its clock) decides
// alone, the SDK is told they expire at once and asks again at every call.
func (a assumed) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := a.r.Assume(ctx, a.key.session, a.key.role, a.key.externalID)
	c.Expires = time.Now()
	return c, err
}

// Refused is a failed AssumeRole: STS's answer as a person reads it, and the SDK's error
// beneath, for its classification (permanent, throttled).
type Refused struct {
	msg string
	err error
}

func (e *Refused) Error() string { return e.msg }
func (e *Refused) Unwrap() error { return e.err }
