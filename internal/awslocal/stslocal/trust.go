package stslocal

import (
	"encoding/json"
	"path"
	"strings"
)

// Admits reports whether the trust policy (an AssumeRolePolicyDocument, as JSON) lets
// caller assume the role with externalID: an Allow statement for sts:AssumeRole whose
// principal and conditions match, and no such Deny. Conditions on sts:ExternalId,
// aws:PrincipalArn and aws:PrincipalAccount are evaluated; a statement with any other
// condition key does not match (the emulator cannot tell), so it never admits more than
// AWS would.
func Admits(trust string, caller Caller, externalID string) bool {
	var doc struct {
		Statement json.RawMessage
	}
	if json.Unmarshal([]byte(trust), &doc) != nil {
		return false
	}
	var statements []statement
	if json.Unmarshal(doc.Statement, &statements) != nil {
		var one statement
		if json.Unmarshal(doc.Statement, &one) != nil {
			return false
		}
		statements = []statement{one}
	}
	allowed := false
	for _, st := range statements {
		if !st.matches(caller, externalID) {
			continue
		}
		switch st.Effect {
		case "Deny":
			return false
		case "Allow":
			allowed = true
		}
	}
	return allowed
}

type statement struct {
	Effect    string
	Action    json.RawMessage
	Principal json.RawMessage
	Condition map[string]map[string]json.RawMessage
}

func (st statement) matches(caller Caller, externalID string) bool {
	action := false
	for _, a := range strs(st.Action) {
		if a == "*" || strings.EqualFold(a, "sts:AssumeRole") || strings.EqualFold(a, "sts:*") {
			action = true
		}
	}
	if !action || !principalMatches(st.Principal, caller) {
		return false
	}
	for op, keys := range st.Condition {
		for key, raw := range keys {
			if !condition(op, strings.ToLower(key), strs(raw), caller, externalID) {
				return false
			}
		}
	}
	return true
}

// principalMatches: "*", or {"AWS": ...} naming the caller's account, its root, or the
// caller (a role's ARN for its sessions). Service and federated principals are not API
// callers of the emulator.
func principalMatches(raw json.RawMessage, caller Caller) bool {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s == "*"
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	for _, p := range strs(m["AWS"]) {
		switch {
		case p == "*", p == caller.Account, p == "arn:aws:iam::"+caller.Account+":root":
			return true
		case arnMatches(p, caller, false):
			return true
		}
	}
	return false
}

// arnMatches reports whether pattern (an IAM ARN; with like, ArnLike's * and ?) names the
// caller: a session matches its role's ARN; plain credentials match any ARN of their
// account (see the package comment).
func arnMatches(pattern string, caller Caller, like bool) bool {
	if caller.Session == nil {
		parts := strings.SplitN(pattern, ":", 6)
		if len(parts) < 6 || parts[0] != "arn" || (parts[2] != "iam" && parts[2] != "sts") {
			return false
		}
		return glob(parts[4], caller.Account, like)
	}
	return glob(pattern, caller.Session.RoleARN, like) || glob(pattern, caller.Session.ARN(), like)
}

func glob(pattern, s string, like bool) bool {
	if !like {
		return pattern == s
	}
	ok, err := path.Match(pattern, s)
	return err == nil && ok
}

func condition(op, key string, values []string, caller Caller, externalID string) bool {
	op = strings.TrimSuffix(op, "IfExists")
	switch key {
	case "sts:externalid":
		return anyMatch(op, values, externalID)
	case "aws:principalaccount":
		return anyMatch(op, values, caller.Account)
	case "aws:principalarn":
		like := op == "ArnLike" || op == "StringLike"
		if op != "ArnEquals" && op != "StringEquals" && !like {
			return false
		}
		for _, v := range values {
			if arnMatches(v, caller, like) {
				return true
			}
		}
		return false
	}
	return false
}

func anyMatch(op string, values []string, got string) bool {
	for _, v := range values {
		switch op {
		case "StringEquals":
			if v == got {
				return true
			}
		case "StringLike":
			if glob(v, got, true) {
				return true
			}
		}
	}
	return false
}

// strs reads a policy value that is a string or a list of strings.
func strs(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var l []string
	_ = json.Unmarshal(raw, &l)
	return l
}
