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
	"sort"
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

// CreateInput is CreateSecret's request.
type CreateInput struct {
	Name, Description, KmsKeyId, ClientRequestToken string
	SecretString                                    *string
	SecretBinary                                    []byte
	Tags                                            []Tag
	// OwningService marks a secret another service manages (RDS's master user secrets).
	OwningService string `json:"-"`
}

// CreateOutput is CreateSecret's answer.
type CreateOutput struct {
	ARN, Name string
	VersionId string `json:",omitempty"`
}

// Create is CreateSecret.
func (s *Service) Create(in CreateInput) (*CreateOutput, error) {
	if !nameRE.MatchString(in.Name) {
		return nil, &Error{"ValidationException", "Invalid name. Must be a valid name containing alphanumeric characters, or any of the following: -/_+=.@!"}
	}
	v := Value{String: in.SecretString, Binary: in.SecretBinary}
	if err := v.check(); err != nil {
		return nil, err
	}
	if in.ClientRequestToken != "" && !tokenRE.MatchString(in.ClientRequestToken) {
		return nil, invalidParameter("ClientRequestToken must be 32 to 64 letters, digits and hyphens.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Clock.Now()
	s.expireLocked(now)
	for _, x := range s.secrets {
		if x.Name != in.Name {
			continue
		}
		if !x.Deleted.IsZero() {
			return nil, invalidRequest("You can't create this secret because a secret with this name is already scheduled for deletion.")
		}
		// A retry with the same token gets the same answer.
		if ver, ok := x.Versions[in.ClientRequestToken]; ok && in.ClientRequestToken != "" && s.sameValue(ver, v) {
			return &CreateOutput{ARN: x.ARN, Name: x.Name, VersionId: ver.ID}, nil
		}
		return nil, &Error{"ResourceExistsException", fmt.Sprintf("The operation failed because the secret %s already exists.", in.Name)}
	}
	x := &secret{ARN: fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s-%s", s.opts.Region, s.opts.AccountID, in.Name, suffix()),
		Name: in.Name, Description: in.Description, KmsKeyID: in.KmsKeyId, Created: now, Changed: now,
		Tags: slices.Clone(in.Tags), OwningService: in.OwningService, Versions: map[string]*version{}}
	out := &CreateOutput{ARN: x.ARN, Name: x.Name}
	if !v.empty() {
		out.VersionId = s.addVersionLocked(x, v, orDefault(in.ClientRequestToken, newID()), []string{Current}, now).ID
	}
	s.secrets = append(s.secrets, x)
	s.state.Persist(s.secrets)
	return out, nil
}

func (s *Service) sameValue(ver *version, v Value) bool {
	old, err := s.unseal(ver)
	if err != nil {
		return false
	}
	if v.Binary != nil || old.Binary != nil {
		return string(v.Binary) == string(old.Binary) && v.Binary != nil && old.Binary != nil
	}
	return v.String != nil && old.String != nil && *v.String == *old.String
}

// addVersionLocked adds a version holding stages, taking each stage from the version that
// had it; a version that loses AWSCURRENT to it becomes AWSPREVIOUS.
func (s *Service) addVersionLocked(x *secret, v Value, id string, stages []string, now time.Time) *version {
	ver := s.seal(v)
	ver.ID, ver.Created, ver.Seq = id, now, len(x.Versions)+1
	for _, o := range x.Versions {
		ver.Seq = max(ver.Seq, o.Seq+1)
	}
	x.Versions[id] = ver
	for _, st := range stages {
		s.moveStageLocked(x, st, id)
	}
	x.Changed = now
	return ver
}

// moveStageLocked attaches stage to version id, detaching it from the version that had it;
// moving AWSCURRENT labels the version that had it AWSPREVIOUS.
func (s *Service) moveStageLocked(x *secret, stage, id string) {
	from := ""
	for vid, v := range x.Versions {
		if vid != id && slices.Contains(v.Stages, stage) {
			v.Stages = slices.DeleteFunc(v.Stages, func(st string) bool { return st == stage })
			from = vid
		}
	}
	if to := x.Versions[id]; to != nil && !slices.Contains(to.Stages, stage) {
		to.Stages = append(to.Stages, stage)
	}
	if stage == Current && from != "" {
		s.moveStageLocked(x, Previous, from)
	}
}

// PutInput is PutSecretValue's request.
type PutInput struct {
	SecretId, ClientRequestToken string
	SecretString                 *string
	SecretBinary                 []byte
	VersionStages                []string
}

// PutOutput is PutSecretValue's answer.
type PutOutput struct {
	ARN, Name, VersionId string
	VersionStages        []string
}

// Put is PutSecretValue: a new version, AWSCURRENT unless other stages are given.
func (s *Service) Put(in PutInput) (*PutOutput, error) {
	v := Value{String: in.SecretString, Binary: in.SecretBinary}
	if err := v.check(); err != nil {
		return nil, err
	}
	if v.empty() {
		return nil, invalidRequest("You must provide either SecretString or SecretBinary.")
	}
	if in.ClientRequestToken != "" && !tokenRE.MatchString(in.ClientRequestToken) {
		return nil, invalidParameter("ClientRequestToken must be 32 to 64 letters, digits and hyphens.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.liveLocked(in.SecretId)
	if err != nil {
		return nil, err
	}
	stages := in.VersionStages
	if len(stages) == 0 {
		stages = []string{Current}
	}
	if ver, ok := x.Versions[in.ClientRequestToken]; ok {
		if !s.sameValue(ver, v) {
			return nil, &Error{"ResourceExistsException", "You can't modify an existing version, you can only create a new version."}
		}
		return &PutOutput{ARN: x.ARN, Name: x.Name, VersionId: ver.ID, VersionStages: slices.Clone(ver.Stages)}, nil
	}
	ver := s.addVersionLocked(x, v, orDefault(in.ClientRequestToken, newID()), stages, s.opts.Clock.Now())
	s.state.Persist(s.secrets)
	return &PutOutput{ARN: x.ARN, Name: x.Name, VersionId: ver.ID, VersionStages: slices.Clone(ver.Stages)}, nil
}

// GetInput is GetSecretValue's request.
type GetInput struct {
	SecretId, VersionId, VersionStage string
}

// GetOutput is GetSecretValue's answer.
type GetOutput struct {
	ARN, Name, VersionId string
	SecretString         *string `json:",omitempty"`
	SecretBinary         []byte  `json:",omitempty"`
	VersionStages        []string
	CreatedDate          Time
}

// Get is GetSecretValue: the version VersionId, or the one labelled VersionStage
// (AWSCURRENT by default).
func (s *Service) Get(in GetInput) (*GetOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.liveLocked(in.SecretId)
	if err != nil {
		return nil, err
	}
	var ver *version
	switch {
	case in.VersionId != "":
		ver = x.Versions[in.VersionId]
		if ver == nil || in.VersionStage != "" && !slices.Contains(ver.Stages, in.VersionStage) {
			return nil, &Error{"ResourceNotFoundException", "Secrets Manager can't find the specified secret value for VersionId: " + in.VersionId}
		}
	default:
		stage := orDefault(in.VersionStage, Current)
		for _, v := range x.Versions {
			if slices.Contains(v.Stages, stage) {
				ver = v
			}
		}
		if ver == nil {
			return nil, &Error{"ResourceNotFoundException", "Secrets Manager can't find the specified secret value for staging label: " + stage}
		}
	}
	val, err := s.unseal(ver)
	if err != nil {
		return nil, err
	}
	today := s.opts.Clock.Now().UTC().Truncate(24 * time.Hour)
	if !x.Accessed.Equal(today) || !ver.Accessed.Equal(today) {
		x.Accessed, ver.Accessed = today, today
		s.state.Persist(s.secrets)
	}
	return &GetOutput{ARN: x.ARN, Name: x.Name, VersionId: ver.ID, SecretString: val.String, SecretBinary: val.Binary,
		VersionStages: slices.Clone(ver.Stages), CreatedDate: Time(ver.Created)}, nil
}

// UpdateInput is UpdateSecret's request.
type UpdateInput struct {
	SecretId, ClientRequestToken string
	Description, KmsKeyId        *string
	SecretString                 *string
	SecretBinary                 []byte
}

// UpdateOutput is UpdateSecret's answer.
type UpdateOutput struct {
	ARN, Name string
	VersionId string `json:",omitempty"`
}

// Update is UpdateSecret: description and key in place, a new AWSCURRENT version when a
// value is given.
func (s *Service) Update(in UpdateInput) (*UpdateOutput, error) {
	v := Value{String: in.SecretString, Binary: in.SecretBinary}
	if err := v.check(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.liveLocked(in.SecretId)
	if err != nil {
		return nil, err
	}
	now := s.opts.Clock.Now()
	if in.Description != nil {
		x.Description, x.Changed = *in.Description, now
	}
	if in.KmsKeyId != nil {
		x.KmsKeyID, x.Changed = *in.KmsKeyId, now
	}
	out := &UpdateOutput{ARN: x.ARN, Name: x.Name}
	if !v.empty() {
		if ver, ok := x.Versions[in.ClientRequestToken]; ok {
			if !s.sameValue(ver, v) {
				return nil, &Error{"ResourceExistsException", "You can't modify an existing version, you can only create a new version."}
			}
			out.VersionId = ver.ID
		} else {
			out.VersionId = s.addVersionLocked(x, v, orDefault(in.ClientRequestToken, newID()), []string{Current}, now).ID
		}
	}
	s.state.Persist(s.secrets)
	return out, nil
}

// DeleteInput is DeleteSecret's request.
type DeleteInput struct {
	SecretId                   string
	RecoveryWindowInDays       *int64
	ForceDeleteWithoutRecovery *bool
}

// DeleteOutput is DeleteSecret's answer.
type DeleteOutput struct {
	ARN, Name    string
	DeletionDate Time
}

// Delete is DeleteSecret: the secret is gone after its recovery window (7 to 30 days, 30
// by default) on the emulator's clock, or at once with ForceDeleteWithoutRecovery;
// RestoreSecret brings it back meanwhile.
func (s *Service) Delete(in DeleteInput) (*DeleteOutput, error) {
	force := in.ForceDeleteWithoutRecovery != nil && *in.ForceDeleteWithoutRecovery
	if force && in.RecoveryWindowInDays != nil {
		return nil, invalidParameter("You can't use ForceDeleteWithoutRecovery in conjunction with RecoveryWindowInDays.")
	}
	days := int64(30)
	if in.RecoveryWindowInDays != nil {
		days = *in.RecoveryWindowInDays
		if days < 7 || days > 30 {
			return nil, invalidParameter("The RecoveryWindowInDays value must be between 7 and 30 days (inclusive).")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.findLocked(in.SecretId)
	if err != nil {
		return nil, err
	}
	now := s.opts.Clock.Now()
	if !x.Deleted.IsZero() && !force {
		return nil, invalidRequest("You can't perform this operation on the secret because it was already scheduled for deletion.")
	}
	out := &DeleteOutput{ARN: x.ARN, Name: x.Name, DeletionDate: Time(now)}
	if force {
		s.secrets = slices.DeleteFunc(s.secrets, func(y *secret) bool { return y == x })
	} else {
		x.Deleted, x.DeleteAt = now, now.Add(time.Duration(days)*24*time.Hour)
		out.DeletionDate = Time(x.DeleteAt)
	}
	s.state.Persist(s.secrets)
	return out, nil
}

// RestoreOutput is RestoreSecret's answer.
type RestoreOutput struct{ ARN, Name string }

// Restore is RestoreSecret: a secret scheduled for deletion is kept after all.
func (s *Service) Restore(id string) (*RestoreOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.findLocked(id)
	if err != nil {
		return nil, err
	}
	x.Deleted, x.DeleteAt = time.Time{}, time.Time{}
	s.state.Persist(s.secrets)
	return &RestoreOutput{ARN: x.ARN, Name: x.Name}, nil
}

// Description is DescribeSecret's answer and a ListSecrets entry.
type Description struct {
	ARN, Name              string
	Description            string `json:",omitempty"`
	KmsKeyId               string `json:",omitempty"`
	RotationEnabled        bool
	LastChangedDate        Time
	LastAccessedDate       *Time `json:",omitempty"`
	DeletedDate            *Time `json:",omitempty"`
	Tags                   []Tag
	VersionIdsToStages     map[string][]string `json:",omitempty"`
	SecretVersionsToStages map[string][]string `json:",omitempty"`
	CreatedDate            Time
	OwningService          string `json:",omitempty"`
}

func describe(x *secret) Description {
	d := Description{ARN: x.ARN, Name: x.Name, Description: x.Description, KmsKeyId: x.KmsKeyID, LastChangedDate: Time(x.Changed),
		Tags: orEmpty(slices.Clone(x.Tags)), CreatedDate: Time(x.Created), OwningService: x.OwningService, VersionIdsToStages: map[string][]string{}}
	if !x.Accessed.IsZero() {
		t := Time(x.Accessed)
		d.LastAccessedDate = &t
	}
	if !x.Deleted.IsZero() {
		t := Time(x.Deleted)
		d.DeletedDate = &t
	}
	for id, v := range x.Versions {
		if len(v.Stages) > 0 {
			d.VersionIdsToStages[id] = slices.Clone(v.Stages)
		}
	}
	return d
}

// Describe is DescribeSecret.
func (s *Service) Describe(id string) (*Description, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.findLocked(id)
	if err != nil {
		return nil, err
	}
	d := describe(x)
	return &d, nil
}

// Filter is a ListSecrets filter: a key (name, description, tag-key, tag-value,
// owning-service, primary-region or all) and values, each a prefix, or a prefix not to
// have when it starts with "!".
type Filter struct {
	Key    string
	Values []string
}

func (f Filter) matches(x *secret, region string) bool {
	var fields []string
	switch f.Key {
	case "name":
		fields = []string{x.Name}
	case "description":
		fields = []string{x.Description}
	case "tag-key":
		for _, t := range x.Tags {
			fields = append(fields, t.Key)
		}
	case "tag-value":
		for _, t := range x.Tags {
			fields = append(fields, t.Value)
		}
	case "owning-service":
		fields = []string{x.OwningService}
	case "primary-region":
		fields = []string{region}
	case "all":
		fields = []string{x.Name, x.Description, x.OwningService}
		for _, t := range x.Tags {
			fields = append(fields, t.Key, t.Value)
		}
	}
	for _, v := range f.Values {
		neg := strings.HasPrefix(v, "!")
		v = strings.TrimPrefix(v, "!")
		has := false
		for _, field := range fields {
			// Secrets Manager matches names by prefix, case-sensitively, and the other
			// fields by prefix without regard to case.
			if f.Key == "name" && strings.HasPrefix(field, v) || f.Key != "name" && strings.HasPrefix(strings.ToLower(field), strings.ToLower(v)) {
				has = true
			}
		}
		if has != neg {
			return true
		}
	}
	return false
}

var filterKeys = []string{"description", "name", "tag-key", "tag-value", "primary-region", "owning-service", "all"}

// ListInput is ListSecrets' request.
type ListInput struct {
	MaxResults             int
	NextToken              string
	Filters                []Filter
	SortOrder              string
	IncludePlannedDeletion bool
}

// ListOutput is ListSecrets' answer.
type ListOutput struct {
	SecretList []Description
	NextToken  string `json:",omitempty"`
}

// List is ListSecrets: the secrets every filter matches, by creation date (SortOrder asc
// or desc, desc by default), without those scheduled for deletion unless asked, a page of
// at most MaxResults (1 to 100, default 100) after NextToken.
func (s *Service) List(in ListInput) (*ListOutput, error) {
	for _, f := range in.Filters {
		if !slices.Contains(filterKeys, f.Key) {
			return nil, &Error{"ValidationException", fmt.Sprintf("1 validation error detected: Value '%s' at 'filters.1.member.key' failed to satisfy constraint: Member must satisfy enum value set: [%s]", f.Key, strings.Join(filterKeys, ", "))}
		}
	}
	max := in.MaxResults
	if max == 0 {
		max = 100
	}
	if max < 1 || max > 100 {
		return nil, invalidParameter("MaxResults must be between 1 and 100.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(s.opts.Clock.Now())
	var all []*secret
	for _, x := range s.secrets {
		if !x.Deleted.IsZero() && !in.IncludePlannedDeletion {
			continue
		}
		keep := true
		for _, f := range in.Filters {
			keep = keep && f.matches(x, s.opts.Region)
		}
		if keep {
			all = append(all, x)
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if in.SortOrder == "asc" {
			return all[i].Created.Before(all[j].Created)
		}
		return all[j].Created.Before(all[i].Created)
	})
	start, err := pageStart(in.NextToken, len(all))
	if err != nil {
		return nil, err
	}
	out := &ListOutput{SecretList: []Description{}}
	for _, x := range all[start:min(start+max, len(all))] {
		d := describe(x)
		d.SecretVersionsToStages, d.VersionIdsToStages = d.VersionIdsToStages, nil
		out.SecretList = append(out.SecretList, d)
	}
	if start+max < len(all) {
		out.NextToken = pageToken(start + max)
	}
	return out, nil
}

// VersionEntry is a ListSecretVersionIds entry.
type VersionEntry struct {
	VersionId        string
	VersionStages    []string
	CreatedDate      Time
	LastAccessedDate *Time `json:",omitempty"`
}

// VersionsOutput is ListSecretVersionIds' answer.
type VersionsOutput struct {
	ARN, Name string
	Versions  []VersionEntry
	NextToken string `json:",omitempty"`
}

// Versions is ListSecretVersionIds: the versions with a staging label, oldest first (all
// of them with includeDeprecated), a page of at most max (1 to 100) after token.
func (s *Service) Versions(id string, includeDeprecated bool, max int, token string) (*VersionsOutput, error) {
	if max == 0 {
		max = 100
	}
	if max < 1 || max > 100 {
		return nil, invalidParameter("MaxResults must be between 1 and 100.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.findLocked(id)
	if err != nil {
		return nil, err
	}
	var vs []*version
	for _, v := range x.Versions {
		if len(v.Stages) > 0 || includeDeprecated {
			vs = append(vs, v)
		}
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].Seq < vs[j].Seq })
	start, err := pageStart(token, len(vs))
	if err != nil {
		return nil, err
	}
	out := &VersionsOutput{ARN: x.ARN, Name: x.Name, Versions: []VersionEntry{}}
	for _, v := range vs[start:min(start+max, len(vs))] {
		e := VersionEntry{VersionId: v.ID, VersionStages: orEmpty(slices.Clone(v.Stages)), CreatedDate: Time(v.Created)}
		if !v.Accessed.IsZero() {
			t := Time(v.Accessed)
			e.LastAccessedDate = &t
		}
		out.Versions = append(out.Versions, e)
	}
	if start+max < len(vs) {
		out.NextToken = pageToken(start + max)
	}
	return out, nil
}

// MoveStage is UpdateSecretVersionStage: stage moves to moveTo (when given) from
// removeFrom (which must hold it, when another version does); moving AWSCURRENT makes the
// version that had it AWSPREVIOUS.
func (s *Service) MoveStage(id, stage, moveTo, removeFrom string) (*RestoreOutput, error) {
	if stage == "" {
		return nil, invalidParameter("You must provide a VersionStage.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.liveLocked(id)
	if err != nil {
		return nil, err
	}
	for _, vid := range []string{moveTo, removeFrom} {
		if vid != "" && x.Versions[vid] == nil {
			return nil, invalidParameter("Secrets Manager can't find the specified secret version %s.", vid)
		}
	}
	holder := ""
	for vid, v := range x.Versions {
		if slices.Contains(v.Stages, stage) {
			holder = vid
		}
	}
	if holder != "" && holder != moveTo && holder != removeFrom {
		return nil, invalidParameter("The parameter RemoveFromVersionId can't be empty. Staging label %s is currently attached to version %s, so you must explicitly reference that version in RemoveFromVersionId.", stage, holder)
	}
	if moveTo != "" {
		s.moveStageLocked(x, stage, moveTo)
	} else if removeFrom != "" {
		v := x.Versions[removeFrom]
		v.Stages = slices.DeleteFunc(v.Stages, func(st string) bool { return st == stage })
	}
	x.Changed = s.opts.Clock.Now()
	s.state.Persist(s.secrets)
	return &RestoreOutput{ARN: x.ARN, Name: x.Name}, nil
}

// Tag is TagResource (add) and UntagResource (remove).
func (s *Service) Tag(id string, add []Tag, remove []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.findLocked(id)
	if err != nil {
		return err
	}
	for _, t := range add {
		i := slices.IndexFunc(x.Tags, func(o Tag) bool { return o.Key == t.Key })
		if i >= 0 {
			x.Tags[i].Value = t.Value
		} else {
			x.Tags = append(x.Tags, t)
		}
	}
	x.Tags = slices.DeleteFunc(x.Tags, func(t Tag) bool { return slices.Contains(remove, t.Key) })
	s.state.Persist(s.secrets)
	return nil
}

// SetPolicy stores a secret's resource policy ("" deletes it); the emulator does not
// enforce it.
func (s *Service) SetPolicy(id, policy string) (*RestoreOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.liveLocked(id)
	if err != nil {
		return nil, err
	}
	x.Policy = policy
	s.state.Persist(s.secrets)
	return &RestoreOutput{ARN: x.ARN, Name: x.Name}, nil
}

// Policy returns a secret's resource policy.
func (s *Service) Policy(id string) (arn, name, policy string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, err := s.findLocked(id)
	if err != nil {
		return "", "", "", err
	}
	return x.ARN, x.Name, x.Policy, nil
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
