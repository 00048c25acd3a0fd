package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newDemoCmd) }

// demoBundle is the web-shop bundle the demo runs, relative to the repository root
// (make demo runs from there).
const demoBundle = "testdata/bundles/webshop"

func newDemoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Validate the web-shop sample bundle and print its dependency graph",
		Long: `Demo validates ` + demoBundle + ` and prints its dependency graph. Run it from the
repository root (make demo does).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := loadBundle(cmd.ErrOrStderr(), demoBundle, "webshop")
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "validated %s: %d stacks in namespace %q, bundle sha256 %s\n\n",
				demoBundle, len(l.config.Stacks), l.config.Namespace, l.bundle.SHA256)
			return writeGraph(out, l, "text")
		},
	}
}
