package secretslocal

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

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
