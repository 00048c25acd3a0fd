package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
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
or as Graphviz DOT, transitively reduced for a readable picture: a dependency implied by a
longer path (service -> network when service -> cache -> network) is not drawn, and the
DOT's first line says how many are.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains([]string{"text", "json", "dot"}, format) {
				return fmt.Errorf("unknown --format %q: use text, json or dot", format)
			}
			l, err := loadBundle(cmd.ErrOrStderr(), args[0], deployment)
			if err != nil {
				return err
			}
			return writeGraph(cmd.OutOrStdout(), l, format)
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
}

func writeGraph(w io.Writer, l *loaded, format string) error {
	order, err := l.graph.Order()
	if err != nil {
		return err
	}
	all := edgeCount(l.graph)
	reduced := l.graph.TransitiveReduction()
	switch format {
	case "dot":
		// Said in the picture's source, so a reader counting arrows is not misled.
		fmt.Fprintf(w, "// %s: %d stacks, %d dependencies, transitively reduced to the %d drawn: the others are implied by longer paths\n",
			l.bundle.ConfigFile, len(order), all, edgeCount(reduced))
		_, err = io.WriteString(w, reduced.DOT())
		return err
	case "json":
		doc := graphJSON{Stacks: []graphStackJSON{}, Order: order}
		for _, s := range l.config.Stacks {
			deps := l.graph.Dependencies(s.Name)
			if deps == nil {
				deps = []string{}
			}
			doc.Stacks = append(doc.Stacks, graphStackJSON{Name: s.Name, StackName: s.StackName, Requires: deps})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	fmt.Fprintf(w, "%s: %d stacks, %d dependencies (%d drawn by --format dot, which leaves out those implied by longer paths); deploy order:\n",
		l.bundle.ConfigFile, len(order), all, edgeCount(reduced))
	width, stackWidth := 0, 0
	for _, name := range order {
		width = max(width, len(name))
		stackWidth = max(stackWidth, len(l.config.Stack(name).StackName))
	}
	for i, name := range order {
		s := l.config.Stack(name)
		line := fmt.Sprintf("%3d. %-*s  %-*s", i+1, width, name, stackWidth, s.StackName)
		if deps := l.graph.Dependencies(name); len(deps) > 0 {
			line += "  <- " + strings.Join(deps, ", ")
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	return nil
}
