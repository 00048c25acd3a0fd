package config

import (
	"fmt"
	"regexp"
	"strings"
)

// Lookup is one ${KIND ARGS} of a stack's parameters or tags. Deploy-time lookups (output,
// xref, rxref, cfn, ssm) are resolved in the deployer from data it fetched; var and file
// are read when the bundle is loaded, and their values are kept here so a later step
// resolves them without the bundle.
type Lookup struct {
	// Kind is output (a stack of this config: adds a dependency), xref (any stack, by its
	// full CloudFormation name), rxref (a stack of this namespace outside this config), cfn
	// (Runway's spelling of xref), ssm (an SSM parameter), var (a variable) or file (a
	// file of the bundle).
	Kind LookupKind
	// Stack is the name as written: a config stack name for output and rxref, a
	// CloudFormation stack name for xref and cfn.
	Stack string `json:",omitempty"`
	// StackName is the CloudFormation name of the stack whose output is read.
	StackName string `json:",omitempty"`
	// Output is the output's name.
	Output string `json:",omitempty"`
	// Name is the SSM parameter's name (with a :VERSION or :LABEL selector when written)
	// or the variable's name.
	Name string `json:",omitempty"`
	// Arg is the lookup's arguments as evaluated when the bundle was loaded (nested var
	// and file lookups replaced), for var and file: Value's key.
	Arg string `json:",omitempty"`
	// Value is what a var or file lookup read.
	Value string `json:",omitempty"`
	// Param is the parameter whose value holds the lookup; Tag the tag's key for a lookup
	// in a tag.
	Param string `json:",omitempty"`
	Tag   string `json:",omitempty"`
}

// LookupKind is what a ${KIND ARGS} lookup reads. Adding one: its constant and its row of
// lookupKinds here, its arguments in parseLookup, its value in resolve.go (atLoad, read
// when the bundle is loaded; atDeploy, from what the deployer fetched), and, for a kind
// read at deploy time, its fetch in internal/deployer (start.go, before plan.Make).
type LookupKind string

// The lookups cairn knows.
const (
	KindOutput LookupKind = "output" // an output of a stack of this config: adds a dependency
	KindXref   LookupKind = "xref"   // an output of any stack, by its CloudFormation name
	KindRxref  LookupKind = "rxref"  // an output of a stack of this namespace outside this config
	KindCFN    LookupKind = "cfn"    // Runway's spelling of xref
	KindSSM    LookupKind = "ssm"    // an SSM parameter
	KindVar    LookupKind = "var"    // a variable
	KindFile   LookupKind = "file"   // a file of the bundle
	KindSplit  LookupKind = "split"  // a value split into a list
	KindJoin   LookupKind = "join"   // values joined
)

// lookupKinds are the lookups cairn knows, in the order messages list them, each with
// whether it reads another stack's outputs by its CloudFormation name (in the reading
// stack's account and region, adding no dependency).
var lookupKinds = []struct {
	kind   LookupKind
	byName bool
}{
	{KindOutput, false},
	{KindXref, true},
	{KindRxref, true},
	{KindCFN, true},
	{KindSSM, false},
	{KindVar, false},
	{KindFile, false},
	{KindSplit, false},
	{KindJoin, false},
}

// Kinds are the lookups cairn knows, in the order messages list them.
func Kinds() []LookupKind {
	out := make([]LookupKind, len(lookupKinds))
	for i, k := range lookupKinds {
		out[i] = k.kind
	}
	return out
}

// ByStackName reports whether a lookup of kind k reads another stack's outputs by its
// CloudFormation name, in the reading stack's account and region: the plan looks that
// stack up, and it orders nothing.
func (k LookupKind) ByStackName() bool {
	for _, row := range lookupKinds {
		if row.kind == k {
			return row.byName
		}
	}
	return false
}

// maxDepth bounds the nesting of lookups in one value.
const maxDepth = 8

// part is one piece of a parsed value: literal text, or a lookup with its parsed arguments.
type part struct {
	text string
	// lookup marks a ${KIND ARGS}; raw is its source text.
	lookup bool
	kind   LookupKind
	raw    string
	args   []part
}

// SyntaxError is a value that does not parse.
type SyntaxError struct {
	// Offset is the byte offset in the value where the problem starts.
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return e.Msg }

// parseValue splits a parameter or tag value into literal text and lookups. A lookup is
// ${KIND ARGS}: KIND is letters and underscores, then whitespace, then ARGS up to the
// matching closing brace; ARGS may hold lookups of their own. The whitespace keeps
// CloudFormation-style ${AWS::Region} strings, which are not lookups, untouched.
func parseValue(v string) ([]part, error) {
	sc := scanner{v: v}
	parts, err := sc.parts(0)
	if err != nil {
		return nil, err
	}
	return parts, nil
}

type scanner struct {
	v string
	i int
}

// lookupStart returns the end of KIND and the start of ARGS when a ${KIND ARGS} starts at i.
func (sc *scanner) lookupStart(i int) (kindEnd, argsStart int, ok bool) {
	k := i + 2
	for k < len(sc.v) && (sc.v[k] == '_' || 'a' <= sc.v[k] && sc.v[k] <= 'z' || 'A' <= sc.v[k] && sc.v[k] <= 'Z') {
		k++
	}
	kindEnd = k
	for k < len(sc.v) && strings.IndexByte(" \t\n\r\f", sc.v[k]) >= 0 {
		k++
	}
	return kindEnd, k, kindEnd > i+2 && k > kindEnd
}

// parts parses up to the end of the value (depth 0) or the '}' closing the lookup being
// parsed (depth > 0), which it leaves unread.
func (sc *scanner) parts(depth int) ([]part, error) {
	var out []part
	// Literal text is always a run of the value as written (a "${" that starts no lookup
	// is kept as is), so a text part is a substring of it, not a copy.
	lit := sc.i
	flush := func() {
		if sc.i > lit {
			out = append(out, part{text: sc.v[lit:sc.i]})
		}
	}
	for sc.i < len(sc.v) {
		c := sc.v[sc.i]
		if c == '}' && depth > 0 {
			flush()
			return out, nil
		}
		if c != '$' || sc.i+1 >= len(sc.v) || sc.v[sc.i+1] != '{' {
			sc.i++
			continue
		}
		start := sc.i
		kindEnd, argsStart, ok := sc.lookupStart(start)
		if !ok {
			if depth == 0 {
				sc.i += 2
				continue
			}
			// ${AWS::Region} inside a lookup's arguments: text, whose brace must not close
			// the lookup.
			j := strings.IndexByte(sc.v[start:], '}')
			if j < 0 {
				return nil, &SyntaxError{start, fmt.Sprintf("%q is not closed: add }", sc.v[start:])}
			}
			sc.i = start + j + 1
			continue
		}
		if depth+1 > maxDepth {
			return nil, &SyntaxError{start, fmt.Sprintf("lookups are nested more than %d deep", maxDepth)}
		}
		flush()
		sc.i = argsStart
		args, err := sc.parts(depth + 1)
		if err != nil {
			return nil, err
		}
		if sc.i >= len(sc.v) {
			return nil, &SyntaxError{start, fmt.Sprintf("lookup %q is not closed: add }", shorten(sc.v[start:]))}
		}
		sc.i++ // the closing brace
		out = append(out, part{lookup: true, kind: LookupKind(sc.v[start+2 : kindEnd]), raw: sc.v[start:sc.i], args: args})
		lit = sc.i
	}
	flush()
	return out, nil
}

func shorten(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

// cutParts splits parts at the first sep found in their literal text (not inside a
// nested lookup).
func cutParts(parts []part, sep string) (before, after []part, found bool) {
	for i, p := range parts {
		if p.lookup {
			continue
		}
		j := strings.Index(p.text, sep)
		if j < 0 {
			continue
		}
		before = append(append([]part(nil), parts[:i]...), textPart(p.text[:j])...)
		after = append(textPart(p.text[j+len(sep):]), parts[i+1:]...)
		return before, after, true
	}
	return parts, nil, false
}

func textPart(s string) []part {
	if s == "" {
		return nil
	}
	return []part{{text: s}}
}

// literal returns the text of parts that hold no lookup.
func literal(parts []part) (string, bool) {
	var b strings.Builder
	for _, p := range parts {
		if p.lookup {
			return "", false
		}
		b.WriteString(p.text)
	}
	return b.String(), true
}

var (
	// ssmNameRE is what SSM accepts as a parameter name, with an optional :VERSION or
	// :LABEL selector.
	ssmNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.\-/]+(:[a-zA-Z0-9_.\-]+)?$`)
	varNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.\-]*$`)
)

// fileCodecs are the encodings of ${file CODEC:PATH}.
var fileCodecs = []string{"plain", "base64", "json", "yaml"}

// parseLookup parses the KIND and evaluated ARGS of a lookup other than split and join.
func parseLookup(kind LookupKind, args string) (Lookup, error) {
	args = strings.TrimSpace(args)
	stackOutput := func(seps []string, want string) (Lookup, error) {
		for _, sep := range seps {
			if stack, output, ok := strings.Cut(args, sep); ok && stack != "" && output != "" && !strings.ContainsAny(output, ":.") {
				return Lookup{Kind: kind, Stack: stack, Output: output}, nil
			}
		}
		return Lookup{}, fmt.Errorf("malformed lookup ${%s %s}: write ${%s %s}", kind, args, kind, want)
	}
	switch kind {
	case KindOutput:
		return stackOutput([]string{"::", "."}, "STACK::Output")
	case KindRxref:
		return stackOutput([]string{"::"}, "STACK::Output (a stack of this namespace outside this config)")
	case KindXref:
		l, err := stackOutput([]string{"::"}, "FULL-STACK-NAME::Output")
		l.StackName = l.Stack
		return l, err
	case KindCFN:
		l, err := stackOutput([]string{"."}, "FULL-STACK-NAME.Output")
		l.StackName = l.Stack
		return l, err
	case KindSSM:
		name := args
		switch {
		case name == "":
			return Lookup{}, fmt.Errorf("malformed lookup ${ssm}: write ${ssm /path/name}")
		case len(name) > 2048 || !ssmNameRE.MatchString(name):
			return Lookup{}, fmt.Errorf("malformed lookup ${ssm %s}: an SSM parameter name holds only letters, digits and _.-/ (at most 2048), with an optional :VERSION", name)
		case strings.Contains(name, "/") && !strings.HasPrefix(name, "/"):
			return Lookup{}, fmt.Errorf("malformed lookup ${ssm %s}: a parameter name with / must start with /: write ${ssm /%s}", name, name)
		}
		return Lookup{Kind: kind, Name: name}, nil
	case KindVar:
		name, _, _ := strings.Cut(args, "::")
		name = strings.TrimSpace(name)
		if !varNameRE.MatchString(name) {
			return Lookup{}, fmt.Errorf("malformed lookup ${var %s}: write ${var NAME} or ${var NAME::default}, NAME being letters, digits and _.-", args)
		}
		return Lookup{Kind: kind, Name: name, Arg: args}, nil
	case KindFile:
		codec, p, ok := strings.Cut(args, ":")
		if !ok || p == "" {
			return Lookup{}, fmt.Errorf("malformed lookup ${file %s}: write ${file CODEC:PATH}, CODEC being %s", args, strings.Join(fileCodecs, ", "))
		}
		found := false
		for _, c := range fileCodecs {
			found = found || c == codec
		}
		if !found {
			return Lookup{}, fmt.Errorf("unknown codec %q of ${file %s}%s: use %s", codec, args, suggestList(codec, fileCodecs), strings.Join(fileCodecs, ", "))
		}
		return Lookup{Kind: kind, Name: codec + ":" + strings.TrimPrefix(p, "file://"), Arg: args}, nil
	}
	var names []string
	for _, k := range Kinds() {
		names = append(names, string(k))
	}
	return Lookup{}, fmt.Errorf("unknown lookup ${%s %s}%s: cairn supports %s", kind, args, suggestList(string(kind), names), kindList())
}

func kindList() string {
	var out []string
	for _, k := range Kinds() {
		out = append(out, "${"+string(k)+"}")
	}
	return strings.Join(out, ", ")
}
