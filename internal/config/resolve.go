package config

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/seal"
)

// Values are what deploy-time lookups read. The deployer fetches them (DescribeStacks,
// GetParameters) and passes them in as data, so resolving is a pure function.
type Values struct {
	// Outputs answers an output of a stack by its CloudFormation name (xref, rxref, cfn:
	// in the account and region of the stack reading it), and of output lookups when
	// Output is nil.
	Outputs func(stackName, output string) (string, bool)
	// Output answers an output of a stack of the config by its config name (output
	// lookups).
	Output func(stack, output string) (string, bool)
	// SSM holds the SSM parameters the lookups name, by name as written.
	SSM map[string]SSMValue
}

// SSMValue is one SSM parameter as cairn keeps it. A SecureString's value is never kept:
// only its hash, and parameters resolve to a sealed reference that the deployer unseals
// (Unseal) just before the value goes to CloudFormation.
type SSMValue struct {
	Type    string `json:"type"` // String, StringList or SecureString
	Value   string `json:"value,omitempty"`
	Hash    string `json:"hash,omitempty"`
	Version int64  `json:"version,omitempty"`
	// Unkeyed is a SecureString's hash as cairn made it before seals were keyed, kept in
	// memory only (never written): the plan compares it with a graph written then.
	Unkeyed string `json:"-"`
}

// SecureString is the SSM type whose values cairn never stores.
const SecureString = "SecureString"

// NewSSMValue keeps what cairn may keep of parameter name: a SecureString's seal under k
// only.
func NewSSMValue(k seal.Key, name, typ, value string, version int64) SSMValue {
	if typ == SecureString {
		v := SSMValue{Type: typ, Hash: secretHash(k, name, value), Version: version}
		if k.Keyed() {
			v.Unkeyed = secretHash(seal.Unkeyed, name, value)
		}
		return v
	}
	return SSMValue{Type: typ, Value: value, Version: version}
}

// secretHash identifies a SecureString value without revealing it: a changed value
// changes the stack's input hash, and the deployer checks the value it unseals is the
// one the run resolved.
func secretHash(k seal.Key, name, value string) string { return k.Sum(secureDomain, name, value) }

// sealedRE matches the sealed references that stand for secrets in stored parameter
// values (see secret.go): {{cairn:ssm-secure:NAME@HASH}} for a SecureString ('@' is not
// allowed in SSM names), {{cairn:bundle@HASH}} for a NoEcho value the bundle gives, and
// {{cairn:noecho@HASH}} for a NoEcho value as a run stores it once resolved.
var sealedRE = regexp.MustCompile(`\{\{cairn:(ssm-secure:([a-zA-Z0-9_.\-/:]+)|output:([A-Za-z0-9_.~%+\-]+)\.([A-Za-z0-9]+)|bundle|noecho)@((?:` + seal.Marker + `)?[0-9a-f]{64})\}\}`)

// The groups of a sealedRE match.
const (
	sealKind     = 1 // ssm-secure:NAME, output:STACK.OUTPUT, bundle or noecho
	sealSSMName  = 2
	sealStack    = 3 // query-escaped config name
	sealOutput   = 4
	sealHash     = 5
	outputDomain = "cairn output"
)

func sealedSecure(name, hash string) string { return "{{cairn:ssm-secure:" + name + "@" + hash + "}}" }

// Sealed lists the SecureString parameters named by sealed references in params, sorted:
// what the deployer reads from SSM to unseal them.
func Sealed(params map[string]string) []string {
	var names []string
	for _, v := range params {
		for _, m := range sealedRE.FindAllStringSubmatch(v, -1) {
			if m[sealSSMName] != "" && !slices.Contains(names, m[sealSSMName]) {
				names = append(names, m[sealSSMName])
			}
		}
	}
	slices.Sort(names)
	return names
}

// Plain is where the values of sealed references are read again, by the deployer, just
// before they go to CloudFormation.
type Plain struct {
	// Key checks the seals (seals made before seals were keyed are checked as they were).
	Key seal.Key
	// SSM holds the SecureStrings fetched just now, by name.
	SSM map[string]string
	// Stack is the stack whose parameters are unsealed, and Bundle the NoEcho values its
	// bundle gives (Stack.BundleSecrets of the downloaded bundle).
	Stack  string
	Bundle []string
	// Outputs holds the secret outputs read again just now, by config name of their stack
	// and output name (SealedOutputs lists those to read).
	Outputs map[[2]string]string
}

// Unseal replaces the sealed references in params with the values plain holds. A value
// whose hash is not the one the run resolved changed meanwhile: the run must not deploy
// what it did not plan. Errors never hold a value.
func Unseal(params map[string]string, plain Plain) (map[string]string, error) {
	out := make(map[string]string, len(params))
	var errs []error
	for k, v := range params {
		out[k] = sealedRE.ReplaceAllStringFunc(v, func(m string) string {
			sm := sealedRE.FindStringSubmatch(m)
			name, hash := sm[sealSSMName], sm[sealHash]
			switch {
			case sm[sealStack] != "":
				stack, output := unescapeName(sm[sealStack]), sm[sealOutput]
				p, ok := plain.Outputs[[2]string{stack, output}]
				switch {
				case !ok:
					errs = append(errs, fmt.Errorf("parameter %s: output %s of stack %s is gone: push again", k, output, stack))
				case !plain.Key.Verify(hash, outputDomain, stack, output, p):
					errs = append(errs, fmt.Errorf("parameter %s: output %s of stack %s changed since the run resolved it: push again", k, output, stack))
				}
				return p
			case name != "":
				p, ok := plain.SSM[name]
				switch {
				case !ok:
					errs = append(errs, fmt.Errorf("parameter %s: SecureString %s is gone from SSM: restore it or change the config, then push again", k, name))
				case !plain.Key.Verify(hash, secureDomain, name, p):
					errs = append(errs, fmt.Errorf("parameter %s: SecureString %s changed since the run resolved it: push again to deploy the new value", k, name))
				}
				return p
			case sm[sealKind] == "bundle":
				for _, p := range plain.Bundle {
					if plain.Key.Verify(hash, bundleDomain, plain.Stack, p) {
						return p
					}
				}
				errs = append(errs, fmt.Errorf("parameter %s: the NoEcho value the run resolved is not in the bundle of stack %s any more: push again", k, plain.Stack))
			default:
				errs = append(errs, fmt.Errorf("parameter %s: a NoEcho value as a run stores it (a hash) cannot be deployed: resolve it again from the bundle", k))
			}
			return m
		})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// result is what a lookup or a whole parameter evaluates to.
type result struct {
	s      string
	list   []string
	isList bool
	// unknown: read at deploy time (when the bundle is loaded).
	unknown bool
	// secret: holds a sealed SecureString.
	secret bool
	// secrets names the SecureStrings it holds.
	secrets []string
}

// String is the value as CloudFormation takes it: a list is comma-delimited, as
// CommaDelimitedList and List<...> parameters want.
func (v result) String() string {
	if v.isList {
		return strings.Join(v.list, ",")
	}
	return v.s
}

// evaluator evaluates parsed values: at load (load set), var and file lookups are read
// and the others recorded; at deploy, every lookup is resolved from vals and the var and
// file values recorded at load.
type evaluator struct {
	load     bool
	vars     func(name string) (string, bool)
	readFile func(codecPath string) (string, error)
	found    []Lookup

	vals     Values
	recorded []Lookup
}

func (e *evaluator) eval(parts []part) (result, error) {
	switch {
	case len(parts) == 0:
		return result{}, nil
	case len(parts) == 1 && parts[0].lookup:
		return e.lookup(parts[0])
	case len(parts) == 1:
		return result{s: parts[0].text}, nil // text alone: most lookups' arguments
	}
	var out result
	var b strings.Builder
	for _, p := range parts {
		if !p.lookup {
			b.WriteString(p.text)
			continue
		}
		v, err := e.lookup(p)
		if err != nil {
			return result{}, err
		}
		b.WriteString(v.String())
		out.unknown = out.unknown || v.unknown
		out.secret = out.secret || v.secret
		out.secrets = append(out.secrets, v.secrets...)
	}
	out.s = b.String()
	return out, nil
}

// lookupError locates an error in the lookup that caused it.
type lookupError struct {
	raw string
	err error
	// named: err names the lookup itself (a malformed or unknown one).
	named bool
}

func (e *lookupError) Error() string {
	if e.named {
		return e.err.Error()
	}
	return e.raw + ": " + e.err.Error()
}
func (e *lookupError) Unwrap() error { return e.err }

func (e *evaluator) lookup(p part) (result, error) {
	v, err := e.lookupValue(p)
	if err != nil {
		var le *lookupError
		if !errors.As(err, &le) {
			err = &lookupError{raw: p.raw, err: err}
		}
		return result{}, err
	}
	return v, nil
}

func (e *evaluator) lookupValue(p part) (result, error) {
	switch p.kind {
	case KindSplit:
		delimParts, rest, ok := cutParts(p.args, "::")
		delim, lit := literal(delimParts)
		if !ok || !lit || delim == "" {
			return result{}, errors.New("malformed lookup: write ${split DELIMITER::VALUE}, the delimiter written out")
		}
		v, err := e.eval(rest)
		if err != nil {
			return result{}, err
		}
		if v.secret {
			return result{}, errors.New("a SecureString cannot be split: its parts would be stored in plain text")
		}
		if v.unknown {
			return result{unknown: true, isList: true}, nil
		}
		return result{isList: true, list: strings.Split(v.String(), delim)}, nil
	case KindJoin:
		delimParts, rest, ok := cutParts(p.args, "::")
		delim, lit := literal(delimParts)
		if !ok || !lit {
			return result{}, errors.New("malformed lookup: write ${join DELIMITER::VALUE[::VALUE...]}, the delimiter written out")
		}
		var out result
		var items []string
		for {
			item, more, ok := cutParts(rest, "::")
			v, err := e.eval(item)
			if err != nil {
				return result{}, err
			}
			out.unknown = out.unknown || v.unknown
			out.secret = out.secret || v.secret
			out.secrets = append(out.secrets, v.secrets...)
			if v.isList {
				items = append(items, v.list...)
			} else {
				items = append(items, v.s)
			}
			if !ok {
				break
			}
			rest = more
		}
		out.s = strings.Join(items, delim)
		return out, nil
	}
	argv, err := e.eval(p.args)
	if err != nil {
		return result{}, err
	}
	if argv.unknown || argv.secret {
		return result{}, fmt.Errorf("the arguments of ${%s} must be known when the bundle is loaded: only ${var} and ${file} can be nested there", p.kind)
	}
	l, err := parseLookup(p.kind, argv.String())
	if err != nil {
		return result{}, &lookupError{raw: p.raw, err: err, named: true}
	}
	if e.load {
		return e.atLoad(l)
	}
	return e.atDeploy(l)
}

func (e *evaluator) atLoad(l Lookup) (result, error) {
	switch l.Kind {
	case KindVar:
		_, def, hasDefault := strings.Cut(l.Arg, "::")
		v, ok := e.vars(l.Name)
		switch {
		case ok:
		case hasDefault:
			v = def
		default:
			return result{}, fmt.Errorf("unknown variable %s: define it under variables: in the config or in the --var-file, or give a default with ${var %s::DEFAULT}", l.Name, l.Name)
		}
		l.Value = v
		e.found = append(e.found, l)
		return result{s: v}, nil
	case KindFile:
		v, err := e.readFile(l.Name)
		if err != nil {
			return result{}, err
		}
		l.Value = v
		e.found = append(e.found, l)
		return result{s: v}, nil
	}
	e.found = append(e.found, l)
	return result{unknown: true}, nil
}

func (e *evaluator) atDeploy(l Lookup) (result, error) {
	switch l.Kind {
	case KindVar, KindFile:
		for _, r := range e.recorded {
			if r.Kind == l.Kind && r.Arg == l.Arg {
				return result{s: r.Value}, nil
			}
		}
		return result{}, errors.New("no value was recorded when the bundle was loaded: push the bundle again")
	case KindSSM:
		p, ok := e.vals.SSM[l.Name]
		if !ok {
			return result{}, fmt.Errorf("SSM parameter %s not found: create it (aws ssm put-parameter --name %s --type String --value ...) or fix the name", l.Name, l.Name)
		}
		switch p.Type {
		case SecureString:
			return result{s: sealedSecure(l.Name, p.Hash), secret: true, secrets: []string{l.Name}}, nil
		case "StringList":
			return result{isList: true, list: strings.Split(p.Value, ",")}, nil
		}
		return result{s: p.Value}, nil
	}
	stackName := l.StackName
	for _, r := range e.recorded {
		if r.Kind == l.Kind && r.Stack == l.Stack && r.StackName != "" {
			stackName = r.StackName
		}
	}
	if stackName == "" {
		return result{}, errors.New("names a stack the config does not know: reload the config")
	}
	outputs := e.vals.Outputs
	if l.Kind == KindOutput && e.vals.Output != nil {
		// By config name: two stacks of the config may share a CloudFormation name in two
		// accounts or regions.
		outputs = func(_, output string) (string, bool) { return e.vals.Output(l.Stack, output) }
	}
	if outputs == nil {
		return result{}, fmt.Errorf("stack %s has no output %s", stackName, l.Output)
	}
	v, ok := outputs(stackName, l.Output)
	if !ok {
		if l.Kind == KindOutput {
			return result{}, fmt.Errorf("stack %s has no output %s yet: deploy %s first", stackName, l.Output, l.Stack)
		}
		return result{}, fmt.Errorf("stack %s does not exist or has no output %s: it is not deployed by this config; deploy it first or fix the name", stackName, l.Output)
	}
	if HoldsSealed(v) {
		// A secret output, sealed (SealOutput): it stays sealed in what consumes it.
		return result{s: v, secret: true, secrets: []string{"output " + l.Stack + "::" + l.Output}}, nil
	}
	return result{s: v}, nil
}

// ResolveParameters returns s's parameters with every lookup resolved from vals and the
// var and file values recorded in s.Lookups. A SecureString resolves to a sealed reference
// (see Unseal). If some lookups cannot be resolved (an output or SSM parameter missing),
// it returns an error naming each of them and no parameters, since a stack must not
// deploy with a lookup unresolved.
func ResolveParameters(s *Stack, vals Values) (map[string]string, error) {
	out, _, err := resolveAll(s, s.Parameters, "parameter", vals)
	return out, err
}

// ResolveTags returns s's tags with their lookups resolved, as ResolveParameters does. A
// tag cannot hold a SecureString: tags are shown to anyone who can describe the stack.
func ResolveTags(s *Stack, vals Values) (map[string]string, error) {
	out, secrets, err := resolveAll(s, s.Tags, "tag", vals)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, k := range sortedNames(secrets) {
		var what []string
		for _, e := range secrets[k] {
			if strings.HasPrefix(e, "output ") {
				what = append(what, "secret "+e)
			} else {
				what = append(what, "SecureString "+e)
			}
		}
		errs = append(errs, fmt.Errorf("stack %s: tag %s reads %s: tags are shown to anyone who can describe the stack, so cairn never puts a secret there: use a String parameter", s.Name, k, strings.Join(what, ", ")))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// SecretParameters names, for each parameter of s whose value reads a SecureString, the
// SecureStrings it reads (resolved from vals; unresolvable parameters are left out).
func SecretParameters(s *Stack, vals Values) map[string][]string {
	_, secrets, _ := resolveAll(s, s.Parameters, "parameter", vals)
	return secrets
}

func resolveAll(s *Stack, values map[string]string, what string, vals Values) (map[string]string, map[string][]string, error) {
	e := &evaluator{vals: vals, recorded: s.Lookups}
	var errs []error
	out := make(map[string]string, len(values))
	secrets := map[string][]string{}
	for _, name := range sortedNames(values) {
		raw := values[name]
		parts, err := parseValue(raw)
		var v result
		if err == nil {
			v, err = e.eval(parts)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("stack %s: %s %s: %w", s.Name, what, name, err))
			continue
		}
		out[name] = v.String()
		if v.secret {
			secrets[name] = v.secrets
		}
	}
	if len(errs) > 0 {
		return nil, secrets, errors.Join(errs...)
	}
	return out, secrets, nil
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// SSMNames lists the SSM parameters the lookups of the config's enabled stacks read,
// sorted: what the deployer fetches before a run.
func (c *Config) SSMNames() []string {
	var names []string
	for _, s := range c.Stacks {
		if !s.Enabled {
			continue
		}
		names = append(names, s.SSMNames()...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// SSMNames lists the SSM parameters s's lookups read, sorted.
func (s *Stack) SSMNames() []string {
	var names []string
	for _, l := range s.Lookups {
		if l.Kind == KindSSM {
			names = append(names, l.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// CheckResolved checks the parameter values s deploys with, its lookups resolved and its
// SecureStrings unsealed, against its template's constraints, before its change set is
// made: a value read from another stack's output can break an AllowedPattern that no
// literal could be checked for. The error names the stack and each refused parameter;
// the values of NoEcho parameters and of those named in secret are never shown. It wraps
// template.ErrParameter. A stack without a parsed template (template_url) passes.
func CheckResolved(s *Stack, values map[string]string, secret ...string) error {
	if s.Template == nil {
		return nil
	}
	t := s.Template
	if len(secret) > 0 {
		cp := *t
		cp.Parameters = maps.Clone(t.Parameters)
		for _, name := range secret {
			if p, ok := cp.Parameters[name]; ok {
				p.NoEcho = true
				cp.Parameters[name] = p
			}
		}
		t = &cp
	}
	if err := t.CheckParameters(values); err != nil {
		return fmt.Errorf("stack %s: %w: fix the value in the config or the output it reads", s.Name, err)
	}
	return nil
}
