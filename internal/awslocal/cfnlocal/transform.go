package cfnlocal

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aws-cloudformation/rain/cft/parse"

	"github.com/cairn-dev/cairn/internal/sam"
)

// This file processes a template's transforms, as CloudFormation does when a stack or change
// set is created, before anything else looks at the template: inline Fn::Transform first,
// then the Transform section in order. AWS's own transforms run here:
// AWS::LanguageExtensions (langext.go), AWS::Serverless-2016-10-31 (internal/sam) and
// AWS::Include. Any other name is a macro: one an AWS::CloudFormation::Macro resource of
// the account defines would run its Lambda function, which the emulator does not run; a
// name no macro defines fails as it does in AWS. The result is the Processed stage of
// GetTemplate; the Original stage is the template as given.

const (
	languageExtensions  = "AWS::LanguageExtensions"
	serverlessTransform = "AWS::Serverless-2016-10-31"
	includeTransform    = "AWS::Include"
)

// transformNames returns the macros the Transform section names, in order: a name, a list
// of names, or macros given as {Name, Parameters}.
func transformNames(v any) ([]string, error) {
	var out []string
	add := func(x any) error {
		switch t := x.(type) {
		case string:
			out = append(out, t)
		case map[string]any:
			n, ok := t["Name"].(string)
			if !ok {
				return invalidf("Template format error: Key Name of transform definition must be a string.")
			}
			out = append(out, n)
		default:
			return invalidf("Template format error: Transform must be a name, a list of names or of {Name, Parameters}")
		}
		return nil
	}
	switch t := v.(type) {
	case nil:
	case []any:
		for _, x := range t {
			if err := add(x); err != nil {
				return nil, err
			}
		}
	default:
		if err := add(t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// hasKey reports whether key is a key of any mapping in v.
func hasKey(v any, key string) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, vv := range x {
			if k == key || hasKey(vv, key) {
				return true
			}
		}
	case []any:
		for _, vv := range x {
			if hasKey(vv, key) {
				return true
			}
		}
	}
	return false
}

// transformer is what the transforms of one template see: its parameter values and the
// stack's pseudo parameters, never a resource (none exists yet).
type transformer struct {
	s      *Service
	st     *stack
	decl   *template // the template's parameters, for their declarations
	params map[string]any
	given  map[string]string
}

// process returns the template CloudFormation works with for body: body itself when it has
// no transform, else the processed template as JSON. Called with mu held.
func (s *Service) process(st *stack, body string, params map[string]string) (string, error) {
	m, err := rawTemplate(body)
	if err != nil {
		return "", err
	}
	names, err := transformNames(m["Transform"])
	if err != nil {
		return "", err
	}
	if len(names) == 0 && !hasKey(m, "Fn::Transform") {
		return body, nil
	}
	x := &transformer{s: s, st: st, decl: &template{Parameters: map[string]paramDecl{}}, given: params}
	if err := x.decl.parseParameters(m["Parameters"]); err != nil {
		return "", err
	}
	if x.params, _, err = x.decl.resolveParams(params, s.ssm); err != nil {
		return "", err
	}
	if err := x.inline(m); err != nil {
		return "", &transformError{err}
	}
	for _, n := range names {
		switch n {
		case languageExtensions:
			err = x.languageExtensions(m)
		case serverlessTransform:
			if err = sam.Transform(m, x.params); err != nil {
				err = invalidf("%s", err)
			}
		case includeTransform:
			err = invalidf("Template format error: %s is used with Fn::Transform, not in the Transform section", n)
		default:
			err = s.macro(n)
		}
		if err != nil {
			return "", &transformError{err}
		}
	}
	delete(m, "Transform")
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode the processed template: %w", err)
	}
	return string(b), nil
}

// transformError is the failure of a transform itself (a macro that does not exist, a
// Serverless resource the translator refuses): a change set fails with it, as in AWS.
type transformError struct{ err error }

func (e *transformError) Error() string { return e.err.Error() }
func (e *transformError) Unwrap() error { return e.err }

// macro is the failure of a macro the emulator cannot run: one no AWS::CloudFormation::Macro
// of the account defines fails in AWS's words; a defined one names its function, whose code
// the emulator does not run.
func (s *Service) macro(name string) error {
	for _, st := range s.st.Stacks {
		if st.deleted() {
			continue
		}
		for _, r := range st.Resources {
			if r.Type == "AWS::CloudFormation::Macro" && exists(r) && scalarString(r.Props["Name"]) == name {
				return invalidf("Transform %s::%s failed with: the local emulator does not run the code of macro functions (%s, defined by stack %s); deploy the processed template instead",
					s.o.AccountID, name, scalarString(r.Props["FunctionName"]), st.Name)
			}
		}
	}
	return invalidf("No transform named %s::%s found.", s.o.AccountID, name)
}

// evaluator evaluates what transforms may: parameters, pseudo parameters, mappings and
// conditions of m. A reference to a resource is an error.
func (x *transformer) evaluator(m map[string]any) *evaluator {
	tpl := &template{Parameters: x.decl.Parameters, ParamOrder: x.decl.ParamOrder, Mappings: map[string]any{},
		Conditions: map[string]any{}, Resources: map[string]resourceDecl{}}
	if mp, ok := m["Mappings"].(map[string]any); ok {
		tpl.Mappings = mp
	}
	if c, ok := m["Conditions"].(map[string]any); ok {
		tpl.Conditions = c
	}
	name, id := "validate", "validate"
	if x.st != nil {
		name, id = x.st.Name, x.st.ID
	}
	e := &evaluator{tpl: tpl, params: x.params, region: x.s.o.Region, conditions: map[string]bool{}, condEval: map[string]bool{},
		pseudo: map[string]any{
			"AWS::AccountId": x.s.o.AccountID, "AWS::Region": x.s.o.Region, "AWS::StackName": name,
			"AWS::StackId": id, "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com", "AWS::NotificationARNs": []any{},
		}}
	noResource := func(n string) (any, error) {
		return nil, invalidf("Template format error: %s is a resource, which a transform cannot read (it runs before any resource exists)", n)
	}
	e.ref = noResource
	e.getAtt = func(n, _ string) (any, error) { return noResource(n) }
	e.importValue = func(n string) (string, error) {
		return "", invalidf("Template format error: Fn::ImportValue %s cannot be resolved by a transform", n)
	}
	return e
}

// inline processes every Fn::Transform of m: AWS::Include inserts its snippet from S3; any
// other name is a macro.
func (x *transformer) inline(m map[string]any) error {
	var walk func(v any) (any, error)
	walk = func(v any) (any, error) {
		switch t := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(t) {
				if k == "Fn::Transform" {
					continue
				}
				r, err := walk(t[k])
				if err != nil {
					return nil, err
				}
				t[k] = r
			}
			spec, ok := t["Fn::Transform"]
			if !ok {
				return t, nil
			}
			sm, _ := spec.(map[string]any)
			name, _ := sm["Name"].(string)
			if name == "" {
				return nil, invalidf("Template format error: Key Name of transform definition must be a string.")
			}
			if name != includeTransform {
				return nil, x.s.macro(name)
			}
			snippet, err := x.include(sm["Parameters"])
			if err != nil {
				return nil, err
			}
			delete(t, "Fn::Transform")
			if len(t) == 0 {
				return snippet, nil
			}
			sn, ok := snippet.(map[string]any)
			if !ok {
				return nil, invalidf("Transform AWS::Include failed with: the snippet must be a mapping where other keys are beside Fn::Transform")
			}
			for k, vv := range sn {
				t[k] = vv
			}
			return t, nil
		case []any:
			for i := range t {
				r, err := walk(t[i])
				if err != nil {
					return nil, err
				}
				t[i] = r
			}
		}
		return v, nil
	}
	_, err := walk(m)
	return err
}

// include reads the snippet AWS::Include's Location names in the emulator's S3.
func (x *transformer) include(params any) (any, error) {
	pm, _ := params.(map[string]any)
	loc, err := x.evaluator(map[string]any{}).evalString(pm["Location"], "AWS::Include Location")
	if err != nil || loc == "" {
		return nil, invalidf("Transform AWS::Include failed with: Location must be an s3:// or https:// URL of the snippet")
	}
	bucket, key, err := parseS3URL(loc)
	if err != nil {
		return nil, err
	}
	if x.s.o.GetObject == nil {
		return nil, invalidf("Transform AWS::Include failed with: the emulator has no S3 to read %s from", loc)
	}
	b, err := x.s.o.GetObject(context.Background(), bucket, key)
	if err != nil {
		return nil, invalidf("Transform AWS::Include failed with: The specified S3 object %s could not be read: %v", loc, err)
	}
	t, err := parse.String(string(b))
	if err != nil {
		return nil, invalidf("Transform AWS::Include failed with: the snippet at %s does not parse: %v", loc, err)
	}
	return t.Map(), nil
}

// transformsOf returns the names of the Transform section of a template body, for the
// capability check of CreateStack and UpdateStack (nil for an unparsable body: parsing
// reports that).
func transformsOf(body string) []string {
	m, err := rawTemplate(body)
	if err != nil {
		return nil
	}
	names, _ := transformNames(m["Transform"])
	if hasKey(m, "Fn::Transform") && !slices.Contains(names, includeTransform) {
		names = append(names, includeTransform)
	}
	return names
}

// checkAutoExpand refuses, as CreateStack and UpdateStack do, a template with transforms
// when CAPABILITY_AUTO_EXPAND is not acknowledged (change sets do not need it).
func checkAutoExpand(body string, caps []string) error {
	if len(transformsOf(body)) == 0 || slices.Contains(caps, "CAPABILITY_AUTO_EXPAND") {
		return nil
	}
	return &apiError{Code: "InsufficientCapabilitiesException", Message: "Requires capabilities : [CAPABILITY_AUTO_EXPAND]", Status: 400}
}

func object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// originalOr is the template as given when it differs from the processed one.
func originalOr(original, processed string) string {
	if original == "" || strings.TrimSpace(original) == strings.TrimSpace(processed) {
		return ""
	}
	return original
}
