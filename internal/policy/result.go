package policy

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/internal/verdict"
)

// Result is one deny or warn of a policy: the verdict's, which plans and runs record and
// the deployer reads without linking the policy engine.
type Result = verdict.Result

// Denied reports whether any result is a denial.
func Denied(rs []Result) bool {
	for _, r := range rs {
		if r.Level == Deny {
			return true
		}
	}
	return false
}

func compareResults(a, b Result) int {
	return cmp.Or(cmp.Compare(levelRank(a.Level), levelRank(b.Level)), strings.Compare(a.Rule, b.Rule),
		strings.Compare(a.Origin, b.Origin), strings.Compare(a.Stack, b.Stack), strings.Compare(a.Resource, b.Resource),
		strings.Compare(a.Msg, b.Msg))
}

func levelRank(l string) int {
	if l == Deny {
		return 0
	}
	return 1
}

// results reads a deny or warn set's value: each element a message string, or an object
// with msg (and stack, resource).
func results(origin string, q query, v any) ([]Result, error) {
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s policy %s: %s is %s, not a set of messages: write `%s contains msg if { ... }`", origin, q.rule, q.level, kind(v), q.level)
	}
	out := make([]Result, 0, len(items))
	for _, it := range items {
		r := Result{Level: q.level, Rule: q.rule, Origin: origin}
		switch it := it.(type) {
		case string:
			r.Msg = it
		case map[string]any:
			r.Msg, _ = it["msg"].(string)
			r.Stack, _ = it["stack"].(string)
			r.Resource, _ = it["resource"].(string)
			if r.Msg == "" {
				b, _ := json.Marshal(it)
				r.Msg = string(b)
			}
		default:
			b, _ := json.Marshal(it)
			r.Msg = string(b)
		}
		out = append(out, r)
	}
	return out, nil
}

func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
