// Package ssmlocal emulates AWS Systems Manager Parameter Store (AWS JSON 1.1, the protocol
// the SDKs and the AWS CLI speak) for cairn's local mode: PutParameter, GetParameter,
// GetParameters, GetParametersByPath, GetParameterHistory and DeleteParameter, with versions, String,
// StringList and SecureString parameters. SecureString values are kept encrypted (AES-GCM
// under a key of the emulator's own, as KMS's alias/aws/ssm would), on disk too, and
// returned in clear only WithDecryption. It is a test double of AWS, never a production
// path.
package ssmlocal

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/internal/awslocal/atrest"
	"github.com/cairn-dev/cairn/internal/awslocal/statefile"
	"github.com/cairn-dev/cairn/internal/clock"
)

// Options configures a Service.
type Options struct {
	Region, AccountID string // defaults us-east-1, 000000000000
	Clock             clock.Clock
	// Dir persists parameters in Dir/ssm.json and the SecureString key in Dir/key; ""
	// keeps both in memory.
	Dir    string
	Logger *slog.Logger
}

// Service is one emulated Parameter Store.
type Service struct {
	opts Options
	// state is where the service keeps its state under --dir.
	state statefile.File
	key   *atrest.Key

	mu     sync.Mutex
	params map[string]*parameter
}

// parameter is one parameter with its current version.
type parameter struct {
	Name           string            `json:"name"`
	Type           string            `json:"type"`
	Value          string            `json:"value"` // base64 ciphertext for SecureString
	Description    string            `json:"description,omitempty"`
	KeyID          string            `json:"keyId,omitempty"`
	AllowedPattern string            `json:"allowedPattern,omitempty"`
	DataType       string            `json:"dataType"`
	Tier           string            `json:"tier"`
	Version        int64             `json:"version"`
	Modified       time.Time         `json:"modified"`
	Tags           map[string]string `json:"tags,omitempty"`
	// History keeps earlier versions' values, for Name:VERSION selectors.
	History map[int64]string `json:"history,omitempty"`
	// Earlier keeps the rest of what earlier versions were, for GetParameterHistory (state
	// written before it existed lacks it: those versions show their value and type only).
	Earlier map[int64]earlier `json:"earlier,omitempty"`
	// Labels maps each label to the version it is attached to.
	Labels map[string]int64 `json:"labels,omitempty"`
}

// earlier is what an earlier version of a parameter was, besides its type and value.
type earlier struct {
	Modified       time.Time `json:"modified"`
	Description    string    `json:"description,omitempty"`
	KeyID          string    `json:"keyId,omitempty"`
	AllowedPattern string    `json:"allowedPattern,omitempty"`
	DataType       string    `json:"dataType,omitempty"`
	Tier           string    `json:"tier,omitempty"`
}

// Error is an SSM API error.
type Error struct {
	Code, Message string
	Status        int
}

func (e *Error) Error() string { return "ssm " + e.Code + ": " + e.Message }

// JSONFault is the error as the protocol answers it (awsjson.Fault).
func (e *Error) JSONFault() (code, message string, status int) { return e.Code, e.Message, e.Status }

func validation(format string, args ...any) *Error {
	return &Error{Code: "ValidationException", Message: fmt.Sprintf(format, args...), Status: 400}
}

func notFound(name string) *Error {
	return &Error{Code: "ParameterNotFound", Message: fmt.Sprintf("Parameter %s not found.", name), Status: 400}
}

// New returns a Service, loading Dir's parameters and key when there are some.
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
	s := &Service{opts: o, params: map[string]*parameter{}}
	var err error
	if s.key, err = atrest.Open(o.Dir); err != nil {
		return nil, fmt.Errorf("ssm emulator: %w", err)
	}
	s.state = statefile.File{Dir: o.Dir, Name: "ssm.json", Service: "ssm emulator", Perm: 0o600, Logger: o.Logger}
	if err := s.state.Load(&s.params); err != nil {
		return nil, err
	}
	return s, nil
}

// Close writes the state a last time.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Save(s.params)
}

func (s *Service) encrypt(plain string) string { return s.key.Seal([]byte(plain)) }

func (s *Service) decrypt(blob string) (string, error) {
	plain, err := s.key.Unseal(blob)
	if err != nil {
		return "", fmt.Errorf("ssm emulator: a SecureString value: %w", err)
	}
	return string(plain), nil
}

// nameRE is the characters SSM allows in parameter names and path segments.
var nameRE = regexp.MustCompile(`^[a-zA-Z0-9_.\-/]+$`)

func checkName(name string) error {
	trimmed := strings.ToLower(strings.TrimPrefix(name, "/"))
	switch {
	case name == "":
		return validation("1 validation error detected: Value null at 'name' failed to satisfy constraint: Member must not be null")
	case len(name) > 2048:
		return validation("1 validation error detected: Value '%s' at 'name' failed to satisfy constraint: Member must have length less than or equal to 2048", name)
	case strings.HasPrefix(trimmed, "aws") || strings.HasPrefix(trimmed, "ssm"):
		return validation(`Parameter name: can't be prefixed with "aws" or "ssm" (case-insensitive).`)
	case !nameRE.MatchString(name), strings.Contains(name, "//"), strings.Count(name, "/") > 0 && !strings.HasPrefix(name, "/"):
		return validation("Parameter name must be a fully qualified name.")
	}
	return nil
}

// Put is PutParameter: it creates a parameter (Type required) or, with overwrite, adds a
// version. It returns the new version.
func (s *Service) Put(in PutInput) (int64, error) {
	if err := checkName(in.Name); err != nil {
		return 0, err
	}
	if in.Value == "" {
		return 0, validation("1 validation error detected: Value '' at 'value' failed to satisfy constraint: Member must have length greater than or equal to 1.")
	}
	if in.Type != "" && in.Type != "String" && in.Type != "StringList" && in.Type != "SecureString" {
		return 0, validation("1 validation error detected: Value '%s' at 'type' failed to satisfy constraint: Member must satisfy enum value set: [SecureString, StringList, String]", in.Type)
	}
	if in.Overwrite && len(in.Tags) > 0 {
		return 0, validation("Invalid request: tags and overwrite can't be used together. To create a parameter with tags, please remove overwrite flag. To update tags for an existing parameter, please use AddTagsToResource or RemoveTagsFromResource.")
	}
	if in.DataType != "" && in.DataType != "text" && in.DataType != "aws:ec2:image" && in.DataType != "aws:ssm:integration" {
		return 0, validation("The following data type is not supported: %s (Data type names are all lowercase.)", in.DataType)
	}
	if in.AllowedPattern != "" {
		re, err := regexp.Compile("^(?:" + in.AllowedPattern + ")$")
		if err != nil {
			return 0, validation("Parameter AllowedPattern %q is not a valid regular expression", in.AllowedPattern)
		}
		if !re.MatchString(in.Value) {
			return 0, validation("Parameter value, cannot be validated against allowedPattern: %s", in.AllowedPattern)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Clock.Now()
	p, exists := s.params[in.Name]
	if exists && !in.Overwrite {
		return 0, &Error{Code: "ParameterAlreadyExists", Message: "The parameter already exists. To overwrite this value, set the overwrite option in the request to true.", Status: 400}
	}
	if !exists {
		if in.Type == "" {
			return 0, validation("A parameter type is required when you create a parameter.")
		}
		p = &parameter{Name: in.Name, DataType: "text", Tier: "Standard", Tags: in.Tags}
		s.params[in.Name] = p
	} else {
		if p.History == nil {
			p.History = map[int64]string{}
		}
		p.History[p.Version] = p.Type + ":" + p.Value
		if p.Earlier == nil {
			p.Earlier = map[int64]earlier{}
		}
		p.Earlier[p.Version] = earlier{Modified: p.Modified, Description: p.Description, KeyID: p.KeyID,
			AllowedPattern: p.AllowedPattern, DataType: p.DataType, Tier: p.Tier}
	}
	if in.Type != "" {
		p.Type = in.Type
	}
	value := in.Value
	if p.Type == "SecureString" {
		value = s.encrypt(value)
		p.KeyID = orDefault(in.KeyID, orDefault(p.KeyID, "alias/aws/ssm"))
	} else {
		p.KeyID = ""
	}
	p.Value, p.Version, p.Modified = value, p.Version+1, now
	if in.Description != "" {
		p.Description = in.Description
	}
	if in.AllowedPattern != "" {
		p.AllowedPattern = in.AllowedPattern
	}
	if in.DataType != "" {
		p.DataType = in.DataType
	}
	if in.Tier != "" && in.Tier != "Intelligent-Tiering" {
		p.Tier = in.Tier
	}
	s.state.Persist(s.params)
	return p.Version, nil
}

// PutInput is PutParameter's request.
type PutInput struct {
	Name, Value, Type, Description, KeyID, AllowedPattern, DataType, Tier string
	Overwrite                                                             bool
	Tags                                                                  map[string]string
}

// Parameter is a parameter as GetParameter answers it.
type Parameter struct {
	Name             string
	Type             string
	Value            string
	Version          int64
	Selector         string `json:",omitempty"`
	LastModifiedDate float64
	ARN              string
	DataType         string
}

// Get is GetParameter: the current version of name, or NAME:VERSION; SecureString values
// are decrypted only when decrypt is set.
func (s *Service) Get(name string, decrypt bool) (Parameter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.getLocked(name, decrypt)
}

func (s *Service) getLocked(name string, decrypt bool) (Parameter, error) {
	base, selector := name, ""
	if i := strings.LastIndexByte(name, ':'); i > 0 {
		base, selector = name[:i], name[i:]
	}
	p, ok := s.params[base]
	if !ok {
		return Parameter{}, notFound(name)
	}
	typ, value, version := p.Type, p.Value, p.Version
	if selector != "" {
		v, err := p.selectVersion(selector[1:])
		if err != nil {
			return Parameter{}, err
		}
		if v != p.Version {
			old, ok := p.History[v]
			if !ok {
				return Parameter{}, &Error{Code: "ParameterVersionNotFound", Message: fmt.Sprintf("Systems Manager could not find version %d of %s. Verify the version and try again.", v, base), Status: 400}
			}
			typ, value, _ = strings.Cut(old, ":")
			version = v
		}
	}
	if typ == "SecureString" && decrypt {
		plain, err := s.decrypt(value)
		if err != nil {
			return Parameter{}, err
		}
		value = plain
	}
	return Parameter{Name: base, Type: typ, Value: value, Version: version, Selector: selector,
		LastModifiedDate: float64(p.Modified.UnixMilli()) / 1000, ARN: s.arn(base), DataType: p.DataType}, nil
}

func (s *Service) arn(name string) string {
	return "arn:aws:ssm:" + s.opts.Region + ":" + s.opts.AccountID + ":parameter/" + strings.TrimPrefix(name, "/")
}

// GetMany is GetParameters: the parameters found, and the names that were not.
func (s *Service) GetMany(names []string, decrypt bool) (found []Parameter, invalid []string, err error) {
	if len(names) == 0 || len(names) > 10 {
		return nil, nil, validation("1 validation error detected: Value at 'names' failed to satisfy constraint: Member must have length less than or equal to 10 and greater than or equal to 1")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		p, err := s.getLocked(n, decrypt)
		var se *Error
		if errors.As(err, &se) && se.Code != "ValidationException" {
			invalid = append(invalid, n)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		found = append(found, p)
	}
	return found, invalid, nil
}

// ByPath is GetParametersByPath: the parameters below path (its direct children unless
// recursive), in name order, one page of at most max (1..10) after the NextToken token.
func (s *Service) ByPath(path string, recursive, decrypt bool, max int, token string) ([]Parameter, string, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, "", validation("The parameter doesn't meet the parameter name requirements. The parameter name must begin with a forward slash \"/\".")
	}
	if max == 0 {
		max = 10
	}
	if max < 1 || max > 10 {
		return nil, "", validation("1 validation error detected: Value '%d' at 'maxResults' failed to satisfy constraint: Member must have value less than or equal to 10", max)
	}
	prefix := strings.TrimSuffix(path, "/") + "/"
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for n := range s.params {
		rest, ok := strings.CutPrefix(n, prefix)
		if !ok || rest == "" || (!recursive && strings.Contains(rest, "/")) {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	start := 0
	if token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil {
			return nil, "", &Error{Code: "InvalidNextToken", Message: "The specified token isn't valid.", Status: 400}
		}
		start = sort.SearchStrings(names, string(b)+"\x00")
	}
	var out []Parameter
	next := ""
	for i := start; i < len(names); i++ {
		if len(out) == max {
			next = base64.RawURLEncoding.EncodeToString([]byte(out[len(out)-1].Name))
			break
		}
		p, err := s.getLocked(names[i], decrypt)
		if err != nil {
			return nil, "", err
		}
		out = append(out, p)
	}
	return out, next, nil
}

// HistoryEntry is one version of a parameter as GetParameterHistory answers it.
type HistoryEntry struct {
	Name             string
	Type             string
	KeyId            string `json:",omitempty"`
	LastModifiedDate float64
	LastModifiedUser string
	Description      string `json:",omitempty"`
	Value            string
	AllowedPattern   string `json:",omitempty"`
	Version          int64
	Labels           []string
	Tier             string
	Policies         []struct{}
	DataType         string
}

// History is GetParameterHistory: every version of name, oldest first, one page of at
// most max (1..50, default 50) after the NextToken token; SecureString values are
// decrypted only when decrypt is set.
// See https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_GetParameterHistory.html
func (s *Service) History(name string, decrypt bool, max int, token string) ([]HistoryEntry, string, error) {
	if max == 0 {
		max = 50
	}
	if max < 1 || max > 50 {
		return nil, "", validation("1 validation error detected: Value '%d' at 'maxResults' failed to satisfy constraint: Member must have value less than or equal to 50", max)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.params[name]
	if !ok {
		return nil, "", notFound(name)
	}
	versions := make([]int64, 0, len(p.History)+1)
	for v := range p.History {
		versions = append(versions, v)
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
	versions = append(versions, p.Version)
	start := 0
	if token != "" {
		n, err := strconv.Atoi(token)
		if err != nil || n < 0 || n > len(versions) {
			return nil, "", &Error{Code: "InvalidNextToken", Message: "The specified token isn't valid.", Status: 400}
		}
		start = n
	}
	user := "arn:aws:iam::" + s.opts.AccountID + ":root"
	var out []HistoryEntry
	for _, v := range versions[start:min(start+max, len(versions))] {
		e := HistoryEntry{Name: name, Version: v, LastModifiedUser: user, Labels: p.labelsOf(v), Policies: []struct{}{}}
		if v == p.Version {
			e.Type, e.Value, e.KeyId, e.Description, e.AllowedPattern, e.DataType, e.Tier =
				p.Type, p.Value, p.KeyID, p.Description, p.AllowedPattern, p.DataType, p.Tier
			e.LastModifiedDate = float64(p.Modified.UnixMilli()) / 1000
		} else {
			e.Type, e.Value, _ = strings.Cut(p.History[v], ":")
			m := p.Earlier[v]
			e.KeyId, e.Description, e.AllowedPattern = m.KeyID, m.Description, m.AllowedPattern
			e.DataType, e.Tier = orDefault(m.DataType, "text"), orDefault(m.Tier, "Standard")
			e.LastModifiedDate = float64(m.Modified.UnixMilli()) / 1000
		}
		if e.Type == "SecureString" && decrypt {
			plain, err := s.decrypt(e.Value)
			if err != nil {
				return nil, "", err
			}
			e.Value = plain
		}
		out = append(out, e)
	}
	next := ""
	if start+max < len(versions) {
		next = strconv.Itoa(start + max)
	}
	return out, next, nil
}

// Delete is DeleteParameter.
func (s *Service) Delete(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.params[name]; !ok {
		return notFound(name)
	}
	delete(s.params, name)
	s.state.Persist(s.params)
	return nil
}

// Description returns a parameter's description, for drift detection of stacks.
func (s *Service) Description(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.params[name]
	if !ok {
		return "", false
	}
	return p.Description, true
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
