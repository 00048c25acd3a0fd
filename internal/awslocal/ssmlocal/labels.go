package ssmlocal

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// labelPattern is what a parameter label may be: up to 100 letters, digits, periods,
// hyphens and underscores, not starting with a digit.
// See https://docs.aws.amazon.com/systems-manager/latest/userguide/sysman-paramstore-labels.html.
var labelPattern = regexp.MustCompile(`^[A-Za-z._-][A-Za-z0-9._-]{0,99}$`)

// maxLabelsPerVersion is how many labels one version of a parameter may carry.
const maxLabelsPerVersion = 10

func validLabel(l string) bool {
	low := strings.ToLower(l)
	return labelPattern.MatchString(l) && !strings.HasPrefix(low, "aws") && !strings.HasPrefix(low, "ssm")
}

// LabelVersion is LabelParameterVersion: it attaches labels to a version of name (the
// current one when version is 0), moving a label from the version that had it. Labels
// that are not valid are answered in invalid and left out.
// See https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_LabelParameterVersion.html.
func (s *Service) LabelVersion(name string, version int64, labels []string) (invalid []string, labelled int64, err error) {
	if len(labels) == 0 || len(labels) > 10 {
		return nil, 0, validation("1 validation error detected: Value at 'labels' failed to satisfy constraint: Member must have length less than or equal to 10 and greater than or equal to 1")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.params[name]
	if !ok {
		return nil, 0, notFound(name)
	}
	if version == 0 {
		version = p.Version
	}
	if _, old := p.History[version]; version != p.Version && !old {
		return nil, 0, &Error{Code: "ParameterVersionNotFound", Message: fmt.Sprintf("Systems Manager could not find version %d of %s. Verify the version and try again.", version, name), Status: 400}
	}
	var valid []string
	for _, l := range labels {
		if validLabel(l) {
			valid = append(valid, l)
		} else {
			invalid = append(invalid, l)
		}
	}
	count := 0
	for l, v := range p.Labels {
		if v == version && !contains(valid, l) {
			count++
		}
	}
	if count+len(valid) > maxLabelsPerVersion {
		return nil, 0, &Error{Code: "ParameterVersionLabelLimitExceeded", Message: fmt.Sprintf("A parameter version can have maximum %d labels. Move one or more labels to another version and try again.", maxLabelsPerVersion), Status: 400}
	}
	if len(valid) > 0 && p.Labels == nil {
		p.Labels = map[string]int64{}
	}
	for _, l := range valid {
		p.Labels[l] = version
	}
	s.state.Persist(s.params)
	return invalid, version, nil
}

// UnlabelVersion is UnlabelParameterVersion: it removes labels from a version of name;
// labels that version does not carry are answered in invalid.
func (s *Service) UnlabelVersion(name string, version int64, labels []string) (removed, invalid []string, err error) {
	if len(labels) == 0 || len(labels) > 10 {
		return nil, nil, validation("1 validation error detected: Value at 'labels' failed to satisfy constraint: Member must have length less than or equal to 10 and greater than or equal to 1")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.params[name]
	if !ok {
		return nil, nil, notFound(name)
	}
	if _, old := p.History[version]; version != p.Version && !old {
		return nil, nil, &Error{Code: "ParameterVersionNotFound", Message: fmt.Sprintf("Systems Manager could not find version %d of %s. Verify the version and try again.", version, name), Status: 400}
	}
	for _, l := range labels {
		if v, ok := p.Labels[l]; ok && v == version {
			delete(p.Labels, l)
			removed = append(removed, l)
		} else {
			invalid = append(invalid, l)
		}
	}
	s.state.Persist(s.params)
	return removed, invalid, nil
}

// labelsOf lists the labels of a version of p, sorted.
func (p *parameter) labelsOf(version int64) []string {
	out := []string{}
	for l, v := range p.Labels {
		if v == version {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// selectVersion reads a NAME:VERSION or NAME:LABEL selector (without its colon) of p.
func (p *parameter) selectVersion(selector string) (int64, error) {
	if v, err := strconv.ParseInt(selector, 10, 64); err == nil {
		return v, nil
	}
	if v, ok := p.Labels[selector]; ok {
		return v, nil
	}
	return 0, &Error{Code: "ParameterVersionLabelNotFound", Message: fmt.Sprintf("The specified parameter version label %s was not found for %s: attach it with LabelParameterVersion first.", selector, p.Name), Status: 400}
}

// DeleteMany is DeleteParameters: the names deleted, and those that did not exist.
func (s *Service) DeleteMany(names []string) (deleted, invalid []string, err error) {
	if len(names) == 0 || len(names) > 10 {
		return nil, nil, validation("1 validation error detected: Value at 'names' failed to satisfy constraint: Member must have length less than or equal to 10 and greater than or equal to 1")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		if _, ok := s.params[n]; !ok {
			invalid = append(invalid, n)
			continue
		}
		delete(s.params, n)
		deleted = append(deleted, n)
	}
	s.state.Persist(s.params)
	return deleted, invalid, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
