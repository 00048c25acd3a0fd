// Package secretslocal emulates AWS Secrets Manager (AWS JSON 1.1, the protocol the SDKs
// and the AWS CLI speak) for cairn's local mode: secrets with versions and staging labels
// (AWSCURRENT, AWSPREVIOUS, AWSPENDING and the caller's own), deletion with a recovery
// window on the emulator's clock and restoration, listing with filters, tags, resource
// policies, random passwords, and the Go calls CloudFormation's emulator makes (the
// AWS::SecretsManager::Secret resource, RDS managed master secrets, secretsmanager dynamic
// references). Secret values are kept encrypted (see atrest), in memory and on disk. It is
// a test double of AWS, never a production path.
package secretslocal

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/internal/awslocal/atrest"
	"github.com/cairn-dev/cairn/internal/awslocal/statefile"
	"github.com/cairn-dev/cairn/internal/clock"
)

// The staging labels Secrets Manager itself moves.
const (
	Current  = "AWSCURRENT"
	Previous = "AWSPREVIOUS"
	Pending  = "AWSPENDING"
)

// Options configures a Service.
type Options struct {
	Region, AccountID string // defaults us-east-1, 000000000000
	// Clock dates versions and ends recovery windows (default clock.Real).
	Clock clock.Clock
	// Dir persists secrets in Dir/secrets.json and their key in Dir/key; "" keeps both in
	// memory.
	Dir    string
	Logger *slog.Logger
}

// Service is one emulated Secrets Manager (one account in one region).
type Service struct {
	opts Options
	// state is where the service keeps its state under --dir.
	state statefile.File
	key   *atrest.Key

	mu      sync.Mutex
	secrets []*secret // in creation order
}

// secret is one secret with its versions; values are sealed.
type secret struct {
	ARN           string              `json:"arn"`
	Name          string              `json:"name"`
	Description   string              `json:"description,omitempty"`
	KmsKeyID      string              `json:"kmsKeyId,omitempty"`
	Created       time.Time           `json:"created"`
	Changed       time.Time           `json:"changed"`
	Accessed      time.Time           `json:"accessed,omitzero"`
	Deleted       time.Time           `json:"deleted,omitzero"`  // when DeleteSecret scheduled it
	DeleteAt      time.Time           `json:"deleteAt,omitzero"` // when it is gone
	Tags          []Tag               `json:"tags,omitempty"`
	Policy        string              `json:"policy,omitempty"`
	OwningService string              `json:"owningService,omitempty"`
	Versions      map[string]*version `json:"versions"`
}

// version is one version of a secret's value.
type version struct {
	ID       string    `json:"id"`
	Seq      int       `json:"seq"` // the order versions were made in
	Stages   []string  `json:"stages"`
	Created  time.Time `json:"created"`
	Accessed time.Time `json:"accessed,omitzero"`
	// String and Binary hold the sealed SecretString or SecretBinary; IsBinary says which.
	Sealed   string `json:"sealed"`
	IsBinary bool   `json:"binary,omitempty"`
}

// Tag is a secret's tag.
type Tag struct{ Key, Value string }

// Error is a Secrets Manager API error, in its words.
type Error struct {
	Code, Message string
}

func (e *Error) Error() string { return e.Message }

// JSONFault is the error as the protocol answers it (awsjson.Fault): Secrets Manager
// answers every error of a request with status 400.
func (e *Error) JSONFault() (code, message string, status int) { return e.Code, e.Message, 400 }

func notFound() *Error {
	return &Error{"ResourceNotFoundException", "Secrets Manager can't find the specified secret."}
}

func invalidParameter(format string, args ...any) *Error {
	return &Error{"InvalidParameterException", fmt.Sprintf(format, args...)}
}

func invalidRequest(format string, args ...any) *Error {
	return &Error{"InvalidRequestException", fmt.Sprintf(format, args...)}
}

func markedForDeletion() *Error {
	return invalidRequest("You can't perform this operation on the secret because it was marked for deletion.")
}

// New returns a Service, loading Dir's secrets and key when there are some.
func New(o Options) (*Service, error) {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "000000000000"
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{opts: o}
	var err error
	if s.key, err = atrest.Open(o.Dir); err != nil {
		return nil, fmt.Errorf("secrets manager emulator: %w", err)
	}
	s.state = statefile.File{Dir: o.Dir, Name: "secrets.json", Service: "secrets manager emulator", Perm: 0o600, Logger: o.Logger}
	if err := s.state.Load(&s.secrets); err != nil {
		return nil, err
	}
	return s, nil
}

// Close writes the state a last time.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Save(s.secrets)
}

// expireLocked forgets the secrets whose recovery window has ended.
func (s *Service) expireLocked(now time.Time) {
	before := len(s.secrets)
	s.secrets = slices.DeleteFunc(s.secrets, func(x *secret) bool { return !x.DeleteAt.IsZero() && !now.Before(x.DeleteAt) })
	if len(s.secrets) != before {
		s.state.Persist(s.secrets)
	}
}

// findLocked returns the secret a SecretId names: its name, its ARN, or its ARN without
// the six random characters Secrets Manager appends (a partial ARN).
func (s *Service) findLocked(id string) (*secret, error) {
	s.expireLocked(s.opts.Clock.Now())
	if id == "" {
		return nil, invalidParameter("You must provide a SecretId.")
	}
	for _, x := range s.secrets {
		if x.Name == id || x.ARN == id || strings.HasPrefix(id, "arn:") && len(x.ARN) > 7 && x.ARN[:len(x.ARN)-7] == id {
			return x, nil
		}
	}
	return nil, notFound()
}

// liveLocked is findLocked for operations a secret scheduled for deletion refuses.
func (s *Service) liveLocked(id string) (*secret, error) {
	x, err := s.findLocked(id)
	if err == nil && !x.Deleted.IsZero() {
		return nil, markedForDeletion()
	}
	return x, err
}

// nameRE is what a secret's name may hold.
var nameRE = regexp.MustCompile(`^[a-zA-Z0-9/_+=.@!-]{1,512}$`)

// tokenRE is what a ClientRequestToken (a version id) may be.
var tokenRE = regexp.MustCompile(`^[a-zA-Z0-9-]{32,64}$`)

// suffix returns the six random characters Secrets Manager appends to a secret's ARN.
func suffix() string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 6)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(chars))))
		b[i] = chars[n.Int64()]
	}
	return string(b)
}

// newID returns a random UUID (version 4), as version ids are when no token is given.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Value is a secret's value: a string, or bytes.
type Value struct {
	String *string
	Binary []byte
}

func (v Value) empty() bool { return v.String == nil && v.Binary == nil }

// check refuses a value that is both a string and bytes.
func (v Value) check() error {
	if v.String != nil && v.Binary != nil {
		return invalidParameter("You can't specify both a binary secret value and a string secret value in the same secret.")
	}
	return nil
}

func (s *Service) seal(v Value) *version {
	if v.Binary != nil {
		return &version{Sealed: s.key.Seal(v.Binary), IsBinary: true}
	}
	return &version{Sealed: s.key.Seal([]byte(*v.String))}
}

func (s *Service) unseal(v *version) (Value, error) {
	plain, err := s.key.Unseal(v.Sealed)
	if err != nil {
		return Value{}, fmt.Errorf("secrets manager emulator: %w", err)
	}
	if v.IsBinary {
		return Value{Binary: plain}, nil
	}
	str := string(plain)
	return Value{String: &str}, nil
}

// ARN returns the ARN of the secret an id names, wherever it is in its life.
func (s *Service) ARN(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.findLocked(id)
	if err != nil {
		return "", false
	}
	return x.ARN, true
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func orEmpty[T any](l []T) []T {
	if l == nil {
		return []T{}
	}
	return l
}
