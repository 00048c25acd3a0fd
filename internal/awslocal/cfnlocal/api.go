package cfnlocal

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

func init() {
	actions = map[string]handler{
		"CreateStack":                       (*Service).createStack,
		"UpdateStack":                       (*Service).updateStack,
		"DeleteStack":                       (*Service).deleteStack,
		"DescribeStacks":                    (*Service).describeStacks,
		"ListStacks":                        (*Service).listStacks,
		"DescribeStackEvents":               (*Service).describeStackEvents,
		"DescribeStackResources":            (*Service).describeStackResources,
		"DescribeStackResource":             (*Service).describeStackResource,
		"ListStackResources":                (*Service).listStackResources,
		"GetTemplate":                       (*Service).getTemplate,
		"ValidateTemplate":                  (*Service).validateTemplate,
		"GetTemplateSummary":                (*Service).getTemplateSummary,
		"CreateChangeSet":                   (*Service).createChangeSet,
		"DescribeChangeSet":                 (*Service).describeChangeSet,
		"ListChangeSets":                    (*Service).listChangeSets,
		"ExecuteChangeSet":                  (*Service).executeChangeSet,
		"DeleteChangeSet":                   (*Service).deleteChangeSet,
		"UpdateTerminationProtection":       (*Service).updateTerminationProtection,
		"SetStackPolicy":                    (*Service).setStackPolicy,
		"GetStackPolicy":                    (*Service).getStackPolicy,
		"ContinueUpdateRollback":            (*Service).continueUpdateRollback,
		"RollbackStack":                     (*Service).rollbackStack,
		"CancelUpdateStack":                 (*Service).cancelUpdateStack,
		"ListExports":                       (*Service).listExports,
		"ListImports":                       (*Service).listImports,
		"DetectStackDrift":                  (*Service).detectStackDrift,
		"DescribeStackDriftDetectionStatus": (*Service).describeStackDriftDetectionStatus,
		"DescribeStackResourceDrifts":       (*Service).describeStackResourceDrifts,
		"SignalResource":                    (*Service).signalResource,
	}
}

// Name patterns CloudFormation enforces: stack names at CreateStack, and the API model's
// patterns of CreateChangeSet's StackName (a name or an ARN) and ChangeSetName.
var (
	namePattern        = regexp.MustCompile(`^[a-zA-Z][-a-zA-Z0-9]*$`)
	stackOrARNPattern  = regexp.MustCompile(`^(([a-zA-Z][-a-zA-Z0-9]*)|(arn:\b(aws|aws-us-gov|aws-cn)\b:[-a-zA-Z0-9:/._+]*))$`)
	stackOrARNLiteral  = `([a-zA-Z][-a-zA-Z0-9]*)|(arn:\b(aws|aws-us-gov|aws-cn)\b:[-a-zA-Z0-9:/._+]*)`
	namePatternLiteral = `[a-zA-Z][-a-zA-Z0-9]*`
)

// checkName refuses a name as CloudFormation's request validation does, with its wording.
func checkName(field, value string, re *regexp.Regexp, literal string) error {
	if len(value) > 128 && re == namePattern {
		return validation("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must have length less than or equal to 128", value, field)
	}
	if !re.MatchString(value) {
		return validation("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy regular expression pattern: %s", value, field, literal)
	}
	return nil
}

// templateBody reads TemplateBody or TemplateURL (from the emulator's S3).
func (s *Service) templateBody(f form) (string, error) {
	if b := f.get("TemplateBody"); b != "" {
		return b, nil
	}
	u := f.get("TemplateURL")
	if u == "" {
		return "", nil
	}
	bucket, key, err := parseS3URL(u)
	if err != nil {
		return "", err
	}
	if s.o.GetObject == nil {
		return "", validation("TemplateURL %s cannot be read: the emulator has no S3 attached", u)
	}
	// The lock is held; GetObject talks to another service of the emulator, never to us.
	b, err := s.o.GetObject(context.Background(), bucket, key)
	if err != nil {
		return "", validation("TemplateURL must be a supported URL. Could not read %s: %v", u, err)
	}
	return string(b), nil
}

// parseS3URL accepts path-style (http://host/bucket/key), virtual-hosted
// (https://bucket.s3.amazonaws.com/key) and s3://bucket/key URLs.
func parseS3URL(raw string) (string, string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", "", validation("TemplateURL must be a supported URL: %q", raw)
	}
	if u.Scheme == "s3" {
		return u.Host, strings.TrimPrefix(u.Path, "/"), nil
	}
	host := u.Hostname()
	if i := strings.Index(host, ".s3"); i > 0 && !strings.HasPrefix(host, "s3") {
		return host[:i], strings.TrimPrefix(u.Path, "/"), nil
	}
	parts := strings.SplitN(strings.TrimPrefix(u.Path, "/"), "/", 2)
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", validation("TemplateURL must be a supported URL: %q names no bucket and key", raw)
	}
	return parts[0], parts[1], nil
}

// givenParams merges Parameters with the previous values where UsePreviousValue is set.
func givenParams(f form, prev map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range f.structs("Parameters") {
		k := m["ParameterKey"]
		if m["UsePreviousValue"] == "true" {
			v, ok := prev[k]
			if !ok {
				return nil, validation("Invalid input for parameter key %s. Cannot specify usePreviousValue as true for a parameter key not in the previous template", k)
			}
			out[k] = v
			continue
		}
		out[k] = m["ParameterValue"]
	}
	return out, nil
}

func givenTags(f form) []tag {
	var out []tag
	for _, m := range f.structs("Tags") {
		out = append(out, tag{m["Key"], m["Value"]})
	}
	return out
}

// iamNames are the properties that give an IAM resource a custom name, which needs
// CAPABILITY_NAMED_IAM; other IAM types (policies, keys, ...) need CAPABILITY_IAM.
var iamNames = map[string]string{
	"AWS::IAM::Role": "RoleName", "AWS::IAM::User": "UserName", "AWS::IAM::Group": "GroupName",
	"AWS::IAM::ManagedPolicy": "ManagedPolicyName", "AWS::IAM::InstanceProfile": "InstanceProfileName",
}

// checkCapabilities refuses IAM resources without the capability, as AWS does.
func checkCapabilities(tpl *template, caps []string) error {
	has := map[string]bool{}
	for _, c := range caps {
		has[c] = true
	}
	want, _ := requiredCapability(tpl)
	if want == "" || has["CAPABILITY_NAMED_IAM"] || (has["CAPABILITY_IAM"] && want == "CAPABILITY_IAM") {
		return nil
	}
	return &apiError{Code: "InsufficientCapabilitiesException", Message: fmt.Sprintf("Requires capabilities : [%s]", want), Status: 400}
}

// requiredCapability is the capability a template's IAM resources need ("" when it has
// none): CAPABILITY_NAMED_IAM when one has a custom name, CAPABILITY_IAM otherwise; and
// the types of those resources, sorted.
func requiredCapability(tpl *template) (string, []string) {
	types := map[string]bool{}
	named := false
	for _, name := range sortedKeys(tpl.Resources) {
		d := tpl.Resources[name]
		if strings.HasPrefix(d.Type, "AWS::IAM::") {
			types[d.Type] = true
			if p, ok := iamNames[d.Type]; ok && d.Properties[p] != nil {
				named = true
			}
		}
	}
	switch {
	case len(types) == 0:
		return "", nil
	case named:
		return "CAPABILITY_NAMED_IAM", sortedKeys(types)
	}
	return "CAPABILITY_IAM", sortedKeys(types)
}
