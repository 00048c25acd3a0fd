package run

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ChangedParameters names, sorted, the parameters whose values differ between was and now.
func ChangedParameters(was, now map[string]string) []string {
	var names []string
	for k, v := range now {
		if w, ok := was[k]; !ok || w != v {
			names = append(names, k)
		}
	}
	for k := range was {
		if _, ok := now[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return names
}

// DescribeParameters names the parameters whose values differ between was and now, for
// the reasons that a reviewed change set is stale. Stored values hold secrets only sealed;
// a sealed value is shown as ****, never as what it seals.
func DescribeParameters(was, now map[string]string) string {
	var diffs []string
	keys := map[string]bool{}
	for k := range was {
		keys[k] = true
	}
	for k := range now {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if was[k] != now[k] {
			diffs = append(diffs, fmt.Sprintf("%s was %s, now %s", k, shown(was[k]), shown(now[k])))
		}
	}
	if len(diffs) == 0 {
		return "parameters differ"
	}
	return strings.Join(diffs, ", ")
}

// sealedRE matches the sealed references stored values hold for secrets
// ({{cairn:noecho@...}}, {{cairn:ssm-secure:...@...}}, ...; see package config).
var sealedRE = regexp.MustCompile(`\{\{cairn:[^{}]*@[^{}]*\}\}`)

// shown is a stored value as a reason shows it: quoted, or **** when it holds a secret.
func shown(v string) string {
	if sealedRE.MatchString(v) {
		return "****"
	}
	return fmt.Sprintf("%q", v)
}

// HashParameters is the stable hash of resolved parameter values, stored in the persistent
// graph so an unchanged stack costs no CloudFormation call.
func HashParameters(params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s=%d:%s\n", len(k), k, len(params[k]), params[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}
