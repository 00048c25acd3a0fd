package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/ports"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/target"
)

func init() { commands = append(commands, newPortsCmd) }

func newPortsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ports",
		Short: "Inspect the ports allocated by Custom::PortAllocation resources",
	}
	var cf cairnFlags
	list := &cobra.Command{
		Use:   "list [POOL]",
		Short: "List port allocations and the stack resources that own them",
		Long: "List the port allocations recorded in cairn's bucket (ports/POOL.json), with the stack\n" +
			"and logical resource id owning each, for one pool or for all of them. A stack outside\n" +
			"cairn's account and region is shown with where it lives: shop-app (111111111111, eu-west-1).",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && !ports.ValidPoolName(args[0]) {
				return usageError{cmd: cmd, msg: fmt.Sprintf("%q is not a pool name: use letters, digits, '.', '_' or '-'", args[0])}
			}
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			ctx, bucket := cmd.Context(), c.bucket
			store := ports.NewStore(c.S3, bucket, nil)
			var pools []string
			if len(args) == 1 {
				pools = args
			} else if pools, err = store.Pools(ctx); err != nil {
				return err
			}
			var rows []ports.Allocation
			for _, p := range pools {
				allocs, err := store.Allocations(ctx, p)
				if err != nil {
					return err
				}
				rows = append(rows, allocs...)
			}
			out := cmd.OutOrStdout()
			if len(rows) == 0 {
				where := "any pool"
				if len(args) == 1 {
					where = "pool " + args[0]
				}
				printer.Fprintf(out, "no port allocations in %s (%s)\n", where, layout.URI(bucket, layout.PortsPrefix))
				return nil
			}
			home := c.Home(ctx)
			w := newTable(out, 0)
			printer.Fprintf(w, "POOL\tPORTS\tSTACK\tLOGICAL ID\tCREATED\tPHYSICAL ID\n")
			for _, a := range rows {
				span := strconv.Itoa(a.First)
				if a.Count > 1 {
					span += "-" + strconv.Itoa(a.First+a.Count-1)
				}
				printer.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Pool, span, owner(a, home), a.LogicalResourceID,
					a.Created.UTC().Format(time.RFC3339), a.ID)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			held := 0
			for _, a := range rows {
				held += a.Count
			}
			printer.Fprintf(out, "%d %s holding %d %s\n", len(rows), plural(len(rows), "allocation"), held, plural(held, "port"))
			return nil
		},
	}
	cf.add(list)
	cmd.AddCommand(list)
	return cmd
}

// owner names the stack owning an allocation, with its account and region when they are
// not cairn's.
func owner(a ports.Allocation, home target.Target) string {
	at, _ := target.OfStackID(a.StackID)
	return target.Describe(at.From(home), a.StackName())
}
