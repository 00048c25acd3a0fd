// Package kmslocal emulates the part of AWS KMS cairn uses (AWS JSON 1.1, the protocol the
// SDKs and the AWS CLI speak): HMAC keys, made by CreateKey or by an AWS::KMS::Key of a
// stack, and GenerateMac and VerifyMac with them; DescribeKey, ListKeys, EnableKey,
// DisableKey, ScheduleKeyDeletion and CancelKeyDeletion. Each key's secret material is
// random, kept under the emulator's --dir (a file only its user may read) so seals made
// with it stay verifiable after a restart, and never leaves the service, as in KMS. No key
// policy is evaluated (the emulator has no IAM). It is a test double of AWS, never a
// production path.
package kmslocal

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/internal/awslocal/statefile"
	"github.com/cairn-dev/cairn/internal/clock"
)

// Options configures a Service.
type Options struct {
	Region, AccountID string // defaults us-east-1, 000000000000
	Clock             clock.Clock
	// Dir persists the keys, their material included, in Dir/kms.json (mode 0600); ""
	// keeps them in memory.
	Dir    string
	Logger *slog.Logger
}

// Service is one emulated KMS of an account and region.
type Service struct {
	opts Options

	mu      sync.Mutex
	keys    map[string]*Key
	aliases map[string]*alias // by alias/NAME
}

// Key is one KMS key.
type Key struct {
	ID          string    `json:"id"`
	ARN         string    `json:"arn"`
	Spec        string    `json:"spec"`  // HMAC_256, ..., SYMMETRIC_DEFAULT
	Usage       string    `json:"usage"` // GENERATE_VERIFY_MAC, ENCRYPT_DECRYPT
	State       string    `json:"state"` // Enabled, Disabled, PendingDeletion
	Description string    `json:"description,omitempty"`
	Policy      string    `json:"policy,omitempty"`
	Created     time.Time `json:"created"`
	DeletionAt  time.Time `json:"deletionAt,omitzero"`
	// Material is the key's secret: never in an answer.
	Material []byte `json:"material"`
}

// Error is a KMS API error.
type Error struct {
	Code, Message string
	Status        int
}

func (e *Error) Error() string { return "kms " + e.Code + ": " + e.Message }

// JSONFault is the error as the protocol answers it (awsjson.Fault).
func (e *Error) JSONFault() (code, message string, status int) { return e.Code, e.Message, e.Status }

func validation(format string, args ...any) *Error {
	return &Error{Code: "ValidationException", Message: fmt.Sprintf(format, args...), Status: 400}
}

// macSpecs are the HMAC key specs with their MAC algorithm and hash.
var macSpecs = map[string]struct {
	alg  string
	hash func() hash.Hash
	size int
}{
	"HMAC_224": {"HMAC_SHA_224", sha256.New224, 28},
	"HMAC_256": {"HMAC_SHA_256", sha256.New, 32},
	"HMAC_384": {"HMAC_SHA_384", sha512.New384, 48},
	"HMAC_512": {"HMAC_SHA_512", sha512.New, 64},
}

// New returns a Service, loading Dir's keys when there are some.
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
	s := &Service{opts: o, keys: map[string]*Key{}, aliases: map[string]*alias{}}
	if o.Dir != "" {
		if err := statefile.Read(s.path(), &s.keys); err != nil {
			return nil, fmt.Errorf("kms emulator: %w", err)
		}
		if err := statefile.Read(s.aliasPath(), &s.aliases); err != nil {
			return nil, fmt.Errorf("kms emulator: %w", err)
		}
	}
	return s, nil
}

func (s *Service) path() string { return filepath.Join(s.opts.Dir, "kms.json") }

// Close releases nothing: state is written as it changes.
func (s *Service) Close() {}

// save writes the keys; called with s.mu held.
func (s *Service) save() error {
	if s.opts.Dir == "" {
		return nil
	}
	return statefile.Write(s.path(), s.keys, 0o600)
}

// CreateInput is CreateKey's request.
type CreateInput struct {
	KeySpec, KeyUsage, Description, Policy string
}

// Create makes a key with random material and returns it (its material left out).
func (s *Service) Create(in CreateInput) (Key, error) {
	spec, usage := in.KeySpec, in.KeyUsage
	if spec == "" {
		spec = "SYMMETRIC_DEFAULT"
	}
	_, isMAC := macSpecs[spec]
	switch {
	case usage == "" && isMAC:
		return Key{}, validation("You must specify a KeyUsage value for an HMAC KMS key: GENERATE_VERIFY_MAC.")
	case usage == "":
		usage = "ENCRYPT_DECRYPT"
	case isMAC && usage != "GENERATE_VERIFY_MAC", !isMAC && usage == "GENERATE_VERIFY_MAC":
		return Key{}, validation("KeyUsage %s is not compatible with KeySpec %s.", usage, spec)
	case !isMAC && spec != "SYMMETRIC_DEFAULT":
		return Key{}, validation("KeySpec %s is not served by the local emulator (served: SYMMETRIC_DEFAULT, HMAC_224, HMAC_256, HMAC_384, HMAC_512).", spec)
	}
	size := 32
	if m, ok := macSpecs[spec]; ok {
		size = m.size
	}
	material := make([]byte, size)
	if _, err := rand.Read(material); err != nil {
		return Key{}, err
	}
	id := uuid()
	k := &Key{ID: id, ARN: fmt.Sprintf("arn:aws:kms:%s:%s:key/%s", s.opts.Region, s.opts.AccountID, id), Spec: spec, Usage: usage,
		State: "Enabled", Description: in.Description, Policy: in.Policy, Created: s.opts.Clock.Now().UTC(), Material: material}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[id] = k
	if err := s.save(); err != nil {
		delete(s.keys, id)
		return Key{}, err
	}
	s.opts.Logger.Info("kms key created", "key", k.ARN, "spec", spec)
	return public(k), nil
}

func public(k *Key) Key {
	c := *k
	c.Material = nil
	return c
}

// find resolves a key id or ARN; called with s.mu held.
func (s *Service) find(keyID string) (*Key, error) {
	if keyID == "" {
		return nil, validation("KeyId is required.")
	}
	if name, ok := s.aliasName(keyID); ok {
		a := s.aliases[name]
		if a == nil {
			return nil, s.aliasNotFound(name)
		}
		keyID = a.KeyID
	}
	id := keyID
	if strings.HasPrefix(keyID, "arn:") {
		prefix := fmt.Sprintf("arn:aws:kms:%s:%s:key/", s.opts.Region, s.opts.AccountID)
		var ok bool
		if id, ok = strings.CutPrefix(keyID, prefix); !ok {
			return nil, &Error{Code: "NotFoundException", Message: fmt.Sprintf("Key '%s' does not exist", keyID), Status: 400}
		}
	}
	k := s.keys[id]
	if k == nil {
		return nil, &Error{Code: "NotFoundException", Message: fmt.Sprintf("Key '%s' does not exist", fmt.Sprintf("arn:aws:kms:%s:%s:key/%s", s.opts.Region, s.opts.AccountID, id)), Status: 400}
	}
	return k, nil
}

// Describe returns a key (its material left out).
func (s *Service) Describe(keyID string) (Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, err := s.find(keyID)
	if err != nil {
		return Key{}, err
	}
	return public(k), nil
}

// List returns every key, by id.
func (s *Service) List() []Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Key
	for _, k := range s.keys {
		out = append(out, public(k))
	}
	slices.SortFunc(out, func(a, b Key) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// SetState enables or disables a key, schedules its deletion (PendingDeletion) or
// cancels it (Disabled, as KMS leaves it).
func (s *Service) SetState(keyID, state string) (Key, error) {
	return s.setState(keyID, state, 30*24*time.Hour)
}

// ScheduleDeletion schedules a key's deletion after a window of 7 to 30 days (nil: 30),
// and returns the key and the window in days.
func (s *Service) ScheduleDeletion(keyID string, days *int) (Key, int, error) {
	window, n, err := pendingWindow(days)
	if err != nil {
		return Key{}, 0, err
	}
	k, err := s.setState(keyID, "PendingDeletion", window)
	return k, n, err
}

func (s *Service) setState(keyID, state string, window time.Duration) (Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, err := s.find(keyID)
	if err != nil {
		return Key{}, err
	}
	pending := k.State == "PendingDeletion"
	switch state {
	case "PendingDeletion":
		if pending {
			return Key{}, invalidState(k)
		}
		k.State, k.DeletionAt = state, s.opts.Clock.Now().UTC().Add(window)
	case "Cancel":
		if !pending {
			return Key{}, invalidState(k)
		}
		k.State, k.DeletionAt = "Disabled", time.Time{}
	default: // Enabled, Disabled
		if pending {
			return Key{}, invalidState(k)
		}
		k.State = state
	}
	return public(k), s.save()
}

func invalidState(k *Key) *Error {
	return &Error{Code: "KMSInvalidStateException", Message: fmt.Sprintf("%s is %s", k.ARN, pendingWord(k.State)), Status: 400}
}

func pendingWord(state string) string {
	if state == "PendingDeletion" {
		return "pending deletion."
	}
	return state + "."
}

// enabled returns the key keyID names if it may be used: not disabled, not pending
// deletion; called with s.mu held.
func (s *Service) enabled(keyID string) (*Key, error) {
	k, err := s.find(keyID)
	if err != nil {
		return nil, err
	}
	switch k.State {
	case "Disabled":
		return nil, &Error{Code: "DisabledException", Message: k.ARN + " is disabled.", Status: 400}
	case "PendingDeletion":
		return nil, invalidState(k)
	}
	return k, nil
}

// usable returns k if it may make MACs with algorithm alg; called with s.mu held.
func (s *Service) usable(keyID, alg string) (*Key, hash.Hash, error) {
	k, err := s.enabled(keyID)
	if err != nil {
		return nil, nil, err
	}
	m, ok := macSpecs[k.Spec]
	if !ok || k.Usage != "GENERATE_VERIFY_MAC" {
		return nil, nil, &Error{Code: "InvalidKeyUsageException", Message: fmt.Sprintf("%s key usage is %s which is not valid for GenerateMac.", k.ARN, k.Usage), Status: 400}
	}
	if alg != m.alg {
		return nil, nil, &Error{Code: "InvalidKeyUsageException", Message: fmt.Sprintf("Algorithm %s is incompatible with key spec %s.", alg, k.Spec), Status: 400}
	}
	return k, hmac.New(m.hash, k.Material), nil
}

func checkMessage(msg []byte) error {
	if len(msg) < 1 || len(msg) > 4096 {
		return validation("1 validation error detected: Value at 'message' failed to satisfy constraint: Member must have length between 1 and 4096")
	}
	return nil
}

// GenerateMac returns the MAC of msg under the key, and the key's ARN.
func (s *Service) GenerateMac(keyID, alg string, msg []byte) (mac []byte, arn string, err error) {
	if err := checkMessage(msg); err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k, h, err := s.usable(keyID, alg)
	if err != nil {
		return nil, "", err
	}
	h.Write(msg)
	return h.Sum(nil), k.ARN, nil
}

// VerifyMac checks mac against msg under the key; a MAC that does not match is
// KMSInvalidMacException, as in KMS.
func (s *Service) VerifyMac(keyID, alg string, msg, mac []byte) (arn string, err error) {
	if err := checkMessage(msg); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k, h, err := s.usable(keyID, alg)
	if err != nil {
		return "", err
	}
	h.Write(msg)
	if !hmac.Equal(h.Sum(nil), mac) {
		return "", &Error{Code: "KMSInvalidMacException", Message: "The MAC is not valid for the specified message and key.", Status: 400}
	}
	return k.ARN, nil
}

func uuid() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
