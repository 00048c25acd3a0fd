package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/printer"
)

func newLocalFaultCmd() *cobra.Command {
	var delay time.Duration
	var reason, operation string
	var count int
	cmd := &cobra.Command{
		Use:   "fault STACK LOGICAL_ID",
		Short: "Make a resource's next operation in the emulator slow (--delay) or fail (--fail REASON), to watch how cairn shows it",
		Long: `Fault makes the emulator's CloudFormation (at $AWS_ENDPOINT_URL, as printed by "cairn local up")
misbehave on purpose for resource LOGICAL_ID of STACK (its CloudFormation name): its next
operation (or the next --count ones; --operation CREATE, UPDATE or DELETE, default any)
takes --delay longer, and with --fail REASON fails with that status reason, as a resource
CloudFormation cannot create or update does. A failed update rolls back cleanly. Watch it
with ` + "`cairn push ... --wait`" + ` or ` + "`cairn follow NAME`" + `.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if delay <= 0 && reason == "" {
				return usageError{cmd: cmd, msg: "say what goes wrong: --delay DURATION, --fail REASON, or both"}
			}
			if count < 1 {
				return usageError{cmd: cmd, msg: fmt.Sprintf("--count %d: want 1 or more", count)}
			}
			body := map[string]any{"stack": args[0], "logicalId": args[1], "operation": strings.ToUpper(operation), "reason": reason, "count": count}
			if delay > 0 {
				body["delay"] = delay.String()
			}
			if err := postLocal(cmd.Context(), "faults", body); err != nil {
				return err
			}
			what := []string{}
			if delay > 0 {
				what = append(what, "takes "+delay.String()+" longer")
			}
			if reason != "" {
				what = append(what, fmt.Sprintf("fails (%s)", reason))
			}
			op := "operation"
			if operation != "" {
				op = strings.ToLower(operation)
			}
			times := "next " + op
			if count > 1 {
				times = fmt.Sprintf("next %d %ss", count, op)
			}
			printer.Fprintf(cmd.OutOrStdout(), "stack %s: the %s of %s %s in the emulator\n", args[0], times, args[1], strings.Join(what, " and "))
			return nil
		},
	}
	cmd.Flags().DurationVar(&delay, "delay", 0, "how much longer the operation takes")
	cmd.Flags().StringVar(&reason, "fail", "", "make the operation fail with this reason")
	cmd.Flags().StringVar(&operation, "operation", "", "only this operation: CREATE, UPDATE or DELETE (default: any)")
	cmd.Flags().IntVar(&count, "count", 1, "how many operations misbehave")
	return cmd
}
