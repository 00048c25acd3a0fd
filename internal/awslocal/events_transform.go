package awslocal

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// maxTargetsPerRule is EventBridge's quota of targets per rule. See
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html ("Targets per
// rule: 5") and PutTargets' LimitExceededException.
const maxTargetsPerRule = 5

// transformerKey is what a key of an input transformer's InputPathsMap may be.
var transformerKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// parseTarget reads a target as PutTargets and AWS::Events::Rule give it: Id, Arn, and at
// most one of Input, InputPath and InputTransformer (InputPathsMap and InputTemplate).
func parseTarget(m map[string]any) (ruleTarget, error) {
	t := ruleTarget{ID: text(m["Id"]), ARN: text(m["Arn"]), Input: text(m["Input"]), InputPath: text(m["InputPath"])}
	given := 0
	for _, k := range []string{"Input", "InputPath", "InputTransformer"} {
		if _, ok := m[k]; ok {
			given++
		}
	}
	if given > 1 {
		return t, fmt.Errorf("Target %s: only one of Input, InputPath and InputTransformer may be given", t.ID)
	}
	if t.InputPath != "" {
		if _, err := jsonPath(t.InputPath); err != nil {
			return t, fmt.Errorf("Target %s: InputPath %s: %w", t.ID, t.InputPath, err)
		}
	}
	tr, ok := m["InputTransformer"]
	if !ok {
		return t, nil
	}
	tm := object(tr)
	t.Template = text(tm["InputTemplate"])
	if t.Template == "" {
		return t, fmt.Errorf("Target %s: InputTransformer needs an InputTemplate", t.ID)
	}
	paths := object(tm["InputPathsMap"])
	if len(paths) > 100 {
		return t, fmt.Errorf("Target %s: InputPathsMap has %d entries; at most 100 are allowed", t.ID, len(paths))
	}
	t.PathsMap = map[string]string{}
	for k, v := range paths {
		if !transformerKey.MatchString(k) || strings.HasPrefix(k, "aws.") {
			return t, fmt.Errorf("Target %s: InputPathsMap key %q must be letters, digits, _ or - (aws. is reserved)", t.ID, k)
		}
		if _, err := jsonPath(text(v)); err != nil {
			return t, fmt.Errorf("Target %s: InputPathsMap %s: %w", t.ID, k, err)
		}
		t.PathsMap[k] = text(v)
	}
	return t, nil
}

// listing is a target as ListTargetsByRule answers it.
func (t ruleTarget) listing() map[string]any {
	m := map[string]any{"Id": t.ID, "Arn": t.ARN}
	switch {
	case t.Input != "":
		m["Input"] = t.Input
	case t.InputPath != "":
		m["InputPath"] = t.InputPath
	case t.Template != "":
		m["InputTransformer"] = map[string]any{"InputPathsMap": t.PathsMap, "InputTemplate": t.Template}
	}
	return m
}

// body is what the target receives of an event: its Input, the part InputPath selects, or
// the InputTemplate with each <key> of InputPathsMap replaced by the value its path selects
// (inside a JSON string, a string's characters; elsewhere, the value's JSON; null or
// nothing for a path that selects nothing), and <aws.events.rule-name>,
// <aws.events.rule-arn>, <aws.events.event> and <aws.events.event.json>. See
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-transform-target-input.html.
func (t ruleTarget) body(payload []byte, ruleName, ruleARN string) string {
	switch {
	case t.Input != "":
		return t.Input
	case t.InputPath == "" && t.Template == "":
		return string(payload)
	}
	var event any
	if json.Unmarshal(payload, &event) != nil {
		return string(payload)
	}
	if t.InputPath != "" {
		v, _ := selectPath(event, t.InputPath)
		b, _ := json.Marshal(v)
		return string(b)
	}
	values := map[string]any{"aws.events.rule-name": ruleName, "aws.events.rule-arn": ruleARN, "aws.events.event": string(payload), "aws.events.event.json": event}
	for k, p := range t.PathsMap {
		if v, ok := selectPath(event, p); ok {
			values[k] = v
		} else {
			values[k] = nil
		}
	}
	var out strings.Builder
	inString := false
	for i := 0; i < len(t.Template); i++ {
		c := t.Template[i]
		if c == '"' && (i == 0 || t.Template[i-1] != '\\') {
			inString = !inString
		}
		if c == '<' {
			if end := strings.IndexByte(t.Template[i:], '>'); end > 0 {
				if v, ok := values[t.Template[i+1:i+end]]; ok {
					out.WriteString(render(v, inString))
					i += end
					continue
				}
			}
		}
		out.WriteByte(c)
	}
	return out.String()
}

// render is a value as a template placeholder gives it.
func render(v any, inString bool) string {
	if v == nil {
		if inString {
			return ""
		}
		return "null"
	}
	b, _ := json.Marshal(v)
	if s, ok := v.(string); ok && inString {
		q, _ := json.Marshal(s)
		return string(q[1 : len(q)-1])
	}
	return string(b)
}

// pathStep is one step of a JSON path: a member name, or an index when name is "".
type pathStep struct {
	name  string
	index int
}

// jsonPath reads the JSON paths EventBridge takes: $ then .name and [index] steps.
func jsonPath(p string) ([]pathStep, error) {
	if !strings.HasPrefix(p, "$") {
		return nil, fmt.Errorf("a JSON path starts with $")
	}
	var steps []pathStep
	rest := p[1:]
	for rest != "" {
		switch rest[0] {
		case '.':
			rest = rest[1:]
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			if end == 0 {
				return nil, fmt.Errorf("an empty member name")
			}
			steps, rest = append(steps, pathStep{name: rest[:end]}), rest[end:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("an unclosed [")
			}
			inner := rest[1:end]
			if n, err := strconv.Atoi(inner); err == nil && n >= 0 {
				steps = append(steps, pathStep{index: n})
			} else if len(inner) >= 2 && (inner[0] == '\'' || inner[0] == '"') && inner[len(inner)-1] == inner[0] {
				steps = append(steps, pathStep{name: inner[1 : len(inner)-1]})
			} else {
				return nil, fmt.Errorf("[%s] is neither an index nor a quoted name", inner)
			}
			rest = rest[end+1:]
		default:
			return nil, fmt.Errorf("unexpected %q", rest)
		}
	}
	return steps, nil
}

// selectPath returns what path selects of doc, and whether it selects anything.
func selectPath(doc any, path string) (any, bool) {
	steps, err := jsonPath(path)
	if err != nil {
		return nil, false
	}
	v := doc
	for _, s := range steps {
		switch x := v.(type) {
		case map[string]any:
			if s.name == "" {
				return nil, false
			}
			var ok bool
			if v, ok = x[s.name]; !ok {
				return nil, false
			}
		case []any:
			if s.name != "" || s.index >= len(x) {
				return nil, false
			}
			v = x[s.index]
		default:
			return nil, false
		}
	}
	return v, true
}

// parseTargets reads PutTargets' targets (1 to 10).
func parseTargets(in []map[string]any) ([]ruleTarget, error) {
	if len(in) < 1 || len(in) > 10 {
		return nil, eventsErr("ValidationException", "1 validation error detected: Value at 'targets' failed to satisfy constraint: Member must have length less than or equal to 10 and greater than or equal to 1")
	}
	out := make([]ruleTarget, 0, len(in))
	for _, m := range in {
		t, err := parseTarget(m)
		if err != nil {
			return nil, eventsErr("ValidationException", "%s", err.Error())
		}
		out = append(out, t)
	}
	return out, nil
}

// checkTargetCount refuses targets that would give rule r more than five, as PutTargets
// does (LimitExceededException). Called with e.mu.
func checkTargetCount(r *rule, add []ruleTarget) error {
	ids := map[string]bool{}
	for _, t := range r.targets {
		ids[t.ID] = true
	}
	for _, t := range add {
		ids[t.ID] = true
	}
	if len(ids) > maxTargetsPerRule {
		return eventsErr("LimitExceededException", "The requested resource exceeds the maximum number allowed: rule %s would have %d targets, and a rule can have at most %d (remove some with RemoveTargets first).", r.name, len(ids), maxTargetsPerRule)
	}
	return nil
}
