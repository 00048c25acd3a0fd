package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/awsclient"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/drift"
	"github.com/cairn-dev/cairn/internal/installation"
	"github.com/cairn-dev/cairn/internal/printer"
	"github.com/cairn-dev/cairn/internal/sweeper"
)

func init() {
	commands = append(commands, newDriftCmd)
	// Built at each invocation, so `cairn local up` starts even before CAIRN_BUCKET and
	// CAIRN_DRIFT_QUEUE_URL are set; a missing one is reported by the invocation.
	localFunctions["drift"] = func(context.Context) (any, error) {
		return func(ctx context.Context, payload json.RawMessage) (*events.SQSEventResponse, error) {
			h, err := sweeper.HandlerFromEnv(ctx)
			if err != nil {
				return nil, err
			}
			return h(ctx, payload)
		}, nil
	}
}

func newDriftCmd() *cobra.Command {
	var queueURL, topic string
	var wait, asJSON bool
	var concurrency int
	var poll time.Duration
	var cf cairnFlags
	cmd := &cobra.Command{
		Use:   "drift [NAME]",
		Short: "Check the stacks of every persistent graph (or of deployment NAME) for drift",
		Long: `Drift starts drift detection on every stack of every persistent graph in cairn's bucket,
or only of the graph of deployment NAME (a deployment, a graph key or NAMESPACE/KEY), at
most --concurrency at a time. A graph whose lock is held (a deploy is running) is skipped
and reported as not checked. Stacks the applied config's drift.ignore names are not
checked.

Each graph's report goes to s3://BUCKET/drift/NAME/SWEEP.json and .md, and a summary to
the notifications topic (--topic, ` + installation.TopicEnv + `, or the export ` + installation.TopicExport + `)
when something drifted or changed since the previous report.

Without --wait the detections are started and the drift function finishes the sweep
(the continuation goes to --queue-url, ` + installation.DriftQueueEnv + `; drift status changes step it
as detections finish). With --wait this command also steps the sweep itself every --poll
until it ends, prints each stack's status and exits like diff(1): 0 when nothing drifted,
1 when something did (or a stack is missing or untracked), 2 on error. --json (implies
--wait) prints the ended sweep instead as one JSON document on one line, as its reports in the bucket
hold it, with the same exit code.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			filter := ""
			if len(args) == 1 {
				filter = args[0]
			}
			c, err := cf.open(cmd)
			if err != nil {
				return err
			}
			wait = wait || asJSON
			queue := first(queueURL, c.DriftQueue())
			if !wait && queue == "" {
				return usageError{cmd: cmd, msg: "without --wait the drift function finishes the sweep, through its queue: pass --queue-url or set " + installation.DriftQueueEnv + " (or use --wait)"}
			}
			if topic == "" {
				if topic, err = c.Topic(ctx); err != nil {
					return err
				}
			}
			d, err := sweeper.NewFromAWS(c.AWS, sweeper.Config{Bucket: c.bucket, QueueURL: queue, Topic: topic,
				Concurrency: concurrency, Logger: c.Logger})
			if err != nil {
				return err
			}
			sw, err := d.Start(ctx, sweeper.Request{Trigger: "cli", Filter: filter})
			if err == nil && wait {
				sw, err = d.Wait(ctx, sw, poll)
			}
			if err != nil {
				return err
			}
			if !wait {
				printer.Fprintf(out, "sweep %s started over %d %s, %d %s in flight; the drift function finishes it.\n",
					sw.ID, len(sw.Graphs), plural(len(sw.Graphs), "graph"), sw.InFlight(), plural(sw.InFlight(), "detection"))
				for _, g := range sw.Graphs {
					printer.Fprintf(out, "report of %s: s3://%s/%s\n", g.Name, c.bucket, layout.DriftMarkdownKey(g.Name, sw.ID))
				}
				return nil
			}
			if asJSON {
				return printSweepJSON(out, sw)
			}
			return printSweep(out, c.bucket, sw)
		},
	}
	cf.add(cmd)
	cmd.Flags().StringVar(&queueURL, "queue-url", "", "the drift function's queue, for continuations (default: $"+installation.DriftQueueEnv+")")
	cmd.Flags().StringVar(&topic, "topic", "", "notifications topic ARN (default: $"+installation.TopicEnv+", or the export "+installation.TopicExport+")")
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the sweep to the end and print the result")
	cmd.Flags().BoolVar(&asJSON, "json", false, "follow the sweep as --wait does and print it as one JSON document")
	cmd.Flags().IntVar(&concurrency, "concurrency", drift.DefaultConcurrency, "most drift detections in flight at once")
	cmd.Flags().DurationVar(&poll, "poll", sweeper.DefaultPollInterval, "with --wait, how often to step the sweep (look at detections in flight, start the next)")
	return cmd
}

func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// printSweep prints each stack's result and returns exit code 1 when something drifted.
func printSweep(w io.Writer, bucket string, sw *drift.Sweep) error {
	tw := newTable(w, 2)
	printer.Fprintf(tw, "GRAPH\tSTACK\tCLOUDFORMATION\tSTATUS\tDETAIL\n")
	drifted := false
	for _, g := range sw.Graphs {
		drifted = drifted || g.Drifted()
		for _, s := range g.Stacks {
			detail := s.Reason
			for _, r := range s.Resources {
				if r.Ignored != "" {
					continue
				}
				for _, df := range r.Differences {
					detail = strings.TrimPrefix(detail+"; ", "; ") + fmt.Sprintf("%s %s: %s -> %s", r.LogicalID, df.Path, orDash(df.Expected), orDash(df.Actual))
				}
				if len(r.Differences) == 0 {
					detail = strings.TrimPrefix(detail+"; ", "; ") + r.LogicalID + " " + r.Status
				}
			}
			printer.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", g.Name, s.Name, s.Describe(), s.Status, detail)
		}
		for _, m := range g.Missing {
			printer.Fprintf(tw, "%s\t-\t%s\tMISSING\tin the graph, not in AWS\n", g.Name, m)
		}
		for _, u := range g.Untracked {
			printer.Fprintf(tw, "%s\t-\t%s\tUNTRACKED\ttagged for this graph, not in it\n", g.Name, u)
		}
	}
	tw.Flush()
	for _, g := range sw.Graphs {
		for _, s := range g.Stacks {
			if rc := s.Reconcile(g.Name); rc != "" {
				printer.Fprintf(w, "reconcile %s (%s): %s\n", s.Name, s.Describe(), rc)
			}
		}
	}
	for _, g := range sw.Graphs {
		if g.Report != "" {
			printer.Fprintf(w, "report of %s: %s\n", g.Name, layout.URI(bucket, layout.DriftMarkdownKey(g.Name, sw.ID)))
		}
	}
	if drifted {
		return exitError{1}
	}
	return nil
}

// printSweepJSON prints the ended sweep as JSON and returns exit code 1 when something
// drifted, as printSweep does.
func printSweepJSON(w io.Writer, sw *drift.Sweep) error {
	if err := printer.WriteJSON(w, sw, ""); err != nil {
		return err
	}
	for _, g := range sw.Graphs {
		if g.Drifted() {
			return exitError{1}
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// newLocalTamperCmd is `cairn local tamper`: it changes a resource of a stack in the
// emulator out of band, as a person editing it in the console would, so drift detection
// has something to find.
func newLocalTamperCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "tamper STACK LOGICAL_ID PROPERTY=VALUE",
		Short: "Change a resource property in the emulator out of band, to watch drift detection find it",
		Long: `Tamper changes PROPERTY of resource LOGICAL_ID of STACK in the emulator's CloudFormation
(at $AWS_ENDPOINT_URL, as printed by "cairn local up") without touching its template. PROPERTY
is a path like VersioningConfiguration/Status or Tags/0/Value; VALUE is JSON when it parses
as JSON, a string otherwise. The next "cairn drift --wait" reports the difference.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			prop, value, ok := strings.Cut(args[2], "=")
			if !ok || prop == "" {
				return fmt.Errorf("local tamper: %q is not PROPERTY=VALUE (e.g. VersioningConfiguration/Status=Suspended)", args[2])
			}
			body := map[string]string{"stack": args[0], "logicalId": args[1], "property": prop, "value": value}
			if err := postLocal(cmd.Context(), "tamper", body); err != nil {
				return err
			}
			printer.Fprintf(cmd.OutOrStdout(), "stack %s: %s %s set to %s out of band; run `cairn drift --wait` to see it reported\n", args[0], args[1], prop, value)
			return nil
		},
	}
}

// postLocal posts body as JSON to the emulator's CloudFormation control endpoint what
// (tamper, faults), at $AWS_ENDPOINT_URL, and says what the emulator refused.
func postLocal(ctx context.Context, what string, body any) error {
	endpoint := strings.TrimRight(awsclient.Endpoint(), "/")
	if endpoint == "" {
		return fmt.Errorf("local %s: AWS_ENDPOINT_URL is not set: start the emulator with `cairn local up` and export the environment it prints", what)
	}
	data, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/_local/cloudformation/"+what, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("local %s: %w", what, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return installation.Explain(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(answer, &e) == nil && e.Error != "" {
			// The emulator names its own operation; say it once.
			return fmt.Errorf("local %s: %s", what, strings.TrimPrefix(e.Error, what+": "))
		}
		return fmt.Errorf("local %s: the emulator answered %s: %s (does it serve CloudFormation?)", what, resp.Status, strings.TrimSpace(string(answer)))
	}
	return nil
}
