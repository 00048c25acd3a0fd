package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/awsclient"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/state"
)

func init() { commands = append(commands, newStateCmd, newUnlockCmd) }

// stateBucketEnv names cairn's bucket when --bucket is not given.
const stateBucketEnv = "CAIRN_BUCKET"

// openStateStore builds a state store on the bucket from --bucket or $CAIRN_BUCKET, with
// AWS configuration from the environment.
func openStateStore(cmd *cobra.Command, bucket string) (*state.Store, error) {
	if bucket == "" {
		bucket = os.Getenv(stateBucketEnv)
	}
	if bucket == "" {
		return nil, fmt.Errorf("no bucket: pass --bucket or set %s to cairn's bucket", stateBucketEnv)
	}
	cfg, err := awsclient.Load(cmd.Context())
	if err != nil {
		return nil, err
	}
	// Commands print what matters themselves; only errors are logged on top.
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelError}))
	return &state.Store{S3: awsclient.S3(cfg), Bucket: bucket, Logger: logger}, nil
}

func newStateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Inspect persistent graphs: what cairn last applied, and its history",
	}
	cmd.AddCommand(newStateShowCmd(), newStateHistoryCmd())
	return cmd
}

func newStateShowCmd() *cobra.Command {
	var bucket, version string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show NAMESPACE KEY",
		Short: "Show a persistent graph (the latest, or --version ID) and who holds its lock",
		Long: "Show the persistent graph state/NAMESPACE/KEY.json: the applied bundle and, in dependency\n" +
			"order, every stack cairn manages with its real name, status and dependencies.\n" +
			"--version shows an earlier version (see `cairn state history`); --json prints the document.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := openStateStore(cmd, bucket)
			if err != nil {
				return err
			}
			ctx, ns, key := cmd.Context(), args[0], args[1]
			g, err := s.Show(ctx, ns, key, version)
			if errors.Is(err, state.ErrNotFound) && version != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "cairn: %v\n", err)
				fmt.Fprintf(cmd.ErrOrStderr(), "cairn: list the versions that exist with `cairn state history %s %s`\n", ns, key)
				return exitError{1}
			}
			if errors.Is(err, state.ErrNotFound) {
				fmt.Fprintf(cmd.ErrOrStderr(), "cairn: %v\n", err)
				fmt.Fprintf(cmd.ErrOrStderr(), "cairn: nothing has been deployed to %s/%s yet, or its state was lost (the next run rebuilds it from stack tags); see `cairn state history %s %s`\n", ns, key, ns, key)
				return exitError{1}
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(g)
			}
			printGraph(out, g, version)
			if version == "" {
				l, err := s.CurrentLock(ctx, ns, key)
				switch {
				case errors.Is(err, state.ErrNotLocked):
					fmt.Fprintln(out, "lock: free")
				case err != nil:
					fmt.Fprintf(out, "lock: unknown (%v)\n", err)
				default:
					fmt.Fprintf(out, "lock: held by %s\n", l)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&bucket, "bucket", "", "cairn's bucket (default $"+stateBucketEnv+")")
	cmd.Flags().StringVar(&version, "version", "", "S3 version id of the state object to show (default: the latest)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the state document as JSON")
	return cmd
}

func printGraph(out io.Writer, g *state.Graph, version string) {
	which := "latest"
	if version != "" {
		which = "version " + version
	}
	fmt.Fprintf(out, "state %s/%s (%s): generation %d, written %s by run %s\n", g.Namespace, g.Key, which, g.Generation,
		g.UpdatedAt.UTC().Format(time.RFC3339), dash(g.RunID))
	b := g.Bundle
	fmt.Fprintf(out, "bundle: sha256 %s, git %s %s, bundle version %s\n", dash(b.SHA256), dash(b.GitRemote), dash(b.GitRef), dash(b.VersionID))
	if g.Rebuilt {
		fmt.Fprintln(out, "note: this graph was rebuilt from stack tags after its state object was lost")
	}
	order, err := g.Dependencies().Order()
	if err != nil {
		order = g.Names()
	}
	if len(order) == 0 {
		fmt.Fprintln(out, "no stacks")
		return
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSTACK\tSTATUS\tREQUIRES\tREGION\tUPDATED\tOUTPUTS")
	for _, n := range order {
		st := g.Stacks[n]
		updated := "-"
		if !st.UpdatedAt.IsZero() {
			updated = st.UpdatedAt.UTC().Format(time.RFC3339)
		}
		outs := make([]string, 0, len(st.Outputs))
		for k, v := range st.Outputs {
			outs = append(outs, k+"="+v)
		}
		sort.Strings(outs)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n, st.StackName, dash(st.Status), dash(strings.Join(st.Requires, ",")),
			dash(st.Region), updated, dash(strings.Join(outs, " ")))
	}
	w.Flush()
}

func newStateHistoryCmd() *cobra.Command {
	var bucket string
	var limit int
	cmd := &cobra.Command{
		Use:   "history NAMESPACE KEY",
		Short: "List earlier versions of a persistent graph, newest first",
		Long: "List the S3 versions of state/NAMESPACE/KEY.json, newest first, with the generation and run\n" +
			"that wrote each. Show one with `cairn state show NAMESPACE KEY --version ID`.\n" +
			"History needs bucket versioning; without it cairn warns.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := openStateStore(cmd, bucket)
			if err != nil {
				return err
			}
			ctx, ns, key := cmd.Context(), args[0], args[1]
			if warning, err := s.VersioningWarning(ctx); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "cairn: %v\n", err)
			} else if warning != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), warning)
			}
			versions, err := s.History(ctx, ns, key)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(versions) == 0 {
				fmt.Fprintf(out, "no versions of state %s/%s (s3://%s/%s)\n", ns, key, s.Bucket, layout.StateKey(ns, key))
				return nil
			}
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "VERSION\tMODIFIED\tGENERATION\tRUN\tSTACKS\tNOTE")
			for i, v := range versions {
				if limit > 0 && i == limit {
					fmt.Fprintf(w, "... %d older versions (use --limit 0 for all)\n", len(versions)-limit)
					break
				}
				gen, run, stacks, note := "-", "-", "-", ""
				switch {
				case v.DeleteMarker:
					note = "deleted"
				default:
					if g, err := s.Show(ctx, ns, key, v.VersionID); err != nil {
						note = "unreadable: " + err.Error()
					} else {
						gen, run, stacks = fmt.Sprint(g.Generation), dash(g.RunID), fmt.Sprint(len(g.Stacks))
						if g.Rebuilt {
							note = "rebuilt from tags"
						}
					}
				}
				if v.IsLatest {
					note = strings.TrimSpace("latest " + note)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", v.VersionID, v.LastModified.UTC().Format(time.RFC3339), gen, run, stacks, note)
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&bucket, "bucket", "", "cairn's bucket (default $"+stateBucketEnv+")")
	cmd.Flags().IntVar(&limit, "limit", 20, "show at most this many versions (0: all)")
	return cmd
}

func newUnlockCmd() *cobra.Command {
	var bucket string
	var force bool
	cmd := &cobra.Command{
		Use:   "unlock NAMESPACE KEY",
		Short: "Remove the lock on a persistent graph: an expired one freely, a live one with --force",
		Long: "Remove locks/NAMESPACE/KEY.lock. An expired lock (its run crashed or timed out) is removed\n" +
			"freely. A live lock belongs to a run that may still be deploying: it is removed only with\n" +
			"--force, and the command prints who held it; that run stops at its next lock check.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := openStateStore(cmd, bucket)
			if err != nil {
				return err
			}
			ns, key := args[0], args[1]
			held, err := s.ForceUnlock(cmd.Context(), ns, key, force)
			var locked *state.LockedError
			switch {
			case errors.Is(err, state.ErrNotLocked):
				fmt.Fprintf(cmd.OutOrStdout(), "state %s/%s is not locked: nothing to do\n", ns, key)
				return nil
			case errors.As(err, &locked):
				fmt.Fprintf(cmd.ErrOrStderr(), "cairn: state %s/%s is locked by a live run: %s\n", ns, key, locked.Holder)
				fmt.Fprintf(cmd.ErrOrStderr(), "cairn: that run may still be deploying; wait until %s, or remove the lock anyway with `cairn unlock %s %s --force`\n",
					locked.Holder.ExpiresAt.UTC().Format(time.RFC3339), ns, key)
				return exitError{1}
			case err != nil:
				return err
			}
			what := "expired lock"
			if time.Now().Before(held.ExpiresAt) {
				what = "LIVE lock (forced)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s on state %s/%s held by %s\n", what, ns, key, held)
			return nil
		},
	}
	cmd.Flags().StringVar(&bucket, "bucket", "", "cairn's bucket (default $"+stateBucketEnv+")")
	cmd.Flags().BoolVar(&force, "force", false, "also remove a live lock (prints who held it)")
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
