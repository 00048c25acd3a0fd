package main

import (
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/awsclient"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/ports"
)

func init() { commands = append(commands, newPortsCmd) }

func newPortsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ports",
		Short: "Inspect the ports allocated by Custom::PortAllocation resources",
	}
	var bucket string
	list := &cobra.Command{
		Use:   "list [POOL]",
		Short: "List port allocations and the stack resources that own them",
		Long: "List the port allocations recorded in cairn's bucket (ports/POOL.json), with the stack\n" +
			"and logical resource id owning each, for one pool or for all of them.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if bucket == "" {
				bucket = os.Getenv(ports.BucketEnv)
			}
			if bucket == "" {
				return fmt.Errorf("no bucket: pass --bucket or set %s to cairn's bucket", ports.BucketEnv)
			}
			ctx := cmd.Context()
			cfg, err := awsclient.Load(ctx)
			if err != nil {
				return err
			}
			store := ports.NewStore(awsclient.S3(cfg), bucket, nil)
			var pools []string
			if len(args) == 1 {
				if !ports.ValidPoolName(args[0]) {
					return fmt.Errorf("%q is not a pool name: use letters, digits, '.', '_' or '-'", args[0])
				}
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
				fmt.Fprintf(out, "no port allocations in %s (%s)\n", where, layout.URI(bucket, layout.PortsPrefix))
				return nil
			}
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "POOL\tPORTS\tSTACK\tLOGICAL ID\tCREATED\tPHYSICAL ID")
			for _, a := range rows {
				span := strconv.Itoa(a.First)
				if a.Count > 1 {
					span += "-" + strconv.Itoa(a.First+a.Count-1)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Pool, span, a.StackName(), a.LogicalResourceID,
					a.Created.UTC().Format(time.RFC3339), a.ID)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			held := 0
			for _, a := range rows {
				held += a.Count
			}
			fmt.Fprintf(out, "%d %s holding %d %s\n", len(rows), plural(len(rows), "allocation"), held, plural(held, "port"))
			return nil
		},
	}
	list.Flags().StringVar(&bucket, "bucket", "", "cairn's bucket (default $"+ports.BucketEnv+")")
	cmd.AddCommand(list)
	return cmd
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
