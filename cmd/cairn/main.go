// Command cairn deploys CloudFormation stacks from bundles pushed to S3, and runs the
// whole system locally against an embedded AWS emulator.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// commands lists constructors of the sub-commands; each command's file adds itself in init,
// so commands stay independent of each other.
var commands []func() *cobra.Command

// exitError carries an exit code chosen by a command (for example 1 for "validation
// failed") without printing an extra error line.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "cairn",
		Short:         "Event-driven, serverless deployer of CloudFormation stacks",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	for _, c := range commands {
		root.AddCommand(c())
	}
	return root
}

// run executes the CLI with args and returns the process exit code. Tests call it exactly
// as a user types the command.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintf(stderr, "cairn: %v\n", err)
	return 2
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
