package cfnlocal

import (
	"encoding/json"
	"fmt"
	"path"
)

type policyStatement struct {
	Effect      string
	Action      any
	NotAction   any
	Resource    any
	NotResource any
	Condition   map[string]map[string]any
}

type stackPolicy struct{ Statement []policyStatement }

func parsePolicy(body string) (*stackPolicy, error) {
	var p stackPolicy
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		return nil, validation("Stack policy is not valid JSON: %v", err)
	}
	for i, st := range p.Statement {
		if st.Effect != "Allow" && st.Effect != "Deny" {
			return nil, validation("Stack policy statement %d: Effect must be Allow or Deny, not %q", i, st.Effect)
		}
	}
	return &p, nil
}

func strList(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, scalarString(e))
		}
		return out
	}
	return nil
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok || p == s || p == "*" {
			return true
		}
	}
	return false
}

func (st policyStatement) matches(action string, r *resource) bool {
	res := "LogicalResourceId/" + r.LogicalID
	if st.Action != nil && !matchAny(strList(st.Action), action) {
		return false
	}
	if st.NotAction != nil && matchAny(strList(st.NotAction), action) {
		return false
	}
	if st.Resource != nil && !matchAny(strList(st.Resource), res) {
		return false
	}
	if st.NotResource != nil && matchAny(strList(st.NotResource), res) {
		return false
	}
	for op, kv := range st.Condition {
		for k, v := range kv {
			if k != "ResourceType" {
				continue
			}
			switch op {
			case "StringEquals":
				if !contains(strList(v), r.Type) {
					return false
				}
			case "StringLike":
				if !matchAny(strList(v), r.Type) {
					return false
				}
			}
		}
	}
	return true
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// policyDeniesAction returns the denial reason when the stack policy forbids action on r.
func (s *Service) policyDeniesAction(st *stack, r *resource, action string) string {
	if st.Policy == "" {
		return ""
	}
	p, err := parsePolicy(st.Policy)
	if err != nil {
		return ""
	}
	allowed := false
	for i, stmt := range p.Statement {
		if !stmt.matches(action, r) {
			continue
		}
		if stmt.Effect == "Deny" {
			return fmt.Sprintf("Action denied by stack policy: Statement [#%d] does not allow [%s] for resource [LogicalResourceId/%s]", i+1, action, r.LogicalID)
		}
		allowed = true
	}
	if !allowed {
		return fmt.Sprintf("Action not allowed by stack policy: no statement allows [%s] for resource [LogicalResourceId/%s]", action, r.LogicalID)
	}
	return ""
}

func (s *Service) policyDenies(st *stack, r *resource, replace bool) string {
	if replace {
		return s.policyDeniesAction(st, r, "Update:Replace")
	}
	return s.policyDeniesAction(st, r, "Update:Modify")
}
