package main

import (
	"errors"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/installation"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/template"
)

// argumentChecks are the checks of the positional arguments named so in usage lines: a
// deployment name, a plan or run id. The bucket layout owns what each may hold, so every
// command accepts exactly the names the deployer does.
var argumentChecks = map[string]func(string) error{
	"NAME":    layout.CheckDeployment,
	"PLAN_ID": layout.CheckPlanID,
	"RUN":     layout.CheckRunID,
}

// checkNames checks the arguments of cmd named in argumentChecks (required ones; an
// optional [NAME] may name something else, as drift's graph does).
func checkNames(cmd *cobra.Command, args []string) error {
	for i, w := range positional(cmd) {
		if i >= len(args) {
			break
		}
		name, optional := w, false
		if n, ok := cutOptional(w); ok {
			name, optional = n, true
		}
		check := argumentChecks[name]
		if check == nil || optional && name == "NAME" {
			continue
		}
		if err := check(args[i]); err != nil {
			return usageError{cmd: cmd, msg: err.Error()}
		}
	}
	return nil
}

// suggestDeployment runs after a command whose first argument is a deployment NAME
// refused it: when the bucket has no upload of that deployment but one of a name close to
// it, the refusal says so (an unknown deployment, not a missing run or plan).
func suggestDeployment(cmd *cobra.Command, args []string, err error) error {
	var r refusal
	if len(args) == 0 || !errors.As(err, &r) {
		return err
	}
	bucketFlag, _ := cmd.Flags().GetString("bucket")
	s, oerr := installation.Open(cmd.Context(), installation.Options{Bucket: bucketFlag, Stderr: cmd.ErrOrStderr()})
	if oerr != nil {
		return err
	}
	bucket, berr := s.Bucket(cmd.Context())
	if berr != nil {
		return err
	}
	known, lerr := objects.Deployments(cmd.Context(), s.S3, bucket)
	if lerr != nil || slices.Contains(known, args[0]) {
		return err
	}
	if hint := template.Suggest(args[0], known); hint != "" {
		return refuse("deployment %s does not exist in s3://%s%s", args[0], bucket, hint)
	}
	return err
}

// takesDeployment reports whether cmd's first positional argument is a deployment NAME.
func takesDeployment(cmd *cobra.Command) bool {
	p := positional(cmd)
	return len(p) > 0 && p[0] == "NAME"
}

// positional lists the words of cmd's usage line naming positional arguments.
func positional(cmd *cobra.Command) []string {
	var out []string
	for _, w := range strings.Fields(cmd.Use)[1:] {
		if len(w) > 0 && (w[0] == '-' || len(w) > 1 && w[:2] == "[-") {
			break
		}
		out = append(out, w)
	}
	return out
}

func cutOptional(w string) (string, bool) {
	if len(w) > 2 && w[0] == '[' && w[len(w)-1] == ']' {
		return w[1 : len(w)-1], true
	}
	return w, false
}

// wrapDeploymentRefusals makes a command taking a deployment NAME say when the name is
// unknown and another is close (suggestDeployment).
func wrapDeploymentRefusals(c *cobra.Command) {
	if c.RunE == nil || !takesDeployment(c) {
		return
	}
	runE := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		return suggestDeployment(cmd, args, runE(cmd, args))
	}
}
