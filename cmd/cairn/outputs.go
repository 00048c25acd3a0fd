package main

import (
	"io"
	"maps"
	"slices"

	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/printer"
	runstate "github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
)

// hidden is how a secret output's value prints: as `sam deploy` and `cdk deploy` print a
// NoEcho value.
const hidden = "****"

// stackOutputs is one stack's outputs as printed: its config name, where it lives, and
// its outputs, secret ones named in secret.
type stackOutputs struct {
	name, describe string
	outputs        map[string]string
	secret         []string
}

// printOutputs prints the stacks' outputs, as `sam deploy` and `cdk deploy` print them
// after a deployment: each stack with outputs, then each output as KEY = VALUE in name
// order, a secret one (named secret by the run, or stored sealed) as ****; every value
// through the printer, since a template computes it; blank puts an empty line before it
// all, when there is an output.
func printOutputs(w io.Writer, blank bool, stacks []stackOutputs) {
	indent := ""
	header := false
	for _, s := range stacks {
		if len(s.outputs) == 0 {
			continue
		}
		if !header {
			if blank {
				printer.Fprintf(w, "\n")
			}
			printer.Fprintf(w, "%soutputs:\n", indent)
			header = true
		}
		printer.Fprintf(w, "%s  %s (%s):\n", indent, s.name, s.describe)
		for _, k := range slices.Sorted(maps.Keys(s.outputs)) {
			v := s.outputs[k]
			if slices.Contains(s.secret, k) || config.HoldsSealed(v) {
				v = hidden
			}
			printer.Fprintf(w, "%s    %s = %s\n", indent, k, v)
		}
	}
}

// runOutputs are the outputs of the stacks a run created, updated or found unchanged.
func runOutputs(r *runstate.Run) []stackOutputs {
	var out []stackOutputs
	for _, name := range r.Names() {
		s := r.Stacks[name]
		if s.Intent == runstate.IntentDelete || s.Intent == runstate.IntentRead || (s.Phase != runstate.Done && s.Phase != runstate.Unchanged) {
			continue
		}
		out = append(out, stackOutputs{name: name, describe: s.Describe(), outputs: s.Outputs, secret: secretOutputs(r, name)})
	}
	return out
}

// secretOutputs are the outputs of stack name never printed: those the run says are
// secret, and those another stack of the run gives to a NoEcho parameter, which that stack
// shows as ****.
func secretOutputs(r *runstate.Run, name string) []string {
	out := slices.Clone(r.Stacks[name].SecretOutputs)
	for _, s := range r.Stacks {
		for _, p := range s.NoEcho {
			for _, read := range config.OutputsRead(s.RawParameters[p]) {
				if read[0] == name && !slices.Contains(out, read[1]) {
					out = append(out, read[1])
				}
			}
		}
	}
	return out
}

// graphOutputs are the outputs of the stacks of an applied graph, as last applied, each
// stack named as the run r (the one standing for what is deployed) names it, if it has it.
func graphOutputs(g *state.Graph, r *runstate.Run) []stackOutputs {
	if g == nil {
		return nil
	}
	var out []stackOutputs
	for _, name := range slices.Sorted(maps.Keys(g.Stacks)) {
		s := g.Stacks[name]
		describe := s.StackName
		var secret []string
		if rs := r.Stacks[name]; rs != nil && rs.StackName == s.StackName {
			describe, secret = rs.Describe(), secretOutputs(r, name)
		}
		out = append(out, stackOutputs{name: name, describe: describe, outputs: s.Outputs, secret: secret})
	}
	return out
}
