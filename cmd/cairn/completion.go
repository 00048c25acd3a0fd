package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/installation"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/printer"
)

// completionTimeout bounds what a completion reads from the bucket: a shell waits for it.
const completionTimeout = 3 * time.Second

// addCompletions gives cobra's `cairn completion bash|zsh|fish|powershell` what cairn
// knows: the deployments in the bucket for a NAME (and --deployment), a deployment's plans
// for a PLAN_ID and its runs for a RUN, files for a PATH. It reads the bucket as commands
// do (--bucket, CAIRN_BUCKET, the export), and offers nothing when it cannot.
func addCompletions(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.HasParent() && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = completeArgs
		}
		if c.Flags().Lookup("deployment") != nil {
			_ = c.RegisterFlagCompletionFunc("deployment", func(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
				return complete(cmd, prefix, deployments)
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeArgs completes the positional argument after args by the name its usage line
// gives it.
func completeArgs(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	words := positional(cmd)
	if len(args) >= len(words) {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	word, _ := cutOptional(words[len(args)])
	switch word {
	case "NAME":
		return complete(cmd, prefix, deployments)
	case "PLAN_ID":
		return complete(cmd, prefix, func(ctx context.Context, h *history.Store) ([]string, error) {
			return only(layout.CheckPlanID)(h.PlanIDs(ctx, args[0]))
		})
	case "RUN":
		return complete(cmd, prefix, func(ctx context.Context, h *history.Store) ([]string, error) {
			return only(layout.CheckPlanID)(h.RunIDs(ctx, args[0])) // a plan's id is its run's
		})
	case "PATH", "DIR", "FILE.json":
		return nil, cobra.ShellCompDirectiveDefault
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// deployments are the names of the deployments in the bucket that the deployer accepts
// as names (layout.CheckDeployment): a key under deployments/ or plans/ that is not one
// (spaces, a reserved name, a line break) is no deployment, and is not offered.
func deployments(ctx context.Context, h *history.Store) ([]string, error) {
	return only(layout.CheckDeployment)(objects.Deployments(ctx, h.S3, h.Bucket))
}

// only keeps the names check accepts.
func only(check func(string) error) func([]string, error) ([]string, error) {
	return func(names []string, err error) ([]string, error) {
		return slices.DeleteFunc(names, func(n string) bool { return check(n) != nil }), err
	}
}

// complete lists what list finds in cairn's bucket that starts with prefix, newest
// first as listed.
func complete(cmd *cobra.Command, prefix string, list func(context.Context, *history.Store) ([]string, error)) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	bucketFlag, _ := cmd.Flags().GetString("bucket")
	s, err := installation.Open(ctx, installation.Options{Bucket: bucketFlag, Stderr: io.Discard})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	bucket, err := s.Bucket(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	all, err := list(ctx, &history.Store{S3: s.S3, Bucket: bucket})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, v := range all {
		if strings.HasPrefix(v, prefix) {
			out = append(out, printer.Text(v)) // checked names print as themselves
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
