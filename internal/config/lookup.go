package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Lookup is a reference from a stack parameter to another stack's output, resolved at
// deploy time.
type Lookup struct {
	// Kind is "output" (a stack in this config: adds a dependency) or "xref" (any stack,
	// named by its full CloudFormation name: no dependency).
	Kind string
	// Stack is the name as written: a config stack name for output, a CloudFormation stack
	// name for xref.
	Stack string
	// StackName is the CloudFormation name of the stack whose output is read.
	StackName string
	// Output is the output's name.
	Output string
	// Param is the parameter whose value holds the lookup.
	Param string
}

// lookupMatch is one ${KIND ARGS} in a parameter value, at v[start:end].
type lookupMatch struct {
	start, end int
	kind, args string
}

// findLookups returns the ${KIND ARGS} in v: KIND is letters and underscores, then
// whitespace, then ARGS up to the closing brace. The whitespace keeps CloudFormation-style
// ${AWS::Region} strings, which are not lookups, untouched. (A hand-written scanner: a
// 10,000-stack config has tens of thousands of values.)
func findLookups(v string) []lookupMatch {
	var out []lookupMatch
	for i := 0; ; {
		j := strings.Index(v[i:], "${")
		if j < 0 {
			return out
		}
		start := i + j
		k := start + 2
		for k < len(v) && (v[k] == '_' || 'a' <= v[k] && v[k] <= 'z' || 'A' <= v[k] && v[k] <= 'Z') {
			k++
		}
		kindEnd := k
		for k < len(v) && strings.IndexByte(" \t\n\r\f", v[k]) >= 0 {
			k++
		}
		if kindEnd == start+2 || k == kindEnd {
			i = start + 2
			continue
		}
		end := strings.IndexByte(v[k:], '}')
		if end < 0 {
			return out
		}
		out = append(out, lookupMatch{start: start, end: k + end + 1, kind: v[start+2 : kindEnd], args: v[k : k+end]})
		i = k + end + 1
	}
}

// parseLookup parses the KIND and ARGS of one ${KIND ARGS}.
func parseLookup(kind, args string) (Lookup, error) {
	args = strings.TrimSpace(args)
	switch kind {
	case "output":
		stack, output, ok := strings.Cut(args, "::")
		if !ok {
			stack, output, ok = strings.Cut(args, ".")
		}
		if !ok || stack == "" || output == "" {
			return Lookup{}, fmt.Errorf("malformed lookup ${output %s}: write ${output STACK::Output}", args)
		}
		return Lookup{Kind: kind, Stack: stack, Output: output}, nil
	case "xref":
		stack, output, ok := strings.Cut(args, "::")
		if !ok || stack == "" || output == "" {
			return Lookup{}, fmt.Errorf("malformed lookup ${xref %s}: write ${xref FULL-STACK-NAME::Output}", args)
		}
		return Lookup{Kind: kind, Stack: stack, StackName: stack, Output: output}, nil
	}
	return Lookup{}, fmt.Errorf("unknown lookup ${%s %s}: cairn supports ${output STACK::Output} and ${xref FULL-STACK-NAME::Output}", kind, args)
}

// ResolveParameters returns s's parameters with every lookup replaced by the output it
// names. outputs is called with the CloudFormation stack name (Lookup.StackName, for both
// kinds) and the output name. If some outputs are missing, it returns an error naming
// each of them and no parameters, since a stack must not deploy with a lookup unresolved.
func ResolveParameters(s *Stack, outputs func(stack, output string) (string, bool)) (map[string]string, error) {
	stackNames := map[[2]string]string{}
	for _, l := range s.Lookups {
		stackNames[[2]string{l.Kind, l.Stack}] = l.StackName
	}
	names := make([]string, 0, len(s.Parameters))
	for name := range s.Parameters {
		names = append(names, name)
	}
	slices.Sort(names)
	var errs []error
	out := make(map[string]string, len(s.Parameters))
	for _, name := range names {
		v := s.Parameters[name]
		var b strings.Builder
		last := 0
		for _, lm := range findLookups(v) {
			b.WriteString(v[last:lm.start])
			last = lm.end
			b.WriteString(resolveOne(s, name, v[lm.start:lm.end], lm, stackNames, outputs, &errs))
		}
		b.WriteString(v[last:])
		out[name] = b.String()
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// resolveOne returns the value of one lookup m of parameter name, or m itself after
// recording why it has none.
func resolveOne(s *Stack, name, m string, lm lookupMatch, stackNames map[[2]string]string, outputs func(stack, output string) (string, bool), errs *[]error) string {
	l, err := parseLookup(lm.kind, lm.args)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("stack %s: parameter %s: %w", s.Name, name, err))
		return m
	}
	stackName, ok := stackNames[[2]string{l.Kind, l.Stack}]
	if !ok {
		stackName = l.StackName
	}
	if stackName == "" {
		*errs = append(*errs, fmt.Errorf("stack %s: parameter %s: %s names a stack the config does not know: reload the config", s.Name, name, m))
		return m
	}
	v, ok := outputs(stackName, l.Output)
	if !ok {
		*errs = append(*errs, fmt.Errorf("stack %s: parameter %s: %s: stack %s has no output %s yet: deploy %s first", s.Name, name, m, stackName, l.Output, l.Stack))
		return m
	}
	return v
}

// CheckResolved checks the parameter values s deploys with, its lookups resolved, against
// its template's constraints, before its change set is made: a value read from another
// stack's output can break an AllowedPattern that no literal could be checked for. The
// error names the stack and each refused parameter (NoEcho values are not shown) and wraps
// template.ErrParameter. A stack without a parsed template (template_url) passes.
func CheckResolved(s *Stack, values map[string]string) error {
	if s.Template == nil {
		return nil
	}
	if err := s.Template.CheckParameters(values); err != nil {
		return fmt.Errorf("stack %s: %w: fix the value in the config or the output it reads", s.Name, err)
	}
	return nil
}
