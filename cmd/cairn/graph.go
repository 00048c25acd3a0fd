package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/installation"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/target"
)

func init() { commands = append(commands, newGraphCmd) }

func newGraphCmd() *cobra.Command {
	var format, deployment string
	cmd := &cobra.Command{
		Use:   "graph PATH",
		Short: "Print the stack dependency graph of a bundle",
		Long: `Graph validates the bundle at PATH and prints its stacks and dependencies:
as text in deploy order (the default), as JSON
  {"stacks":[{"name":...,"stack_name":...,"requires":[...]}],"order":[...]}
or as Graphviz DOT. A stack outside cairn's account and region (the region of your AWS
configuration) is shown with where it lives, "shop-app (111111111111, eu-west-1)", and in
JSON with "account" and "region" (omitted where they are cairn's). The DOT is
transitively reduced for a readable picture: a dependency implied by a longer path
(service -> network when service -> cache -> network) is not drawn, and the DOT's first
line says how many are.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains([]string{"text", "json", "dot"}, format) {
				return fmt.Errorf("unknown --format %q: use text, json or dot", format)
			}
			l, err := loadBundle(cmd.ErrOrStderr(), args[0], deployment)
			if err != nil {
				return err
			}
			return writeGraph(cmd.OutOrStdout(), l, format, cliHome(cmd.Context()))
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, json or dot")
	cmd.Flags().StringVar(&deployment, "deployment", "", "deployment name (the default persistent_graph_key)")
	return cmd
}

type graphJSON struct {
	Stacks []graphStackJSON `json:"stacks"`
	Order  []string         `json:"order"`
}

type graphStackJSON struct {
	Name      string   `json:"name"`
	StackName string   `json:"stack_name"`
	Requires  []string `json:"requires"`
	// Account and Region are where the stack lives, each omitted where it is cairn's.
	Account string `json:"account,omitempty"`
	Region  string `json:"region,omitempty"`
}

// writeGraph prints l's graph; home is cairn's place, as far as it is known offline (its
// region; a role's account is always shown).
func writeGraph(w io.Writer, l *loaded, format string, home target.Target) error {
	order, err := l.graph.Order()
	if err != nil {
		return err
	}
	at := func(name string) target.Target { return l.config.Stack(name).Target.Location(home) }
	all := edgeCount(l.graph)
	reduced := l.graph.TransitiveReduction()
	switch format {
	case "dot":
		// Said in the picture's source, so a reader counting arrows is not misled.
		printer.Fprintf(w, "// %s: %d stacks, %d dependencies, transitively reduced to the %d drawn: the others are implied by longer paths\n",
			l.bundle.ConfigFile, len(order), all, edgeCount(reduced))
		err = printer.Lines(w, reduced.DOTLabeled(func(name string) string { return target.Describe(at(name), name) }))
		return err
	case "json":
		doc := graphJSON{Stacks: []graphStackJSON{}, Order: order}
		for _, s := range l.config.Stacks {
			deps := l.graph.Dependencies(s.Name)
			if deps == nil {
				deps = []string{}
			}
			loc := at(s.Name)
			doc.Stacks = append(doc.Stacks, graphStackJSON{Name: s.Name, StackName: s.StackName, Requires: deps, Account: loc.Account, Region: loc.Region})
		}
		return printer.WriteJSON(w, doc, "  ")
	}
	printer.Fprintf(w, "%s: %d stacks, %d dependencies (%d drawn by --format dot, which leaves out those implied by longer paths); deploy order:\n",
		l.bundle.ConfigFile, len(order), all, edgeCount(reduced))
	width, stackWidth := 0, 0
	for _, name := range order {
		width = max(width, len(name))
		stackWidth = max(stackWidth, len(target.Describe(at(name), l.config.Stack(name).StackName)))
	}
	for i, name := range order {
		s := l.config.Stack(name)
		line := fmt.Sprintf("%3d. %-*s  %-*s", i+1, width, name, stackWidth, target.Describe(at(name), s.StackName))
		if deps := l.graph.Dependencies(name); len(deps) > 0 {
			line += "  <- " + strings.Join(deps, ", ")
		}
		printer.Fprintln(w, strings.TrimRight(line, " "))
	}
	return nil
}

// cliHome is cairn's place as a command knows it without calling AWS: the region of the
// AWS configuration it would use (cairn's own, where it finds cairn's bucket), no account.
func cliHome(ctx context.Context) target.Target {
	cfg, err := installation.Config(ctx)
	if err != nil {
		return target.Target{}
	}
	return target.Target{Region: cfg.Region}
}
