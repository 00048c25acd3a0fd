// Package stslocal is the local emulator's AWS Security Token Service: AssumeRole, which
// issues temporary credentials of a role after checking the role's trust policy, and
// GetCallerIdentity. It also tells the emulator who signed a request: the account of an
// access key, or the session of credentials it issued.
//
// The emulator has no IAM users and runs Lambda functions in process with one account's
// plain credentials, so plain credentials of an account (an access key id of 12 digits is
// that account, as in LocalStack; any other is the emulator's home account) stand for
// every principal of that account: its root, users and roles. Sessions are checked
// exactly: a trust policy naming one role admits sessions of that role only. It is a test
// double of AWS, never a production path.
package stslocal

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/internal/awslocal/statefile"
	"github.com/cairn-dev/cairn/internal/clock"
)

// Durations of AssumeRole's sessions, as AWS allows them.
const (
	DefaultDuration = time.Hour
	MinDuration     = 15 * time.Minute
	// DefaultMaxSession is a role's MaxSessionDuration unless the role sets one.
	DefaultMaxSession = time.Hour
)

// Role is an IAM role the emulator knows (made by a stack's AWS::IAM::Role).
type Role struct {
	ARN, Account, Name, ID string
	// Trust is the role's AssumeRolePolicyDocument, as JSON.
	Trust string
	// MaxSession bounds DurationSeconds (DefaultMaxSession when zero).
	MaxSession time.Duration
}

// Session is a set of temporary credentials AssumeRole issued.
type Session struct {
	AccessKeyID     string    `json:"access_key_id"`
	SecretAccessKey string    `json:"secret_access_key"`
	Token           string    `json:"token"`
	Account         string    `json:"account"`
	RoleARN         string    `json:"role_arn"`
	RoleID          string    `json:"role_id"`
	Name            string    `json:"session_name"`
	Expires         time.Time `json:"expires"`
}

// ARN is the session's identity, arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION.
func (s Session) ARN() string {
	return "arn:aws:sts::" + s.Account + ":assumed-role/" + lastSegment(s.RoleARN) + "/" + s.Name
}

// Caller is who signed a request.
type Caller struct {
	Account string
	// Session is nil for an account's plain credentials.
	Session *Session
}

// ARN is the caller's identity: the account's root for plain credentials, the assumed
// role's session otherwise.
func (c Caller) ARN() string {
	if c.Session != nil {
		return c.Session.ARN()
	}
	return "arn:aws:iam::" + c.Account + ":root"
}

// Errors of Identify, answered by the emulator in the protocol of the service called.
var (
	ErrExpired = errors.New("The security token included in the request is expired")
	ErrInvalid = errors.New("The security token included in the request is invalid.")
)

// Options configures a Service.
type Options struct {
	Clock clock.Clock
	// Dir, when set, persists issued sessions in Dir/sts.json.
	Dir string
	// Role finds a role by account and name; false when it does not exist.
	Role   func(account, name string) (Role, bool)
	Logger *slog.Logger
}

// Service is the emulated STS.
type Service struct {
	o    Options
	path string

	mu       sync.Mutex
	sessions map[string]*Session // by access key id
}

// New returns a Service, loading Dir/sts.json when it exists.
func New(o Options) (*Service, error) {
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Role == nil {
		o.Role = func(string, string) (Role, bool) { return Role{}, false }
	}
	s := &Service{o: o, sessions: map[string]*Session{}}
	if o.Dir != "" {
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("sts emulator: create state folder: %w", err)
		}
		s.path = filepath.Join(o.Dir, "sts.json")
		if err := statefile.Read(s.path, &s.sessions); err != nil {
			return nil, fmt.Errorf("sts emulator: %w", err)
		}
	}
	return s, nil
}

// Close writes the state a last time.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saveLocked()
}

func (s *Service) saveLocked() error {
	if s.path == "" {
		return nil
	}
	now := s.o.Clock.Now()
	for k, ss := range s.sessions {
		if now.After(ss.Expires) {
			delete(s.sessions, k)
		}
	}
	if err := statefile.Write(s.path, s.sessions, 0o600); err != nil {
		return fmt.Errorf("sts emulator: write state: %w", err)
	}
	return nil
}

var twelveDigits = regexp.MustCompile(`^\d{12}$`)

// Identify names the caller of a request signed with accessKeyID (and token, the
// X-Amz-Security-Token of temporary credentials): the session it belongs to, or the
// account of plain credentials — the key itself when it is 12 digits, home otherwise.
// Temporary credentials the emulator did not issue are ErrInvalid, expired ones
// ErrExpired.
func (s *Service) Identify(accessKeyID, token, home string) (Caller, error) {
	s.mu.Lock()
	ss := s.sessions[accessKeyID]
	s.mu.Unlock()
	switch {
	case ss != nil:
		if token != ss.Token {
			return Caller{}, ErrInvalid
		}
		if !s.o.Clock.Now().Before(ss.Expires) {
			return Caller{}, ErrExpired
		}
		cp := *ss
		return Caller{Account: ss.Account, Session: &cp}, nil
	case token != "":
		return Caller{}, ErrInvalid
	case twelveDigits.MatchString(accessKeyID):
		return Caller{Account: accessKeyID}, nil
	}
	return Caller{Account: home}, nil
}

// AssumeInput is AssumeRole's request.
type AssumeInput struct {
	RoleARN, SessionName, ExternalID string
	// Duration is DurationSeconds (DefaultDuration when zero).
	Duration time.Duration
}

// Error is an STS error, answered with its code and HTTP status.
type Error struct {
	Code    string
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func validation(format string, args ...any) *Error {
	return &Error{Code: "ValidationError", Status: 400, Message: fmt.Sprintf(format, args...)}
}

var (
	sessionNameRE = regexp.MustCompile(`^[\w+=,.@-]{2,64}$`)
	externalIDRE  = regexp.MustCompile(`^[\w+=,.@:/-]+$`)
	roleARNRE     = regexp.MustCompile(`^arn:aws:iam::(\d{12}):role/(?:[\w+=,.@-]+/)*([\w+=,.@-]{1,64})$`)
)

// AssumeRole issues credentials of the role to caller, if the role exists and its trust
// policy admits caller (with in.ExternalID). A refusal is AccessDenied, as AWS words it.
func (s *Service) AssumeRole(caller Caller, in AssumeInput) (Session, error) {
	if in.RoleARN == "" {
		return Session{}, validation("1 validation error detected: Value null at 'roleArn' failed to satisfy constraint: Member must not be null")
	}
	if !sessionNameRE.MatchString(in.SessionName) {
		return Session{}, validation("1 validation error detected: Value '%s' at 'roleSessionName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]* and have length between 2 and 64", in.SessionName)
	}
	if in.ExternalID != "" && (len(in.ExternalID) < 2 || len(in.ExternalID) > 1224 || !externalIDRE.MatchString(in.ExternalID)) {
		return Session{}, validation("1 validation error detected: Value at 'externalId' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@:\\/-]* and have length between 2 and 1224")
	}
	if in.Duration == 0 {
		in.Duration = DefaultDuration
	}
	if in.Duration < MinDuration {
		return Session{}, validation("1 validation error detected: Value '%d' at 'durationSeconds' failed to satisfy constraint: Member must have value greater than or equal to 900", int(in.Duration/time.Second))
	}
	denied := &Error{Code: "AccessDenied", Status: 403,
		Message: fmt.Sprintf("User: %s is not authorized to perform: sts:AssumeRole on resource: %s", caller.ARN(), in.RoleARN)}
	m := roleARNRE.FindStringSubmatch(in.RoleARN)
	if m == nil {
		return Session{}, validation("%s is invalid", in.RoleARN)
	}
	role, ok := s.o.Role(m[1], m[2])
	if !ok || !Admits(role.Trust, caller, in.ExternalID) {
		s.o.Logger.Info("sts: AssumeRole refused", "caller", caller.ARN(), "role", in.RoleARN, "role_exists", ok)
		return Session{}, denied
	}
	maxSession := role.MaxSession
	if maxSession == 0 {
		maxSession = DefaultMaxSession
	}
	if caller.Session != nil {
		// Role chaining: AWS limits a chained session to one hour.
		maxSession = min(maxSession, time.Hour)
	}
	if in.Duration > maxSession {
		return Session{}, validation("The requested DurationSeconds exceeds the MaxSessionDuration set for this role.")
	}
	ss := Session{
		AccessKeyID: "ASIA" + random(16, upperAlnum), SecretAccessKey: random(40, alnum), Token: "FwoGZXIvYXdzE" + random(140, alnum),
		Account: role.Account, RoleARN: role.ARN, RoleID: role.ID, Name: in.SessionName,
		Expires: s.o.Clock.Now().UTC().Truncate(time.Second).Add(in.Duration),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[ss.AccessKeyID] = &ss
	if err := s.saveLocked(); err != nil {
		s.o.Logger.Error("sts: state not saved", "path", s.path, "err", err)
	}
	return ss, nil
}

const (
	upperAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	alnum      = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

func random(n int, from string) string {
	var b strings.Builder
	for range n {
		i, _ := rand.Int(rand.Reader, big.NewInt(int64(len(from))))
		b.WriteByte(from[i.Int64()])
	}
	return b.String()
}

func lastSegment(s string) string { return s[strings.LastIndexAny(s, "/:")+1:] }

type callerKey struct{}

// WithCaller returns ctx carrying the caller, which the emulator's router identified.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller WithCaller stored in ctx.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}
