package secretslocal

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

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
