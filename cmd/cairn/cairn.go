package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/bundle"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/follow"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/installation"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/provenance"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/review"
	runstate "github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/statestore"
	"github.com/cairn-dev/cairn/internal/template"
	"github.com/cairn-dev/cairn/internal/upload"
)

// cairnFlags finds cairn: the --bucket flag every command that reads or writes the bucket
// takes, resolved with the session's one resolver.
type cairnFlags struct{ bucket string }

func (f *cairnFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.bucket, "bucket", "", "cairn's bucket (default: $"+installation.BucketEnv+", or the export "+installation.BucketExport+")")
}

// cairn is one command's session with cairn's bucket resolved.
type cairn struct {
	*installation.Session
	bucket  string
	history *history.Store
	state   *statestore.Store
}

// known is cairn's bucket when the flag or the environment names it, "" when only AWS
// can tell (the export): what a bundle is checked against before its upload.
func (f *cairnFlags) known() string {
	if f.bucket != "" {
		return f.bucket
	}
	return os.Getenv(installation.BucketEnv)
}

func (f *cairnFlags) open(cmd *cobra.Command) (*cairn, error) {
	s, err := installation.Open(cmd.Context(), installation.Options{Bucket: f.bucket, Stderr: cmd.ErrOrStderr()})
	if err != nil {
		return nil, err
	}
	bucket, err := s.Bucket(cmd.Context())
	if err != nil {
		return nil, err
	}
	return &cairn{Session: s, bucket: bucket,
		history: &history.Store{S3: s.S3, Bucket: bucket},
		state:   &statestore.Store{S3: s.S3, Bucket: bucket, Logger: s.Logger},
	}, nil
}

func (c *cairn) review() *review.Reader {
	return &review.Reader{History: c.history, State: c.state}
}

// deploymentFlag is --deployment NAME of push and plan.
func deploymentFlag(cmd *cobra.Command, name *string, where string) {
	cmd.Flags().StringVar(name, "deployment", "", "deployment name: the upload goes to "+where)
}

// checkDeployment refuses a missing or unusable --deployment.
func checkDeployment(cmd *cobra.Command, deployment, key string) error {
	if deployment == "" {
		return usageError{cmd: cmd, msg: "--deployment NAME is required (the upload goes to " + key + ")"}
	}
	if err := layout.CheckDeployment(deployment); err != nil {
		return fmt.Errorf("%s: %w", cmd.Name(), err)
	}
	return nil
}

// prepare validates and zips the bundle at path; a config that does not validate prints
// every problem on its own line and exits 1.
func prepare(stderr io.Writer, path, deployment string, o upload.Options) (*upload.Bundle, error) {
	b, err := upload.Prepare(path, deployment, o)
	var errs config.Errors
	switch {
	case errors.As(err, &errs):
		for _, e := range errs {
			printer.Fprintln(stderr, e)
		}
		return nil, exitError{1}
	case err != nil:
		printer.Fprintln(stderr, err)
		return nil, exitError{1}
	}
	return b, nil
}

// uploaded describes an upload: "s3://B/KEY (version …abc) at git COMMIT, pull request #7".
func uploaded(bucket, key, version string, src provenance.Source) string {
	s := fmt.Sprintf("s3://%s/%s", bucket, key)
	if version != "" {
		s += " (version " + report.ShortVersion(version) + ")"
	}
	if src.Commit != "" {
		s += " at git " + src.Commit
	}
	if src.PullRequest > 0 {
		s += fmt.Sprintf(", pull request #%d", src.PullRequest)
	}
	return s
}

// clockTime is an elapsed time as mm:ss (h:mm:ss past an hour).
func clockTime(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%02d:%02d", m, s)
}

// kindOf names what a run is for: "push", "plan run", "apply of plan P".
func kindOf(doc *rundoc.Document) string {
	switch history.KindOf(doc) {
	case history.Apply:
		if doc.Content {
			return "apply of a bundle's content from reviewed plans"
		}
		return "apply of plan " + doc.Plan
	case history.PlanRun:
		return "plan run"
	}
	return "push"
}

// outcome prints how a run ended (a summary, what it refused or warned about, its
// report, and the next command when it failed) and returns its exit code: 0 succeeded,
// 3 superseded, 1 otherwise.
func outcome(w io.Writer, doc *rundoc.Document) error { return outcomeOf(w, doc, "") }

// outcomeOf is outcome of a run of the bundle at path (the next command names it).
func outcomeOf(w io.Writer, doc *rundoc.Document, path string) error {
	r := doc.Run
	if r.Status == runstate.Superseded {
		printer.Fprintf(w, "run %s superseded: %s\n", r.ID, r.Reason)
		printNext(w, doc, path)
		return exitError{3}
	}
	sum := follow.Summarize(doc)
	printer.Fprintf(w, "run %s %s in %s: %s\n", r.ID, r.Status, sum.Duration.Round(time.Second), sum)
	if r.Reason != "" && r.Status != runstate.Succeeded {
		printer.Fprintf(w, "  reason: %s\n", r.Reason)
	}
	notes(w, "  ", doc)
	printOutputs(w, false, runOutputs(r))
	printer.Fprintf(w, "report: s3://%s/%s\n", doc.Bundle.Bucket, doc.ReportKey())
	if r.Status != runstate.Succeeded {
		printNext(w, doc, path)
		return exitError{1}
	}
	return nil
}

// notes prints a run's errors, refusals, warnings and notes, each on its own line.
func notes(w io.Writer, indent string, doc *rundoc.Document) {
	for _, list := range []struct {
		label string
		lines []string
	}{{"error", doc.Errors}, {"refused", doc.Refusals}, {"warning", doc.Warnings}, {"note", doc.Notes}} {
		for _, l := range list.lines {
			printer.Fprintf(w, "%s%s: %s\n", indent, list.label, l)
		}
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// ago says how long ago t was, as review ages read: "5m ago".
func ago(now, t time.Time) string {
	return review.Age(max(0, now.Sub(t))) + " ago"
}

// asRefusal turns the errors of expected conditions (an unknown plan, a deployment with
// nothing deployed) into refusals.
func asRefusal(err error) error {
	var unknown *review.UnknownPlanError
	if errors.As(err, &unknown) {
		var ids []string
		for _, e := range unknown.Recent {
			ids = append(ids, e.Plan.ID)
		}
		return refuse("%v%s", err, template.Suggest(unknown.ID, ids))
	}
	if errors.Is(err, history.ErrNothingDeployed) {
		return refuse("%v", err)
	}
	return err
}

// newTable is a tabwriter for a table on a terminal, whose lines end where their text
// does, without the padding of an empty last cell.
func newTable(w io.Writer, minwidth int) *tabwriter.Writer {
	return tabwriter.NewWriter(&trimmer{w: w}, minwidth, 4, 2, ' ', 0)
}

// trimmer drops the spaces that end a line.
type trimmer struct {
	w      io.Writer
	spaces int
}

func (t *trimmer) Write(p []byte) (int, error) {
	var out []byte
	for _, c := range p {
		switch c {
		case ' ':
			t.spaces++
			continue
		case '\n':
			t.spaces = 0
		default:
			for ; t.spaces > 0; t.spaces-- {
				out = append(out, ' ')
			}
		}
		out = append(out, c)
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// varFileFlag adds --var-file: a YAML file of variables for ${var} lookups, stored in the
// bundle as cairn.vars.yaml.
func varFileFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "var-file", "", "YAML file of variables for ${var NAME} lookups, overriding the config's variables; stored in the bundle as "+bundle.VarsName)
}
