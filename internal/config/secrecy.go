package config

import (
	"maps"
	"slices"
	"strconv"

	"github.com/cairn-dev/cairn/internal/template"
)

// Secrecy is where the values of a config's stacks are secret, by config name of the
// stack: template.Secrecy of each stack's templates, with what reaches them from the other
// stacks. Across stacks a secret flows through a parameter given a SecureString (${ssm}) or
// another stack's secret output (${output}, or ${xref}, ${rxref} and ${cfn} naming a stack
// of the config), and through Fn::ImportValue of an export of a secret output; and so on,
// down any chain. It is the one answer to "is this value secret": the plan seals the
// secret outputs it lists, drift masks the properties it lists.
type Secrecy map[string]template.Secrecy

// Secrecy computes where c's values are secret; secure reports whether the SSM parameter
// named is a SecureString (nil: none is known to be).
func (c *Config) Secrecy(secure func(name string) bool) Secrecy {
	out := make(Secrecy, len(c.Stacks))
	byStackName := make(map[string][]*Stack, len(c.Stacks))
	for _, s := range c.Stacks {
		byStackName[s.StackName] = append(byStackName[s.StackName], s)
	}
	// exports are the names (patterns: template.ExportMatches) of the secret exports found.
	// unnamed is set when a stack exports a secret output under a name not known: any
	// import may read it.
	var exports []string
	unnamed := false
	imports := func(name string) bool {
		if name == "" || unnamed {
			return len(exports) > 0 || unnamed
		}
		return slices.ContainsFunc(exports, func(p string) bool { return template.ExportMatches(p, name) })
	}
	secretOutput := func(s *Stack, output string) bool {
		_, ok := slices.BinarySearch(out[s.Name].Outputs, output)
		return ok
	}
	// A stack is analysed again only when what reaches it grew: its secret parameters or
	// the secret exports. Both only grow, so this ends.
	seen := make(map[string]string, len(c.Stacks))
	type memoKey struct {
		tree any
		key  string
	}
	memo := map[memoKey]template.Secrecy{}
	for changed := true; changed; {
		changed = false
		for _, s := range c.Stacks {
			if s.Template == nil {
				continue
			}
			params := map[string]bool{}
			for _, l := range s.Lookups {
				if l.Param == "" || params[l.Param] {
					continue
				}
				switch {
				case l.Kind == KindSSM:
					params[l.Param] = secure != nil && secure(l.Name)
				case l.Kind == KindOutput:
					if from := c.Stack(l.Stack); from != nil {
						params[l.Param] = secretOutput(from, l.Output)
					}
				case l.Kind.ByStackName():
					params[l.Param] = slices.ContainsFunc(byStackName[l.StackName], func(from *Stack) bool { return secretOutput(from, l.Output) })
				}
			}
			maps.DeleteFunc(params, func(_ string, v bool) bool { return !v })
			key := strconv.Itoa(len(exports)) + strconv.FormatBool(unnamed) + "\x00" + keyOf(params)
			if k, ok := seen[s.Name]; ok && k == key {
				continue
			}
			seen[s.Name] = key
			var tree any = s.Tree // stacks of one template with the same sources share its analysis
			if s.Tree == nil {
				tree = s.Template
			}
			got, ok := memo[memoKey{tree, key}]
			if !ok || len(got.Exports) > 0 || got.Unnamed { // export names may read the stack's name
				t := s.Tree
				if t == nil {
					t = &template.Tree{Template: s.Template}
				}
				got = t.Secrecy(template.Sources{Parameters: params, Import: imports, StackName: s.StackName})
				memo[memoKey{tree, key}] = got
			}
			if !slices.Equal(got.Outputs, out[s.Name].Outputs) || !slices.Equal(got.Exports, out[s.Name].Exports) || got.Unnamed != out[s.Name].Unnamed {
				changed = true
				unnamed = unnamed || got.Unnamed
				for _, name := range got.Exports {
					if !slices.Contains(exports, name) {
						exports = append(exports, name)
					}
				}
			}
			out[s.Name] = got
		}
	}
	return out
}

// SecretOutputs lists the secret outputs of stack (a config name), sorted.
func (s Secrecy) SecretOutputs(stack string) []string { return s[stack].Outputs }

func keyOf(set map[string]bool) string {
	names := slices.Sorted(maps.Keys(set))
	k := ""
	for _, n := range names {
		k += n + "\x00"
	}
	return k
}
