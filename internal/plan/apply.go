package plan

import (
	"maps"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/seal"
	"github.com/cairn-dev/cairn/internal/target"
)

// ActionOf names what a plan does to a stack of its run.
func ActionOf(s *run.Stack) Action {
	switch {
	case s.Intent == run.IntentDelete:
		return Delete
	case s.Intent == run.IntentRecreate:
		return Recreate
	case s.Intent == run.IntentRead || s.Phase == run.Unchanged:
		return None
	case s.ChangeSetType == "CREATE" || !s.Exists:
		return Create
	default:
		return Update
	}
}

// Seal returns how a run stores a stack's resolved parameters, sealing with k: the value
// of each NoEcho parameter sealed (config.SealNoEcho), the others as they are.
func Seal(k seal.Key) func(s *run.Stack, params map[string]string) map[string]string {
	return func(s *run.Stack, params map[string]string) map[string]string {
		if len(s.NoEcho) == 0 {
			return params
		}
		out := maps.Clone(params)
		for _, name := range s.NoEcho {
			if v, ok := out[name]; ok {
				out[name] = config.SealNoEcho(k, s.Name, name, v)
			}
		}
		return out
	}
}

// SealOutputs returns how a run stores a stack's outputs, sealing with k those the stack
// lists as secret (run.Stack.SecretOutputs): config.SealOutput.
func SealOutputs(k seal.Key) func(s *run.Stack, outputs map[string]string) map[string]string {
	return func(s *run.Stack, outputs map[string]string) map[string]string {
		return sealOutputs(k, s.Name, s.SecretOutputs, outputs)
	}
}

func sealOutputs(k seal.Key, stack string, secret []string, outputs map[string]string) map[string]string {
	if len(secret) == 0 || outputs == nil {
		return outputs
	}
	out := maps.Clone(outputs)
	for _, name := range secret {
		if v, ok := out[name]; ok {
			out[name] = config.SealOutput(k, stack, name, v)
		}
	}
	return out
}

// SealLive returns live, as DescribeStacks showed it, with the secret outputs of r's
// stacks sealed with k: as the run stores them, so what an approval compares and hands
// on never holds them in clear.
func SealLive(r *run.Run, live map[string]Live, k seal.Key) map[string]Live {
	if r == nil {
		return live
	}
	out := maps.Clone(live)
	for _, s := range r.Stacks {
		if l, ok := out[s.Key()]; ok && len(s.SecretOutputs) > 0 {
			l.Outputs = sealOutputs(k, s.Name, s.SecretOutputs, l.Outputs)
			out[s.Key()] = l
		}
	}
	return out
}

// Resolver resolves the parameters of r's stacks from the lookups recorded when the run
// was planned (lookups, by config name) and the SSM parameters read then (ssm), so a later
// step needs no bundle.
func Resolver(r *run.Run, lookups map[string][]config.Lookup, ssm map[string]config.SSMValue) run.Resolver {
	return func(stack string, raw map[string]string, outputs func(stack, output string) (string, bool)) (map[string]string, error) {
		cs := &config.Stack{Name: stack, Parameters: raw, Lookups: lookups[stack]}
		return config.ResolveParameters(cs, Values(r, stack, ssm, outputs))
	}
}

// Values are what the lookups of stack (a config name) of r read: outputs answers by
// config name (run.Resolver's) for output lookups, and by the key of a stack in stack's
// account and region for the others (xref, rxref, cfn: see External); the SSM parameters
// are those read when the run was planned.
func Values(r *run.Run, stack string, ssm map[string]config.SSMValue, outputs func(stack, output string) (string, bool)) config.Values {
	var at target.Target
	if s := r.Stacks[stack]; s != nil {
		at = s.At
	}
	return config.Values{SSM: ssm, Output: outputs, Outputs: func(stackName, output string) (string, bool) {
		return outputs(target.Key(at, stackName), output)
	}}
}

// Outputs answers a lookup of a stack's output in r by config name: a stack of the run,
// or one outside it (External), as run.Advance does.
func Outputs(r *run.Run) func(stack, output string) (string, bool) {
	return func(stack, output string) (string, bool) {
		if d := r.Stacks[stack]; d != nil {
			v, ok := d.Outputs[output]
			return v, ok
		}
		v, ok := r.External[stack+"::"+output]
		return v, ok
	}
}

// HoldsSecrets reports whether stack s of a run holds secrets: a NoEcho parameter, a
// sealed value, a secret output. What CloudFormation says of such a stack may quote them:
// the deployer scrubs it of their values before the run records it; a reader without
// their values (the CLI following CloudFormation's events) withholds it.
func HoldsSecrets(s *run.Stack) bool {
	if s == nil {
		return false
	}
	if len(s.NoEcho) > 0 || len(s.SecretOutputs) > 0 {
		return true
	}
	for _, v := range s.Parameters {
		if config.HoldsSealed(v) {
			return true
		}
	}
	for _, v := range s.RawParameters {
		if config.HoldsSealed(v) {
			return true
		}
	}
	return false
}
