package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/template"
)

// S3 locations: every S3 object a stack's templates name (template.S3Locations) is
// checked against cairn's own bucket by the bucket package's one rule
// (bucket.CheckLocation): once when the config loads, with the parameter values known
// then, and again by the deployer before the stack's change set is made, with every
// parameter resolved (CheckReads).

// locationValues are the values a stack's template's locations are evaluated with: the
// parameters known (those given and known, and the Defaults of those not given) and the
// pseudo parameters the stack's target tells; later reports the names known only when
// the deployer resolves them.
func locationValues(t *template.Template, s *Stack, params map[string]string, known func(name string) (given, ok bool), homeRegion string) (values map[string]string, later map[string]bool) {
	values, later = map[string]string{}, map[string]bool{}
	for name, p := range t.Parameters {
		given, ok := known(name)
		switch {
		case given && ok:
			values[name] = params[name]
		case given:
			later[name] = true
		case p.HasDefault:
			values[name] = p.Default
		}
	}
	if s.StackName != "" {
		values["AWS::StackName"] = s.StackName
	}
	if region := cmp.Or(s.Target.Region, homeRegion); region != "" {
		values["AWS::Region"] = region
	} else {
		later["AWS::Region"], later["AWS::Partition"], later["AWS::URLSuffix"] = true, true, true
	}
	if account := s.Target.Account(); account != "" {
		values["AWS::AccountId"] = account
	} else {
		later["AWS::AccountId"] = true
	}
	return values, later
}

// locationRefusal is why location l of stack stack is refused, or "": with later, a
// location cairn cannot tell through one of those names is left for the deployer.
func locationRefusal(l template.S3Location, bucketName, stack string, later map[string]bool) string {
	for _, f := range l.Forms {
		err := layout.CheckLocation(f, bucketName)
		if err == nil {
			continue
		}
		if layout.IsUnsure(err) && slices.ContainsFunc(l.Unknown, func(n string) bool { return later[n] }) {
			continue // told again once they are resolved
		}
		what := l.Property + " of " + l.LogicalID + " (" + l.Type + ")"
		if l.LogicalID == "" {
			what = "AWS::Include's Location"
		}
		sep := " "
		if layout.IsUnsure(err) {
			sep = ": "
		}
		if stack == "" {
			return fmt.Sprintf("nested template: %s%s%v", what, sep, err)
		}
		return fmt.Sprintf("stack %s: %s%s%v", stack, what, sep, err)
	}
	return ""
}

// s3Locations checks the S3 locations of t (file in messages, positions shifted by line
// and col) for stack d with the values known now.
func (l *loader) s3Locations(t *template.Template, d *stackDef, file string, line, col int) {
	if l.bucket == "" && l.ssm == nil {
		return
	}
	// What does not depend on the stack's values is found once per template: a config of
	// many stacks of one template walks it once.
	if l.reads == nil {
		l.reads = map[*template.Template]templateReads{}
	}
	tr, ok := l.reads[t]
	if !ok {
		tr = templateReads{locations: len(t.S3Locations(nil)) > 0, ssm: t.MayReferToSSM()}
		l.reads[t] = tr
	}
	needSSM := l.ssm != nil && (tr.ssm || slices.ContainsFunc(d.params, func(gp givenParam) bool { return gp.known && template.MayReferToSSMIn(gp.static) }))
	if !tr.locations && !needSSM {
		return
	}
	params := map[string]string{}
	for _, gp := range d.params {
		if gp.known {
			params[gp.name] = gp.static
		}
	}
	values, later := locationValues(t, d.s, params, func(name string) (bool, bool) {
		for _, gp := range d.params {
			if gp.name == name {
				return true, gp.known
			}
		}
		return false, false
	}, "")
	if tr.locations {
		l.locationErrors(t, d.s.Name, file, line, col, values, later)
	}
	if !needSSM {
		return
	}
	l.dynamicReferenceErrors(t, d.s.Name, file, line, col, values, later)
	for _, gp := range d.params {
		if !gp.known {
			continue
		}
		for _, r := range template.ScanSSMReferences([]layout.Part{{Text: gp.static}}) {
			if msg := l.ssm.DynamicReferenceRefusal(l.namespace, r); msg != "" {
				l.errorf(gp.at, d.key+".parameters."+gp.name, "stack %s: parameter %s: %s", d.s.Name, gp.name, msg)
			}
		}
	}
}

// dynamicReferenceErrors reports the dynamic references of t to Parameter Store
// parameters outside the paths the config's namespace may read, each once; one computed
// from a name in later is left for the deployer (CheckReads).
func (l *loader) dynamicReferenceErrors(t *template.Template, stack, file string, line, col int, values map[string]string, later map[string]bool) {
	if l.ssm == nil {
		return
	}
	for _, r := range t.SSMReferences(values) {
		msg := l.ssm.DynamicReferenceRefusal(l.namespace, r)
		if msg == "" || r.Name == "" && slices.ContainsFunc(r.Params, func(n string) bool { return later[n] }) {
			continue
		}
		if stack != "" {
			msg = "stack " + stack + ": " + msg
		}
		e := &Error{File: file, Line: r.Line + line, Col: r.Col + col, Key: r.At, Msg: msg}
		l.reportOnce(e)
	}
}

// reportOnce adds e to the load's errors unless the same error was reported already (a
// template shared by several stacks is read once per stack).
func (l *loader) reportOnce(e *Error) {
	k := e.Error()
	if l.reportedLocations[k] {
		return
	}
	if l.reportedLocations == nil {
		l.reportedLocations = map[string]bool{}
	}
	l.reportedLocations[k] = true
	l.errs = append(l.errs, e)
}

// templateReads is what a template may read, whatever its values: whether it names S3
// locations, and whether its text could make a dynamic reference.
type templateReads struct{ locations, ssm bool }

// locationErrors reports the refused locations of t, each once.
func (l *loader) locationErrors(t *template.Template, stack, file string, line, col int, values map[string]string, later map[string]bool) {
	if l.bucket == "" {
		return
	}
	for _, loc := range t.S3Locations(values) {
		msg := locationRefusal(loc, l.bucket, stack, later)
		if msg == "" {
			continue
		}
		e := &Error{File: file, Line: loc.Line + line, Col: loc.Col + col, Key: loc.At, Msg: msg}
		l.reportOnce(e)
	}
}

// CheckReads checks what s's template makes CloudFormation read with the deployer's
// role, with the values s deploys with (params, resolved; homeRegion is cairn's own
// region, for a stack in it), before any change set. Its S3 locations are checked against
// cairn's bucket bucketName: one naming an object of it other than the templates and
// artifacts cairn uploads, or that may name one through what cairn still cannot know (an
// import, an attribute), is refused. With paths (the Parameter Store paths of each
// namespace), its dynamic references and those of the values are checked against
// namespace's paths (SSMPaths.DynamicReferenceRefusal). The error names the stack, the
// resource, the property and the object or parameter. Nested templates were checked when
// the config loaded: their parameters come from the template, not the config.
func CheckReads(s *Stack, params map[string]string, bucketName, homeRegion, namespace string, paths SSMPaths) error {
	if s.Template == nil || bucketName == "" && paths == nil {
		return nil
	}
	values, _ := locationValues(s.Template, s, params, func(name string) (bool, bool) {
		_, ok := params[name]
		return ok, ok
	}, homeRegion)
	var msgs []string
	if bucketName != "" {
		for _, loc := range s.Template.S3Locations(values) {
			if msg := locationRefusal(loc, bucketName, s.Name, nil); msg != "" {
				msgs = append(msgs, fmt.Sprintf("%s (%s): %s", loc.At, templateName(s), msg))
			}
		}
	}
	if paths != nil {
		for _, r := range s.Template.SSMReferences(values) {
			if msg := paths.DynamicReferenceRefusal(namespace, r); msg != "" {
				msgs = append(msgs, fmt.Sprintf("%s (%s): stack %s: %s", r.At, templateName(s), s.Name, msg))
			}
		}
		for _, name := range sortedNames(params) {
			for _, r := range template.ScanSSMReferences([]layout.Part{{Text: params[name]}}) {
				if msg := paths.DynamicReferenceRefusal(namespace, r); msg != "" {
					msgs = append(msgs, fmt.Sprintf("stack %s: parameter %s: %s", s.Name, name, msg))
				}
			}
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

func templateName(s *Stack) string {
	if s.TemplatePath != "" {
		return s.TemplatePath
	}
	return "template_body"
}
