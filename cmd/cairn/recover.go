package main

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/access"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/recovery"
	"github.com/cairn-dev/cairn/internal/target"
)

func init() { commands = append(commands, newRecoverCmd) }

func newRecoverCmd() *cobra.Command {
	var skip []string
	var rollback bool
	var timeout, poll time.Duration
	var cf cairnFlags
	cmd := &cobra.Command{
		Use:   "recover NAME STACK [--skip RESOURCE...] [--rollback]",
		Short: "Bring a stack stuck in a FAILED state back to a stable one",
		Long: `Recover takes the deployment's lock and starts a recovery of STACK (its config name, or its
CloudFormation name): ContinueUpdateRollback for UPDATE_ROLLBACK_FAILED, skipping the
resources named with --skip (they are left as they are), or with --rollback a
RollbackStack of a stack whose create or update failed. It waits for the result, records
the stack's new status and outputs in the persistent graph, and exits 0 when the stack is
stable again, 1 otherwise, with the first failure's reason.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, w := cmd.Context(), cmd.OutOrStdout()
			deployment, stack := args[0], args[1]
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			ns, key, err := c.history.Graph(ctx, deployment)
			if err != nil {
				return asRefusal(err)
			}
			// A stack of another account or region is reached as the deployer reaches it:
			// its role assumed (with your credentials), in its region.
			rc := access.New(c.AWS, nil)
			r := &recovery.Recoverer{CFN: c.CloudFormation, State: c.state, Poll: poll, Timeout: timeout,
				At: func(ctx context.Context, t target.Spec) (recovery.CFNAPI, error) {
					if t.RoleARN != "" {
						if _, err := rc.Assume(ctx, "recover", t.RoleARN, t.ExternalID); err != nil {
							return nil, err
						}
					}
					return cloudformation.NewFromConfig(rc.Config("recover", t)), nil
				}}
			res, err := r.Recover(ctx, recovery.Request{Namespace: ns, Key: key, Stack: stack, Skip: skip, Rollback: rollback}, func(s recovery.Started) {
				printer.Fprintf(w, "stack %s was %s: %s started", s.StackName, s.Was, s.Action)
				if len(s.Skip) > 0 {
					printer.Fprintf(w, " skipping %s", strings.Join(s.Skip, ", "))
				}
				printer.Fprintln(w)
			})
			if errors.Is(err, recovery.ErrTimeout) {
				printer.Fprintf(w, "gave up waiting after %s: stack %s is %s\n", timeout, res.StackName, res.Status)
				return exitError{4}
			}
			if err != nil {
				return err
			}
			printer.Fprintf(w, "stack %s is %s", res.StackName, res.Status)
			if res.Failed {
				printer.Fprintf(w, ": %s\n", res.Reason)
				return exitError{1}
			}
			printer.Fprintf(w, ": recovered\n%s\npush or plan again to apply the config\n", res.Recorded)
			return nil
		},
	}
	cf.add(cmd)
	cmd.Flags().StringSliceVar(&skip, "skip", nil, "logical ids of resources ContinueUpdateRollback skips")
	cmd.Flags().BoolVar(&rollback, "rollback", false, "RollbackStack instead of ContinueUpdateRollback")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Hour, "how long to wait for the result")
	cmd.Flags().DurationVar(&poll, "poll", 2*time.Second, "how often to look at the stack")
	return cmd
}
