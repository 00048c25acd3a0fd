package sam

import (
	"encoding/json"
	"reflect"
	"sort"
)

// Error is a template the translator refuses, in its words.
type Error struct {
	// LogicalID is the Serverless resource at fault ("" for the template as a whole).
	LogicalID string
	Msg       string
	// Unsupported: AWS's translator expands what cairn's does not (a resource or event
	// type it leaves out), rather than a template the translator refuses.
	Unsupported bool
}

func (e *Error) Error() string { return e.Msg }

func object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb) || reflect.DeepEqual(a, b)
}

// copyProps is a deep copy of m, through JSON.
func copyProps(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// alnum keeps the ASCII letters and digits of s, as SAM does for logical ids.
func alnum(s string) string {
	var out []rune
	for _, r := range s {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			out = append(out, r)
		}
	}
	return string(out)
}
