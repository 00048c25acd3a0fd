package main

import (
	"errors"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/graph"
	"github.com/cairn-dev/cairn/internal/installation"
	"github.com/cairn-dev/cairn/internal/printer"
)

func init() { commands = append(commands, newValidateCmd) }

func newValidateCmd() *cobra.Command {
	var deployment, namespaces, ssmPaths, bucketName string
	cmd := &cobra.Command{
		Use:   "validate PATH",
		Short: "Check a bundle (directory, zip or single YAML file) and report every problem",
		Long: `Validate loads the bundle at PATH and checks its cairn.yaml, its templates and the
dependencies between its stacks. It prints a one-line summary and exits 0, or prints every
problem on its own line as FILE:LINE:COL: KEY: message and exits 1. Templates are checked
against the CloudFormation resource specification and CloudFormation's own rules (see
docs/bundle.md); warnings, such as a deprecated Lambda runtime, are printed and do not fail.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := config.ParseNamespaces(namespaces)
			if err != nil {
				return usageError{cmd: cmd, msg: "--namespaces: " + err.Error()}
			}
			paths, err := config.ParseSSMPaths(ssmPaths)
			if err != nil {
				return usageError{cmd: cmd, msg: "--ssm-paths: " + err.Error()}
			}
			loaded, err := loadBundleWith(cmd.ErrOrStderr(), args[0], config.LoadOptions{Deployment: deployment, Namespaces: ns, SSMPaths: paths, Bucket: bucketName})
			if err != nil {
				return err
			}
			for _, w := range loaded.config.Warnings {
				printer.Fprintln(cmd.ErrOrStderr(), w)
			}
			printer.Fprintf(cmd.OutOrStdout(), "%s: ok: %d stacks in namespace %q, %d dependencies, bundle sha256 %s\n",
				loaded.bundle.ConfigFile, len(loaded.config.Stacks), loaded.config.Namespace,
				edgeCount(loaded.graph), loaded.bundle.SHA256)
			return nil
		},
	}
	cmd.Flags().StringVar(&deployment, "deployment", "", "deployment name (the default persistent_graph_key)")
	cmd.Flags().StringVar(&namespaces, "namespaces", os.Getenv("CAIRN_NAMESPACES"), "namespaces cairn may manage, NS,... (as the CDK context cairn:namespaces; default $CAIRN_NAMESPACES; \"\" allows every namespace)")
	cmd.Flags().StringVar(&ssmPaths, "ssm-paths", os.Getenv("CAIRN_SSM_PATHS"), "Parameter Store paths each namespace's ${ssm} lookups and {{resolve:ssm:...}} references may read, as JSON {\"NS\": [\"/NS/*\"]} (as the CDK context cairn:ssmPaths; default $CAIRN_SSM_PATHS; \"\" allows every name)")
	cmd.Flags().StringVar(&bucketName, "bucket", os.Getenv(installation.BucketEnv), "cairn's bucket, whose objects a template may name only at the templates and artifacts cairn uploads (default $"+installation.BucketEnv+"; \"\" checks no location)")
	return cmd
}

// loaded is a bundle whose config validated, with its dependency graph.
type loaded struct {
	bundle *bundle.Bundle
	config *config.Config
	graph  *graph.Graph
}

// loadBundle opens, loads and validates the bundle at path. On failure it writes every
// problem to stderr, one per line, and returns exitError{1}.
func loadBundle(stderr io.Writer, path, deployment string) (*loaded, error) {
	return loadBundleWith(stderr, path, config.LoadOptions{Deployment: deployment})
}

// loadBundleWith is loadBundle with every load option.
func loadBundleWith(stderr io.Writer, path string, o config.LoadOptions) (*loaded, error) {
	b, err := bundle.Open(path)
	if err != nil {
		printer.Fprintln(stderr, err)
		return nil, exitError{1}
	}
	c, err := o.Load(b)
	if err != nil {
		var errs config.Errors
		if errors.As(err, &errs) {
			for _, e := range errs {
				printer.Fprintln(stderr, e)
			}
		} else {
			printer.Fprintf(stderr, "%s: %v\n", b.ConfigFile, err)
		}
		return nil, exitError{1}
	}
	g, err := c.Graph()
	if err != nil {
		printer.Fprintf(stderr, "%s: %v\n", b.ConfigFile, err)
		return nil, exitError{1}
	}
	return &loaded{bundle: b, config: c, graph: g}, nil
}

func edgeCount(g *graph.Graph) int {
	n := 0
	for _, name := range g.Nodes() {
		n += len(g.Dependencies(name))
	}
	return n
}
