package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/seal"
	"github.com/cairn-dev/cairn/internal/target"
	"github.com/cairn-dev/cairn/internal/template"
)

// A plan is a set of per-stack entries. Each records what its stack is made of (Inputs:
// the content of the stack in the planned bundle), the change set made for it, and the
// base it was planned from: the live stack (its id, status and last change) and the
// outputs its parameters consumed. Plans of different pull requests coexist: an entry goes
// stale only when its own stack, or an output it consumes, changed since its base, and an
// apply of some content composes the entries made for exactly that content (Compose).

// Inputs identifies the content of one stack in a bundle: everything its change set is
// made from besides the outputs it consumes. Two entries were made for the same content of
// a stack exactly when their Inputs are equal. Each part is a hash, so secrets stay sealed
// (a NoEcho value as the deployer's keyed seal, a SecureString by its seal).
type Inputs struct {
	// Template is TemplateHash: the template with the nested templates and packaged
	// artifacts of the bundle.
	Template string `json:"template,omitempty"`
	// Parameters is the hash of the parameters as written (lookups unresolved, the NoEcho
	// values the bundle gives sealed).
	Parameters string `json:"parameters,omitempty"`
	// Lookups is the hash of the SSM parameters its lookups read, as read ("" none).
	Lookups string `json:"lookups,omitempty"`
	// Settings is the hash of its stack options, its tags as written, its termination
	// protection, capabilities, protection and where it lives.
	Settings string `json:"settings,omitempty"`
}

// IsZero reports whether nothing is known of the content (an entry of a plan made before
// entries recorded it).
func (i Inputs) IsZero() bool { return i == Inputs{} }

// Differ names the parts of the content that differ between i and o, as a reason reads
// them: "its template", "its parameter values", ...
func (i Inputs) Differ(o Inputs) []string {
	var out []string
	if i.Template != o.Template {
		out = append(out, "its template")
	}
	if i.Parameters != o.Parameters {
		out = append(out, "its parameter values")
	}
	if i.Lookups != o.Lookups {
		out = append(out, "the SSM parameters it reads")
	}
	if i.Settings != o.Settings {
		out = append(out, "its options, tags or protection")
	}
	return out
}

// InputsOf is the content of stack s of a bundle: its Inputs, with its SSM lookups read as
// ssm holds them and its bundle secrets sealed with k, at home (cairn's account and region).
func InputsOf(s *config.Stack, ssm map[string]config.SSMValue, k seal.Key, home target.Target) Inputs {
	in := Inputs{Template: TemplateHash(s), Parameters: run.HashParameters(s.StoredParameters(k))}
	read := map[string]string{}
	for _, l := range s.Lookups {
		if l.Kind != config.KindSSM {
			continue
		}
		v := ssm[l.Name]
		read[l.Name] = v.Type + "\x00" + v.Value + "\x00" + v.Hash
	}
	if len(read) > 0 {
		in.Lookups = run.HashParameters(read)
	}
	settings := struct {
		Options      string            `json:"o,omitempty"`
		Tags         map[string]string `json:"t,omitempty"`
		Protect      bool              `json:"tp,omitempty"`
		Capabilities []string          `json:"c,omitempty"`
		Protected    bool              `json:"p,omitempty"`
		At           string            `json:"at,omitempty"`
	}{s.Options.Hash(), s.Tags, s.TerminationProtection, s.Capabilities, s.Protected, target.Key(s.Target.Location(home), s.StackName)}
	b, _ := json.Marshal(settings)
	sum := sha256.Sum256(b)
	in.Settings = hex.EncodeToString(sum[:])
	return in
}

// Consumed lists the outputs stack name of r reads through its parameters' lookups (an
// output lookup by "STACK::OUTPUT", an xref, rxref or cfn lookup by the key of the stack
// read and the output), with the values r has for them now: its base's outputs. Secret
// outputs are as the run stores them, sealed; so is an output that a NoEcho parameter
// reads (sealed with k), whose value is the parameter's. nil when it reads none.
func Consumed(r *run.Run, lookups map[string][]config.Lookup, ssm map[string]config.SSMValue, name string, k seal.Key) map[string]string {
	s := r.Stacks[name]
	if s == nil {
		return nil
	}
	read := map[string]string{}
	outputs := Outputs(r)
	resolve := Resolver(r, lookups, ssm)
	for _, param := range slices.Sorted(maps.Keys(s.RawParameters)) {
		secret := slices.Contains(s.NoEcho, param)
		resolve(name, map[string]string{param: s.RawParameters[param]}, func(stack, output string) (string, bool) {
			v, ok := outputs(stack, output)
			if !ok {
				return v, ok
			}
			key := stack + "::" + output
			if secret {
				read[key] = config.SealOutput(k, stack, output, v)
			} else if _, seen := read[key]; !seen {
				read[key] = v
			}
			return v, ok
		})
	}
	if len(read) == 0 {
		return nil
	}
	return read
}

// consumedFrom is the config name of the stack an entry of Consumed reads, or "" when it
// is outside the run (an xref's).
func consumedFrom(r *run.Run, key string) string {
	stack, _, _ := strings.Cut(key, "::")
	if r != nil && r.Stacks[stack] != nil {
		return stack
	}
	return ""
}

// ConsumedChanges describes how the outputs consumed now differ from those of an entry's
// base, ignoring the outputs of the stacks in skip (those an apply changes first: checked
// once they are applied); "" when they do not. Sealed values are compared as sealed, and
// shown as ****.
func ConsumedChanges(base, now map[string]string, r *run.Run, skip map[string]bool) string {
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(base)) {
		if from := consumedFrom(r, k); from != "" && skip[from] {
			continue
		}
		was, is := base[k], now[k]
		if was == is {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s was %s, now %s", k, Shown(was), Shown(is)))
	}
	return strings.Join(diffs, ", ")
}

// Shown is a stored value as a person may see it: "****" for a secret (anything holding a
// sealed reference), else quoted.
func Shown(v string) string {
	if config.HoldsSealed(v) {
		return "****"
	}
	return fmt.Sprintf("%q", v)
}

// ParameterChange is one parameter whose value a plan changes, as a reviewer reads it:
// Old is "" for a parameter the stack did not have, New "" for one it loses. A Secret one
// (NoEcho, or given a SecureString or a secret output) shows both as "****".
type ParameterChange struct {
	Name   string `json:"name"`
	Old    string `json:"old,omitempty"`
	New    string `json:"new,omitempty"`
	Secret bool   `json:"secret,omitempty"`
}

// ParameterChanges compares the parameters a stack has (old: as the graph recorded them
// when they were applied, secrets sealed; or, for a stack applied before the graph kept
// them, as DescribeStacks shows them, NoEcho ones as ****) with those its change set sets
// (now: as the run stores them, secrets sealed), by name, sealed with sealed. secret names
// the parameters whose values are never shown (NoEcho); a value holding a sealed reference
// (a secret lookup's) is never shown either: both show as "****". Parameters whose values
// are the same are left out.
func ParameterChanges(old, now map[string]string, secret []string) []ParameterChange {
	var out []ParameterChange
	names := slices.Sorted(maps.Keys(now))
	for n := range old {
		if _, ok := now[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		o, had := old[n]
		v, has := now[n]
		if had && has && o == v {
			continue
		}
		c := ParameterChange{Name: n, Old: o, New: v}
		if slices.Contains(secret, n) || config.HoldsSealed(v) || config.HoldsSealed(o) || o == "****" {
			c = ParameterChange{Name: n, Secret: true}
			if had {
				c.Old = "****"
			}
			if has {
				c.New = "****"
			}
		}
		out = append(out, c)
	}
	return out
}

// WithDefaults returns the parameters a change set deploys with, as DescribeStacks lists
// them: those given (now), and the Default of each parameter t declares and now does not
// give. Compared with what DescribeStacks shows of the stack, a parameter left at its
// Default is then not a change (a CDK stack's BootstrapVersion), and a Default changed is.
func WithDefaults(now map[string]string, t *template.Template) map[string]string {
	if t == nil {
		return now
	}
	out := maps.Clone(now)
	for n, p := range t.Parameters {
		if _, given := now[n]; !given && p.HasDefault {
			if out == nil {
				out = map[string]string{}
			}
			out[n] = p.Default
		}
	}
	return out
}

func (c ParameterChange) String() string {
	switch {
	case c.Old == "" && c.New == "" && c.Secret:
		return c.Name + ": ****"
	case c.Old == "":
		return fmt.Sprintf("%s: (none) → %s", c.Name, c.New)
	case c.New == "":
		return fmt.Sprintf("%s: %s → (removed)", c.Name, c.Old)
	}
	return fmt.Sprintf("%s: %s → %s", c.Name, c.Old, c.New)
}
