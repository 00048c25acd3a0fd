// Command cairn deploys CloudFormation stacks from bundles pushed to S3, and runs the
// whole system locally against an embedded AWS emulator.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/installation"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/version"
)

// commands lists constructors of the sub-commands; each command's file adds itself in init,
// so commands stay independent of each other.
var commands []func() *cobra.Command

// exitError carries an exit code chosen by a command (for example 1 for "validation
// failed") without printing an extra error line.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// refusal is an expected condition the user can act on (an unknown plan, a graph that
// does not exist, a plan already applied): its message, and exit code 1.
type refusal struct{ msg string }

func (r refusal) Error() string { return r.msg }

func refuse(format string, a ...any) error { return refusal{msg: fmt.Sprintf(format, a...)} }

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "cairn",
		Short:         "Event-driven, serverless deployer of CloudFormation stacks",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Read().String(),
	}
	root.SetVersionTemplate("cairn {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	for _, c := range commands {
		root.AddCommand(c())
	}
	addCompletions(root)
	checkArguments(root)
	return root
}

// checkArguments makes every command check its arguments against the names its usage
// line gives them, so an error names what is missing or extra.
func checkArguments(c *cobra.Command) {
	if c.Runnable() && c.HasParent() {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := usageArgs(cmd, args); err != nil {
				return err
			}
			return checkNames(cmd, args)
		}
		wrapDeploymentRefusals(c)
	}
	for _, sub := range c.Commands() {
		checkArguments(sub)
	}
}

// usageArgs checks the positional arguments of a command against its usage line: words
// before the first flag are required, [WORD] ones optional.
func usageArgs(cmd *cobra.Command, args []string) error {
	var required, optional []string
	for _, w := range strings.Fields(cmd.Use)[1:] {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[-") {
			break
		}
		if name, ok := strings.CutPrefix(w, "["); ok {
			optional = append(optional, strings.TrimSuffix(name, "]"))
			continue
		}
		required = append(required, w)
	}
	switch {
	case len(args) < len(required):
		return usageError{cmd: cmd, msg: "missing " + strings.Join(required[len(args):], " ")}
	case len(args) > len(required)+len(optional):
		extra := args[len(required)+len(optional):]
		return usageError{cmd: cmd, msg: fmt.Sprintf("unexpected argument %q", strings.Join(extra, " "))}
	}
	return nil
}

// usageError is an argument error: it names the arguments and shows the usage line.
type usageError struct {
	cmd *cobra.Command
	msg string
}

func (e usageError) Error() string {
	return fmt.Sprintf("%s: usage: %s", e.msg, e.cmd.UseLine())
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
	var r refusal
	if errors.As(err, &r) {
		printer.Fprintf(stderr, "cairn: %v\n", r)
		return 1
	}
	printer.Fprintf(stderr, "cairn: %v\n", installation.Explain(err))
	return 2
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
