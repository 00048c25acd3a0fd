package template

import (
	"errors"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairn-dev/cairn/internal/sam"
)

// A Serverless template (Transform AWS::Serverless-2016-10-31) is checked as CloudFormation
// checks it: after the transform. checkServerless expands it with internal/sam (the
// emulator's transform too), checks the expanded template as any other (references,
// attributes, property values, deprecated runtimes of the functions it makes), and reports
// each problem where the template says it: a generated resource's at the Serverless
// resource it comes from (a property at the same property of that resource, or at Globals
// when it came from there), with the generated resource named.

// checkServerless returns the problems of the expanded template, expanded true. When the
// template does not expand it returns expanded false, and the template is checked as
// before, without reference checks: with the refusal as a problem (at the resource at
// fault) when the translator refuses the template, without one when cairn's transform
// leaves out what it needs (a type AWS's translator expands and cairn's does not).
func (t *Template) checkServerless(day string) (probs []Problem, expanded bool) {
	var doc any
	if err := t.Node.Decode(&doc); err != nil {
		return nil, false
	}
	m, isMap := doc.(map[string]any)
	if !isMap {
		return nil, false
	}
	if i := slices.Index(t.Transforms, languageExtensions); i >= 0 && i < slices.Index(t.Transforms, serverless) {
		resolvePseudoSubs(m)
	}
	sam.AssumePackaged(m)
	t.assumeOmittedPackaged(m)
	origins, err := sam.Expand(m, t.transformParams())
	var serr *sam.Error
	if errors.As(err, &serr) {
		if serr.Unsupported {
			return nil, false
		}
		at := key(t.Node, "Transform")
		path := "Transform"
		if res := value(t.Node, "Resources"); serr.LogicalID != "" && key(res, serr.LogicalID) != nil {
			at, path = key(res, serr.LogicalID), "Resources."+serr.LogicalID
		}
		p := Problem{Line: 1, Col: 1, Path: path, Msg: samMessage(serr.Msg)}
		if at != nil {
			p.Line, p.Col = at.Line, at.Column
		}
		return []Problem{p}, false
	} else if err != nil {
		return nil, false
	}
	delete(m, "Transform")
	var root yaml.Node
	if err := root.Encode(m); err != nil {
		return nil, false
	}
	graftResources(&root, t.Node, origins)
	x := &Template{Body: t.Body, SHA256: t.SHA256, Parameters: t.Parameters, Outputs: t.Outputs, Node: &root}
	for _, tr := range t.Transforms {
		if tr != serverless {
			x.Transforms = append(x.Transforms, tr)
		}
	}
	for _, p := range x.CheckOn(day) {
		if strings.Contains(p.Msg, `"`+unknownParam+`"`) {
			continue // the translator put a parameter's value, which the deploy gives, in its place
		}
		if id := resourceOf(p.Path); origins[id] != "" && origins[id] != id {
			p.Msg += " (in " + id + ", which the Serverless transform makes for " + origins[id] + ")"
		}
		probs = append(probs, p)
	}
	return probs, true
}

// pseudoStandIns are the values validation gives pseudo parameters where the
// AWS::LanguageExtensions transform resolves them before the Serverless transform reads
// them: any value of their shape, as the account, region and stack are not known here.
var pseudoStandIns = map[string]string{
	"AWS::AccountId": "123456789012", "AWS::Region": "us-east-1", "AWS::Partition": "aws",
	"AWS::URLSuffix": "amazonaws.com", "AWS::StackName": "cairn-validate",
}

var subVariable = regexp.MustCompile(`\$\{([^!}][^}]*)\}`)

// resolvePseudoSubs replaces, in the Serverless resources and Globals, each Fn::Sub of a
// string naming no variable but pseudo parameters with its value, as AWS::LanguageExtensions
// does when it runs before AWS::Serverless-2016-10-31: the translator then reads a CodeUri
// of !Sub "s3://bucket-${AWS::Region}/code.zip" as the S3 location it is.
func resolvePseudoSubs(m map[string]any) {
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			if s, ok := x["Fn::Sub"].(string); ok && len(x) == 1 {
				resolvable := true
				out := subVariable.ReplaceAllStringFunc(s, func(ref string) string {
					v, ok := pseudoStandIns[ref[2:len(ref)-1]]
					resolvable = resolvable && ok
					return v
				})
				if resolvable {
					return strings.ReplaceAll(out, "${!", "${")
				}
				return x
			}
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	if g, ok := m["Globals"]; ok {
		m["Globals"] = walk(g)
	}
	resources, _ := m["Resources"].(map[string]any)
	for _, r := range resources {
		if rm, ok := r.(map[string]any); ok {
			if typ, _ := rm["Type"].(string); strings.HasPrefix(typ, "AWS::Serverless::") && rm["Properties"] != nil {
				rm["Properties"] = walk(rm["Properties"])
			}
		}
	}
}

// assumeOmittedPackaged gives each artifact property the template leaves out (or empty)
// that packaging fills with the template's folder, as `aws cloudformation package` does (a
// Serverless function without CodeUri, InlineCode or an image; a layer without
// ContentUri), the S3 location packaging will put there, as sam.AssumePackaged does for
// paths: the transform then sees what CloudFormation will, and does not refuse a code
// location that packaging provides.
func (t *Template) assumeOmittedPackaged(m map[string]any) {
	resources, _ := m["Resources"].(map[string]any)
	for _, a := range t.artifacts {
		if a.Path != "" || a.Metadata || strings.Contains(a.Property, ".") {
			continue
		}
		r, _ := resources[a.LogicalID].(map[string]any)
		props, _ := r["Properties"].(map[string]any)
		if props == nil {
			continue // Globals name a path, never an omission; a resource of a Fn::ForEach loop keeps its template name
		}
		if a.Bucket == "" {
			props[a.Property] = "s3://" + assumedBucket + "/root"
		} else {
			props[a.Property] = map[string]any{a.Bucket: assumedBucket, a.Key: "root"}
		}
	}
}

// assumedBucket is the bucket validation assumes packaged artifacts in (sam.AssumePackaged's).
const assumedBucket = "cairn-packaged"

// transformParams are the parameter values the transform reads (an alias name, a layer's
// name): defaults, and for a parameter without one a stand-in value it accepts.
// unknownParam is the value the transform is given of a parameter with no Default and no
// AllowedValues: the deploy gives it, so no check of the expanded template judges it.
const unknownParam = "cairnvalidate"

func (t *Template) transformParams() map[string]any {
	out := map[string]any{}
	for name, p := range t.Parameters {
		switch {
		case p.HasDefault:
			out[name] = p.Default
		case len(p.AllowedValues) > 0:
			out[name] = p.AllowedValues[0]
		default:
			out[name] = unknownParam
		}
		if strings.HasPrefix(p.Type, "List<") || p.Type == "CommaDelimitedList" {
			out[name] = strings.Split(out[name].(string), ",")
		}
	}
	return out
}

var samPrefix = regexp.MustCompile(`^Transform AWS::Serverless-2016-10-31 failed with: Invalid Serverless Application Specification document\. Number of errors found: \d+\. (Resource with id \[[^]]*\] is invalid\. )?`)

// samMessage is the translator's refusal without its preamble, which the problem's place
// says.
func samMessage(msg string) string {
	return "the Serverless transform refuses it: " + samPrefix.ReplaceAllString(msg, "")
}

func resourceOf(path string) string {
	rest, ok := strings.CutPrefix(path, "Resources.")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, ".")
	return id
}

// graftResources gives the nodes of the expanded template the positions of the template
// as written: a section, resource or value it kept has its own; a generated resource the
// positions of the Serverless resource it comes from (its properties those of the same
// properties there, or of Globals); anything else its nearest placed ancestor's.
func graftResources(root, orig *yaml.Node, origins map[string]string) {
	origRes := value(orig, "Resources")
	globals := value(orig, "Globals")
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		ok := key(orig, k.Value)
		if k.Value != "Resources" {
			graft(k, v, ok, value(orig, k.Value), orig)
			continue
		}
		graft(k, v, ok, origRes, orig)
		for j := 0; j+1 < len(v.Content); j += 2 {
			rk, rv := v.Content[j], v.Content[j+1]
			src := rk.Value
			if from, made := origins[rk.Value]; made {
				src = from
			}
			sk, sv := key(origRes, src), value(origRes, src)
			if sk == nil {
				graft(rk, rv, nil, nil, k)
				continue
			}
			place(rk, sk)
			// a resource an event makes (FnQueue of event Queue of Fn) takes the positions
			// of the event's properties
			if ev := value(value(value(sv, "Properties"), "Events"), strings.TrimPrefix(rk.Value, src)); src != rk.Value && ev != nil {
				sk, sv = key(value(value(sv, "Properties"), "Events"), strings.TrimPrefix(rk.Value, src)), ev
			}
			typ := value(sv, "Type")
			kind := ""
			if typ != nil {
				kind, _ = strings.CutPrefix(typ.Value, "AWS::Serverless::")
			}
			for p := 0; p+1 < len(rv.Content); p += 2 {
				ak, av := rv.Content[p], rv.Content[p+1]
				ok, ov := key(sv, ak.Value), value(sv, ak.Value)
				if ak.Value == "Properties" && ok == nil && sv != nil && value(sv, "Type") == nil {
					ok, ov = sk, sv // an event without Properties: its own position
				}
				if ak.Value == "Properties" && ok == nil {
					ok, ov = sk, nil
				}
				if ak.Value != "Properties" || ov == nil {
					graft(ak, av, ok, ov, sk)
					continue
				}
				place(ak, ok)
				// a property the resource does not set may come from Globals
				for q := 0; q+1 < len(av.Content); q += 2 {
					pk, pv := av.Content[q], av.Content[q+1]
					ok2, ov2 := key(ov, pk.Value), value(ov, pk.Value)
					for _, from := range samProperty[pk.Value] {
						if ok2 == nil {
							ok2, ov2 = key(ov, from), value(ov, from)
						}
					}
					if ok2 == nil && kind != "" {
						ok2, ov2 = key(value(globals, kind), pk.Value), value(value(globals, kind), pk.Value)
					}
					if ok2 == nil {
						ok2 = ok
					}
					graft(pk, pv, ok2, ov2, ok)
				}
			}
		}
	}
}

// samProperty are the Serverless properties a generated property comes from, where their
// names differ.
var samProperty = map[string][]string{
	"Path": {"RolePath"}, "ManagedPolicyArns": {"Policies"}, "Code": {"CodeUri", "InlineCode", "ImageUri"},
	"TracingConfig": {"Tracing"}, "DeadLetterConfig": {"DeadLetterQueue"}, "Content": {"ContentUri"},
	"EventSourceArn": {"Queue", "Stream", "Broker", "Cluster"}, "TopicArn": {"Topic"}, "ScheduleExpression": {"Schedule"},
	"EventPattern": {"Pattern"}, "DefinitionString": {"Definition"}, "DefinitionS3Location": {"DefinitionUri"},
	"RoleArn": {"Role"}, "StateMachineName": {"Name"}, "StateMachineType": {"Type"}, "LoggingConfiguration": {"Logging"},
}

// graft places k and the tree of v: at ok and ov where the original has them, else at
// parent's position.
func graft(k, v, ok, ov, parent *yaml.Node) {
	if ok != nil {
		place(k, ok)
	} else {
		place(k, parent)
	}
	at := ov
	if at == nil {
		at = k
	}
	graftValue(v, ov, at)
}

func graftValue(v, ov, fallback *yaml.Node) {
	if ov != nil {
		place(v, ov)
	} else {
		place(v, fallback)
	}
	switch v.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(v.Content); i += 2 {
			ck, cv := v.Content[i], v.Content[i+1]
			ok, okv := key(ov, ck.Value), value(ov, ck.Value)
			if ok != nil {
				place(ck, ok)
			} else {
				place(ck, v)
			}
			next := okv
			fb := ck
			graftValue(cv, next, fb)
		}
	case yaml.SequenceNode:
		for i, c := range v.Content {
			var oc *yaml.Node
			if ov != nil && ov.Kind == yaml.SequenceNode && i < len(ov.Content) {
				oc = resolve(ov.Content[i])
			}
			graftValue(c, oc, v)
		}
	}
}

func place(n, at *yaml.Node) {
	if n != nil && at != nil {
		n.Line, n.Column = at.Line, at.Column
	}
}
