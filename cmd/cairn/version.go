package main

import (
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/version"
)

func init() { commands = append(commands, newVersionCmd) }

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print cairn's version, the commit it was built from and the Go that built it",
		Long: `Version prints what the binary recorded of its build: the module version ("devel" for a
build of a work tree), the commit (make records it; a "go build" with VCS stamping too),
whether the work tree had uncommitted changes, and the Go version and platform.
` + "`cairn --version`" + ` prints the same on one line.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			i := version.Read()
			w := cmd.OutOrStdout()
			if asJSON {
				return printer.WriteJSON(w, i, "  ")
			}
			printer.Fprintf(w, "cairn %s\n", i.Version)
			commit := i.Commit
			switch {
			case commit == "":
				commit = "unknown (built without make or VCS stamping)"
			case i.Modified:
				commit += " (with uncommitted changes)"
			}
			printer.Fprintf(w, "commit:   %s\n", commit)
			if i.Time != "" {
				printer.Fprintf(w, "time:     %s\n", i.Time)
			}
			printer.Fprintf(w, "go:       %s\nplatform: %s\n", i.Go, i.Platform)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print it as JSON")
	return cmd
}
