package cfnlocal

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Dynamic references ({{resolve:ssm:NAME[:VERSION]}}, {{resolve:ssm-secure:...}},
// {{resolve:secretsmanager:...}}) are resolved when AWS resolves them
// (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/dynamic-references.html):
//
//   - when a stack or change set is planned (CreateStack, UpdateStack, CreateChangeSet,
//     ExecuteChangeSet), every ssm and ssm-secure reference whose name is known must name a
//     parameter that exists ("Parameters: [ssm:NAME] cannot be found."), and ssm-secure
//     may only stand in the properties that support it ("SSM Secure reference is not
//     supported in: [TYPE/Properties/PATH]");
//   - when a resource is created or updated, every reference in its properties is
//     resolved, and one that cannot be (a secret or JSON key that does not exist) fails
//     the resource in Secrets Manager's or CloudFormation's words.
//
// A stack keeps the references as written (in its template, its resources' properties,
// its events, its change sets and its drift), never their values: only the service that
// makes a resource (its Provider) gets them, and a custom resource gets ssm values only
// (secure references are not resolved for custom resources). A property holding a
// reference is left out of drift detection, as AWS leaves it out.

// ErrReferenceNotFound is what Options.DynamicReference returns (wrapped) for an ssm or
// ssm-secure reference to a parameter, or a version of one, that does not exist.
var ErrReferenceNotFound = errors.New("cannot be found")

// dynamicRef matches a dynamic reference: its service and its key.
var dynamicRef = regexp.MustCompile(`\{\{resolve:(ssm|ssm-secure|secretsmanager):([^}]*)\}\}`)

// secureProperties are the properties that take ssm-secure references, by type: the
// path of property names to each, "[]" standing for the elements of a list.
// See https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/dynamic-references-ssm-secure-strings.html
var secureProperties = map[string][]string{
	"AWS::DirectoryService::MicrosoftAD":   {"Password"},
	"AWS::DirectoryService::SimpleAD":      {"Password"},
	"AWS::ElastiCache::ReplicationGroup":   {"AuthToken"},
	"AWS::IAM::User":                       {"LoginProfile/Password"},
	"AWS::KinesisFirehose::DeliveryStream": {"RedshiftDestinationConfiguration/Password"},
	"AWS::OpsWorks::App":                   {"AppSource/Password"},
	"AWS::OpsWorks::Stack":                 {"CustomCookbooksSource/Password", "RdsDbInstances/[]/DbPassword"},
	"AWS::RDS::DBCluster":                  {"MasterUserPassword"},
	"AWS::RDS::DBInstance":                 {"MasterUserPassword"},
	"AWS::Redshift::Cluster":               {"MasterUserPassword"},
}

// hasDynamicRef reports whether v holds a dynamic reference anywhere.
func hasDynamicRef(v any) bool {
	found := false
	walkStrings(v, func(s string) { found = found || dynamicRef.MatchString(s) })
	return found
}

// walkPaths calls fn with every string in v and the path of property names (and "[]"
// for list elements) that leads to it.
func walkPaths(v any, path []string, fn func(path []string, s string)) {
	switch x := v.(type) {
	case string:
		fn(path, x)
	case map[string]any:
		for k, e := range x {
			walkPaths(e, append(slices.Clip(path), k), fn)
		}
	case []any:
		for _, e := range x {
			walkPaths(e, append(slices.Clip(path), "[]"), fn)
		}
	}
}

// checkDynamicRefs is the plan-time check of the references in p's resources.
func (s *Service) checkDynamicRefs(p *planned) error {
	if s.o.DynamicReference == nil {
		return nil
	}
	var unsupported, missing []string
	var other error
	seen := map[string]bool{}
	for _, name := range p.active {
		typ := p.tpl.Resources[name].Type
		walkPaths(p.props[name], nil, func(path []string, v string) {
			if strings.Contains(v, knownAfterApply) {
				return // the name is known when the resource is made
			}
			for _, m := range dynamicRef.FindAllStringSubmatch(v, -1) {
				service, key := m[1], m[2]
				if service == "secretsmanager" {
					continue
				}
				if service == "ssm-secure" && !slices.Contains(secureProperties[typ], strings.Join(path, "/")) {
					// AWS names the property down to the first list.
					at := path
					if i := slices.Index(path, "[]"); i >= 0 {
						at = path[:i]
					}
					unsupported = append(unsupported, typ+"/Properties/"+strings.Join(at, "/"))
				}
				ref := service + ":" + key
				if seen[ref] {
					continue
				}
				seen[ref] = true
				if _, err := s.o.DynamicReference(service, key); errors.Is(err, ErrReferenceNotFound) {
					missing = append(missing, ref)
				} else if err != nil && other == nil {
					other = err
				}
			}
		})
	}
	switch {
	case len(unsupported) > 0:
		slices.Sort(unsupported)
		return invalidf("SSM Secure reference is not supported in: [%s]", strings.Join(unsupported, ","))
	case len(missing) > 0:
		slices.Sort(missing)
		return invalidf("Parameters: [%s] cannot be found.", strings.Join(missing, ", "))
	case other != nil:
		return invalidf("%s", other.Error())
	}
	return nil
}

// resolveRefs returns props with their dynamic references replaced by their values (only
// the ssm ones when secure is false), leaving props as they are; an error names the first
// reference that cannot be resolved.
func (s *Service) resolveRefs(props map[string]any, secure bool) (map[string]any, error) {
	if s.o.DynamicReference == nil || !hasDynamicRef(props) {
		return props, nil
	}
	var failed error
	var resolve func(v any) any
	resolve = func(v any) any {
		switch x := v.(type) {
		case string:
			return dynamicRef.ReplaceAllStringFunc(x, func(ref string) string {
				m := dynamicRef.FindStringSubmatch(ref)
				if failed != nil || !secure && m[1] != "ssm" {
					return ref
				}
				val, err := s.o.DynamicReference(m[1], m[2])
				if err != nil {
					if errors.Is(err, ErrReferenceNotFound) {
						err = fmt.Errorf("Parameters: [%s:%s] cannot be found.", m[1], m[2])
					}
					failed = err
					return ref
				}
				return val
			})
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = resolve(e)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = resolve(e)
			}
			return out
		}
		return v
	}
	out, _ := resolve(props).(map[string]any)
	return out, failed
}
