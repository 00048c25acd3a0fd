package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/state"
	"github.com/cairn-dev/cairn/internal/statestore"
	"github.com/cairn-dev/cairn/internal/target"
)

func init() { commands = append(commands, newStateCmd, newUnlockCmd) }

func newStateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Inspect persistent graphs: what cairn last applied, and its history",
	}
	cmd.AddCommand(newStateListCmd(), newStateShowCmd(), newStateHistoryCmd())
	return cmd
}

func newStateListCmd() *cobra.Command {
	var cf cairnFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the persistent graphs in cairn's bucket, with their generation, stacks and lock",
		Long: "List every persistent graph (state/NAMESPACE/KEY.json): the NAMESPACE and KEY the other\n" +
			"state commands and unlock take, its generation, how many stacks it holds, when and by\n" +
			"which run it was last written, and who holds its lock.",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			graphs, err := c.history.Graphs(ctx)
			if err != nil {
				return err
			}
			if len(graphs) == 0 {
				printer.Fprintf(out, "no persistent graphs in %s: nothing was deployed yet\n", layout.URI(c.bucket, layout.StatePrefix))
				return nil
			}
			w := newTable(out, 0)
			printer.Fprintf(w, "NAMESPACE\tKEY\tGENERATION\tSTACKS\tWRITTEN\tRUN\tLOCK\n")
			for _, gk := range graphs {
				gen, stacks, written, runID := "-", "-", "-", "-"
				if g, err := c.state.Show(ctx, gk.Namespace, gk.Key, ""); err == nil {
					gen, stacks, written, runID = fmt.Sprint(g.Generation), fmt.Sprint(len(g.Stacks)), g.UpdatedAt.UTC().Format(time.RFC3339), dash(g.RunID)
				}
				lock := "free"
				switch l, err := c.state.CurrentLock(ctx, gk.Namespace, gk.Key); {
				case errors.Is(err, statestore.ErrNotLocked):
				case err != nil:
					lock = "unknown"
				default:
					lock = "held by run " + l.RunID
				}
				printer.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", gk.Namespace, gk.Key, gen, stacks, written, runID, lock)
			}
			return w.Flush()
		},
	}
	cf.add(cmd)
	return cmd
}

func newStateShowCmd() *cobra.Command {
	var version string
	var asJSON bool
	var cf cairnFlags
	cmd := &cobra.Command{
		Use:   "show NAMESPACE KEY",
		Short: "Show a persistent graph (the latest, or --version ID) and who holds its lock",
		Long: "Show the persistent graph state/NAMESPACE/KEY.json: the applied bundle and, in dependency\n" +
			"order, every stack cairn manages with its real name, status and dependencies.\n" +
			"--version shows an earlier version (see `cairn state history`); --json prints the document.",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			s := c.state
			ctx, ns, key := cmd.Context(), args[0], args[1]
			if version != "" {
				if version, err = stateVersion(cmd, s, ns, key, version); err != nil {
					return err
				}
			}
			g, err := s.Show(ctx, ns, key, version)
			if errors.Is(err, statestore.ErrNotFound) && version != "" {
				printer.Fprintf(cmd.ErrOrStderr(), "cairn: %v\n", err)
				printer.Fprintf(cmd.ErrOrStderr(), "cairn: list the versions that exist with `cairn state history %s %s`\n", ns, key)
				return exitError{1}
			}
			if errors.Is(err, statestore.ErrNotFound) {
				printer.Fprintf(cmd.ErrOrStderr(), "cairn: %v\n", err)
				printer.Fprintf(cmd.ErrOrStderr(), "cairn: nothing has been deployed to %s/%s yet, or its state was lost (the next run rebuilds it from stack tags); see `cairn state history %s %s`\n", ns, key, ns, key)
				return exitError{1}
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printer.WriteJSON(out, g, "  ")
			}
			printGraph(out, g, version, c.Home(ctx))
			if version == "" {
				l, err := s.CurrentLock(ctx, ns, key)
				switch {
				case errors.Is(err, statestore.ErrNotLocked):
					printer.Fprintf(out, "lock: free\n")
				case err != nil:
					printer.Fprintf(out, "lock: unknown (%v)\n", err)
				default:
					printer.Fprintf(out, "lock: held by %s\n", l)
				}
			}
			return nil
		},
	}
	cf.add(cmd)
	cmd.Flags().StringVar(&version, "version", "", "S3 version id of the state object to show (default: the latest)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the state document as JSON")
	return cmd
}

// printGraph prints a persistent graph; a stack outside home (cairn's account and
// region) is named with where it lives.
func printGraph(out io.Writer, g *state.Graph, version string, home target.Target) {
	which := "latest"
	if version != "" {
		which = "version " + report.ShortVersion(version)
	}
	printer.Fprintf(out, "state %s/%s (%s): generation %d, written %s by run %s\n", g.Namespace, g.Key, which, g.Generation,
		g.UpdatedAt.UTC().Format(time.RFC3339), dash(g.RunID))
	b := g.Bundle
	git := dash(b.GitRef)
	if b.GitRemote != "" {
		git += " of " + b.GitRemote
	}
	printer.Fprintf(out, "bundle: version %s, sha256 %s, git %s\n", dash(report.ShortVersion(b.VersionID)), dash(report.ShortSum(b.SHA256)), git)
	if g.Rebuilt {
		printer.Fprintf(out, "note: this graph was rebuilt from stack tags after its state object was lost\n")
	}
	order, err := g.Dependencies().Order()
	if err != nil {
		order = g.Names()
	}
	if len(order) == 0 {
		printer.Fprintf(out, "no stacks\n")
		return
	}
	w := newTable(out, 0)
	printer.Fprintf(w, "NAME\tSTACK\tSTATUS\tREQUIRES\tREGION\tUPDATED\tOUTPUTS\n")
	for _, n := range order {
		st := g.Stacks[n]
		updated := "-"
		if !st.UpdatedAt.IsZero() {
			updated = st.UpdatedAt.UTC().Format(time.RFC3339)
		}
		outs := make([]string, 0, len(st.Outputs))
		for k, v := range st.Outputs {
			if config.HoldsSealed(v) {
				v = "****" // a secret output: the graph holds its seal only
			}
			outs = append(outs, k+"="+v)
		}
		sort.Strings(outs)
		at := target.Target{Account: st.Account, Region: st.Region}.From(home)
		printer.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n, target.Describe(at, st.StackName), dash(st.Status), dash(strings.Join(st.Requires, ",")),
			dash(st.Region), updated, dash(strings.Join(outs, " ")))
	}
	w.Flush()
}

func newStateHistoryCmd() *cobra.Command {
	var limit int
	var cf cairnFlags
	cmd := &cobra.Command{
		Use:   "history NAMESPACE KEY",
		Short: "List earlier versions of a persistent graph, newest first",
		Long: "List the S3 versions of state/NAMESPACE/KEY.json, newest first, with the generation and run\n" +
			"that wrote each. Show one with `cairn state show NAMESPACE KEY --version ID`.\n" +
			"History needs bucket versioning; without it cairn warns.",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			s := c.state
			ctx, ns, key := cmd.Context(), args[0], args[1]
			if warning, err := s.VersioningWarning(ctx); err != nil {
				printer.Fprintf(cmd.ErrOrStderr(), "cairn: %v\n", err)
			} else if warning != "" {
				printer.Fprintln(cmd.ErrOrStderr(), warning)
			}
			versions, err := s.History(ctx, ns, key)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(versions) == 0 {
				printer.Fprintf(out, "no versions of state %s/%s (s3://%s/%s)\n", ns, key, s.Bucket, layout.StateKey(ns, key))
				return nil
			}
			w := newTable(out, 0)
			printer.Fprintf(w, "VERSION\tMODIFIED\tGENERATION\tRUN\tSTACKS\tNOTE\n")
			for i, v := range versions {
				if limit > 0 && i == limit {
					printer.Fprintf(w, "... %d older versions (use --limit 0 for all)\n", len(versions)-limit)
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
				printer.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", report.ShortVersion(v.VersionID), v.LastModified.UTC().Format(time.RFC3339), gen, run, stacks, note)
			}
			return w.Flush()
		},
	}
	cf.add(cmd)
	cmd.Flags().IntVar(&limit, "limit", 20, "show at most this many versions (0: all)")
	return cmd
}

func newUnlockCmd() *cobra.Command {
	var force bool
	var cf cairnFlags
	cmd := &cobra.Command{
		Use:   "unlock NAMESPACE KEY",
		Short: "Remove the lock on a persistent graph: an expired one freely, a live one with --force",
		Long: "Remove locks/NAMESPACE/KEY.lock. An expired lock (its run crashed or timed out) is removed\n" +
			"freely. A live lock belongs to a run that may still be deploying: it is removed only with\n" +
			"--force, and the command prints who held it; that run stops at its next lock check.",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			s := c.state
			ns, key := args[0], args[1]
			held, err := s.ForceUnlock(cmd.Context(), ns, key, force)
			var locked *statestore.LockedError
			switch {
			case errors.Is(err, statestore.ErrNotLocked):
				if _, serr := s.Show(cmd.Context(), ns, key, ""); errors.Is(serr, statestore.ErrNotFound) {
					return refuse("there is no graph %s/%s (no %s) and no lock on it: check NAMESPACE and KEY (`cairn state list` lists the graphs)", ns, key, layout.URI(c.bucket, layout.StateKey(ns, key)))
				} else if serr != nil {
					return serr
				}
				printer.Fprintf(cmd.OutOrStdout(), "state %s/%s is not locked: nothing to do\n", ns, key)
				return nil
			case errors.As(err, &locked):
				printer.Fprintf(cmd.ErrOrStderr(), "cairn: state %s/%s is locked by a live run: %s\n", ns, key, locked.Holder)
				printer.Fprintf(cmd.ErrOrStderr(), "cairn: that run may still be deploying; wait until %s, or remove the lock anyway with `cairn unlock %s %s --force`\n",
					locked.Holder.ExpiresAt.UTC().Format(time.RFC3339), ns, key)
				return exitError{1}
			case err != nil:
				return err
			}
			what := "expired lock"
			if time.Now().Before(held.ExpiresAt) {
				what = "LIVE lock (forced)"
			}
			printer.Fprintf(cmd.OutOrStdout(), "removed %s on state %s/%s held by %s\n", what, ns, key, held)
			return nil
		},
	}
	cf.add(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "also remove a live lock (prints who held it)")
	return cmd
}

// stateVersion resolves --version: a whole S3 version id of the state object, or a unique
// end of one as cairn prints them.
func stateVersion(cmd *cobra.Command, s *statestore.Store, ns, key, v string) (string, error) {
	versions, err := s.History(cmd.Context(), ns, key)
	if err != nil {
		return "", err
	}
	var match []string
	for _, x := range versions {
		if x.VersionID == v {
			return v, nil
		}
		if end := strings.TrimPrefix(v, "…"); len(end) >= 6 && strings.HasSuffix(x.VersionID, end) {
			match = append(match, x.VersionID)
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		return v, nil // Show says it does not exist
	}
	return "", refuse("--version %s names %d versions of state %s/%s: give more of it (see `cairn state history %s %s`)", v, len(match), ns, key, ns, key)
}
