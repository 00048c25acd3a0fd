package kmslocal

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/awslocal/statefile"
)

// alias is a KMS alias: a name for a key, usable wherever a key id is.
type alias struct {
	Name    string    `json:"name"`
	KeyID   string    `json:"keyId"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// aliasPattern is what an alias name may be. See
// https://docs.aws.amazon.com/kms/latest/APIReference/API_CreateAlias.html.
var aliasPattern = regexp.MustCompile(`^alias/[a-zA-Z0-9/_-]{1,250}$`)

func (s *Service) aliasPath() string { return filepath.Join(s.opts.Dir, "aliases.json") }

// saveAliases writes the aliases; called with s.mu held.
func (s *Service) saveAliases() error {
	if s.opts.Dir == "" {
		return nil
	}
	return statefile.Write(s.aliasPath(), s.aliases, 0o600)
}

func (s *Service) aliasARN(name string) string {
	return fmt.Sprintf("arn:aws:kms:%s:%s:%s", s.opts.Region, s.opts.AccountID, name)
}

// aliasName returns the alias/NAME of an alias name or ARN, and whether keyID is one.
func (s *Service) aliasName(keyID string) (string, bool) {
	if strings.HasPrefix(keyID, "alias/") {
		return keyID, true
	}
	if i := strings.Index(keyID, ":alias/"); strings.HasPrefix(keyID, "arn:") && i > 0 {
		return keyID[i+1:], true
	}
	return "", false
}

func (s *Service) aliasNotFound(name string) *Error {
	return &Error{Code: "NotFoundException", Message: fmt.Sprintf("Alias %s is not found.", s.aliasARN(name)), Status: 400}
}

// CreateAlias names a key: the name is alias/ and letters, digits, /, _ or -, not in the
// reserved alias/aws/ space, and not in use.
func (s *Service) CreateAlias(name, keyID string) error {
	if !aliasPattern.MatchString(name) {
		return validation("1 validation error detected: Value '%s' at 'aliasName' failed to satisfy constraint: Member must satisfy regular expression pattern: ^alias/[a-zA-Z0-9/_-]+$", name)
	}
	if strings.HasPrefix(name, "alias/aws/") {
		return &Error{Code: "NotAuthorizedException", Message: "Cannot create alias with prefix 'alias/aws/'", Status: 400}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.aliases[name]; ok {
		return &Error{Code: "AlreadyExistsException", Message: fmt.Sprintf("An alias with the name %s already exists", s.aliasARN(name)), Status: 400}
	}
	if _, ok := s.aliasName(keyID); ok {
		return validation("TargetKeyId %s is an alias: name the key by its id or ARN", keyID)
	}
	k, err := s.find(keyID)
	if err != nil {
		return err
	}
	if k.State == "PendingDeletion" {
		return invalidState(k)
	}
	now := s.opts.Clock.Now().UTC()
	s.aliases[name] = &alias{Name: name, KeyID: k.ID, Created: now, Updated: now}
	return s.saveAliases()
}

// DeleteAlias removes an alias; its key stays.
func (s *Service) DeleteAlias(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.aliases[name]; !ok {
		return s.aliasNotFound(name)
	}
	delete(s.aliases, name)
	return s.saveAliases()
}

// aliasListing is an alias as ListAliases answers it.
type aliasListing struct {
	AliasName, AliasArn, TargetKeyId string
	CreationDate, LastUpdatedDate    float64
}

// ListAliases lists the aliases by name, of one key when keyID is set.
func (s *Service) ListAliases(keyID string) ([]aliasListing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	target := ""
	if keyID != "" {
		k, err := s.find(keyID)
		if err != nil {
			return nil, err
		}
		target = k.ID
	}
	out := []aliasListing{}
	for _, a := range s.aliases {
		if target != "" && a.KeyID != target {
			continue
		}
		out = append(out, aliasListing{AliasName: a.Name, AliasArn: s.aliasARN(a.Name), TargetKeyId: a.KeyID,
			CreationDate: float64(a.Created.UnixMilli()) / 1000, LastUpdatedDate: float64(a.Updated.UnixMilli()) / 1000})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AliasName < out[j].AliasName })
	return out, nil
}
