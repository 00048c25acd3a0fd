package drift

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/clock"
	"github.com/cairn-dev/cairn/internal/report"
)

// Report is the document at drift/NAME/ID.json: one graph's result in one sweep.
type Report struct {
	Sweep     string    `json:"sweep"`
	Trigger   string    `json:"trigger"`
	StartedAt time.Time `json:"started_at"`
	WrittenAt time.Time `json:"written_at"`
	Graph     *Graph    `json:"graph"`
	// Changes lists what differs from the previous report (see Graph.Changes).
	Changes []string `json:"changes,omitempty"`
	// Previous is the key of the report compared with.
	Previous string `json:"previous,omitempty"`
}

// finishGraph writes g's report and publishes its summary when something drifted or
// changed since the previous report.
func (d *Driver) finishGraph(ctx context.Context, sw *Sweep, g *Graph) error {
	key := bucket.DriftReportKey(g.Name, sw.ID)
	prevKey, prev, err := d.previousReport(ctx, g.Name, key)
	if err != nil {
		d.log.Warn("drift: previous report unreadable; changes are not computed", "graph", g.Name, "err", err)
	}
	r := &Report{Sweep: sw.ID, Trigger: sw.Trigger, StartedAt: sw.StartedAt, WrittenAt: d.clk.Now().UTC(), Graph: g, Previous: prevKey}
	if prev != nil {
		r.Changes = g.Changes(prev.Graph)
	}
	notify := g.Drifted() || len(r.Changes) > 0
	// Report is set only once everything is done, so a failure is retried by a later pass.
	g.Report, g.Notified = key, notify && d.cfg.Topic != ""
	body, err := json.MarshalIndent(r, "", "  ")
	var md bytes.Buffer
	Markdown(&md, r)
	g.Report = ""
	if err != nil {
		return fmt.Errorf("drift: encode report %s: %w", key, err)
	}
	mdKey := bucket.DriftMarkdownKey(g.Name, sw.ID)
	for _, o := range []struct {
		key, ctype string
		body       []byte
	}{{key, "application/json", body}, {mdKey, "text/markdown; charset=utf-8", md.Bytes()}} {
		if _, err := bucket.Put(ctx, d.c.S3, d.cfg.Bucket, o.key, o.body, bucket.Write{ContentType: o.ctype}); err != nil {
			return fmt.Errorf("drift: report: %w", err)
		}
	}
	d.log.Info("drift: report written", "graph", g.Name, "report", key, "drifted", g.Count(Drifted),
		"in_sync", g.Count(InSync), "changes", len(r.Changes), "notify", g.Notified)
	if g.Notified {
		uri := bucket.URI(d.cfg.Bucket, mdKey)
		if _, err := d.c.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(d.cfg.Topic),
			Subject: aws.String(Subject(r)), Message: aws.String(Summary(r, uri))}); err != nil {
			return fmt.Errorf("drift: publish the drift summary of %s to %s: %w", g.Name, d.cfg.Topic, err)
		}
	}
	g.Report = key
	return nil
}

// previousReport returns the newest report of name older than key, if any.
func (d *Driver) previousReport(ctx context.Context, name, key string) (string, *Report, error) {
	keys, err := bucket.List(ctx, d.c.S3, d.cfg.Bucket, bucket.DriftReportsOf(name))
	if err != nil {
		return "", nil, err
	}
	var best string
	for _, k := range keys {
		if _, ok := bucket.DriftReportOf(name, k); ok && k < key && k > best {
			best = k
		}
	}
	if best == "" {
		return "", nil, nil
	}
	r, err := d.ReadReport(ctx, best)
	return best, r, err
}

// ReadReport reads the JSON report at key.
func (d *Driver) ReadReport(ctx context.Context, key string) (*Report, error) {
	o, err := bucket.Get(ctx, d.c.S3, d.cfg.Bucket, key, "", 0)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(o.Body, &r); err != nil || r.Graph == nil {
		return nil, fmt.Errorf("s3://%s/%s is not a drift report (%v)", d.cfg.Bucket, key, err)
	}
	return &r, nil
}

// Subject is the notification's subject (SNS allows 100 characters).
func Subject(r *Report) string {
	g := r.Graph
	var s string
	switch {
	case g.Count(Drifted) > 0:
		s = fmt.Sprintf("cairn drift: %s: %d of %d stacks drifted", g.Name, g.Count(Drifted), len(g.Stacks))
	case g.Drifted():
		s = fmt.Sprintf("cairn drift: %s: stacks missing or untracked", g.Name)
	default:
		s = fmt.Sprintf("cairn drift: %s: drift changed, now in sync", g.Name)
	}
	s = report.Line(s)
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}

// Summary is the notification's text: every drifted property, and where the report is.
func Summary(r *Report, uri string) string {
	g := r.Graph
	var b strings.Builder
	fmt.Fprintf(&b, "Drift of %s (graph %s/%s), sweep %s: %d drifted, %d in sync, %d unknown, %d not checked.\n",
		report.Line(g.Name), report.Line(g.Namespace), report.Line(g.Key), report.Line(r.Sweep), g.Count(Drifted), g.Count(InSync), g.Count(Unknown), g.Count(NotChecked))
	for _, s := range g.Stacks {
		if s.Status != Drifted {
			continue
		}
		for _, res := range s.Resources {
			if res.Ignored != "" {
				continue
			}
			if len(res.Differences) == 0 {
				fmt.Fprintf(&b, "- %s %s (%s): %s\n", report.Line(s.Describe()), report.Line(res.LogicalID), report.Line(res.Type), report.Line(res.Status))
			}
			for _, df := range res.Differences {
				fmt.Fprintf(&b, "- %s %s (%s) %s: expected %s, actual %s (%s)\n", report.Line(s.Describe()), report.Line(res.LogicalID), report.Line(res.Type),
					report.Line(df.Path), report.Line(cmp.Or(df.Expected, "(none)")), report.Line(cmp.Or(df.Actual, "(none)")), report.Line(df.kind()))
			}
		}
	}
	for _, m := range g.Missing {
		fmt.Fprintf(&b, "- %s: in the graph but missing from AWS\n", report.Line(m))
	}
	for _, u := range g.Untracked {
		fmt.Fprintf(&b, "- %s: tagged for this graph but not in it\n", report.Line(u))
	}
	for _, c := range r.Changes {
		fmt.Fprintf(&b, "- changed: %s\n", report.Line(c))
	}
	fmt.Fprintf(&b, "Report: %s\n", uri)
	return b.String()
}

// kind is the difference's type as reports show it, saying when its values are a secret's.
func (d Difference) kind() string {
	if d.Masked {
		return d.Type + ", a secret: values not shown"
	}
	return d.Type
}

// Markdown writes r for people.
func Markdown(w io.Writer, r *Report) {
	g := r.Graph
	fmt.Fprintf(w, "# Drift of %s\n\n", report.Text(g.Name))
	fmt.Fprintf(w, "Graph %s", report.Code(g.Namespace+"/"+g.Key))
	if g.Bundle != "" {
		fmt.Fprintf(w, ", bundle %s", report.Text(g.Bundle))
	}
	fmt.Fprintf(w, ". Sweep %s (%s), started %s.\n\n", report.Code(r.Sweep), report.Text(r.Trigger), clock.Stamp(r.StartedAt))
	if g.Skipped != "" {
		fmt.Fprintf(w, "**Not checked:** %s\n\n", report.Text(g.Skipped))
	}
	for _, n := range g.Notes {
		fmt.Fprintf(w, "> %s\n\n", report.Text(n))
	}
	fmt.Fprintf(w, "| Stack | CloudFormation | Status | Detail |\n|---|---|---|---|\n")
	for _, s := range g.Stacks {
		detail := s.Reason
		if s.Status == Drifted || s.Status == InSync {
			n := 0
			for _, res := range s.Resources {
				if res.Ignored == "" {
					n++
				}
			}
			if n > 0 {
				detail = strings.TrimSpace(fmt.Sprintf("%d resource(s) drifted %s", n, detail))
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", report.Cell(s.Name), report.Cell(s.Describe()), s.Status, report.Cell(detail))
	}
	fmt.Fprintln(w)
	for _, s := range g.Stacks {
		if len(s.Resources) == 0 {
			continue
		}
		fmt.Fprintf(w, "## %s\n\n", report.Text(s.Describe()))
		for _, res := range s.Resources {
			fmt.Fprintf(w, "### %s (%s): %s", report.Text(res.LogicalID), report.Text(res.Type), report.Text(res.Status))
			if res.Ignored != "" {
				fmt.Fprintf(w, " (ignored by %s)", report.Code(res.Ignored))
			}
			fmt.Fprintf(w, "\n\n")
			if len(res.Differences) == 0 {
				continue
			}
			fmt.Fprintf(w, "| Property | Expected | Actual | Difference |\n|---|---|---|---|\n")
			for _, df := range res.Differences {
				fmt.Fprintf(w, "| %s | %s | %s | %s |\n", report.CodeCell(df.Path), report.Cell(cmp.Or(df.Expected, "(none)")), report.Cell(cmp.Or(df.Actual, "(none)")), report.Cell(df.kind()))
			}
			fmt.Fprintln(w)
		}
	}
	if len(g.Missing) > 0 {
		fmt.Fprintf(w, "## In the graph, missing from AWS\n\n")
		for _, m := range g.Missing {
			fmt.Fprintf(w, "- %s\n", report.Text(m))
		}
		fmt.Fprintln(w)
	}
	if len(g.Untracked) > 0 {
		fmt.Fprintf(w, "## Tagged for this graph, not in it\n\n")
		for _, u := range g.Untracked {
			fmt.Fprintf(w, "- %s\n", report.Text(u))
		}
		fmt.Fprintln(w)
	}
	if len(r.Changes) > 0 {
		fmt.Fprintf(w, "## Changed since %s\n\n", report.Text(r.Previous))
		changes := append([]string(nil), r.Changes...)
		sort.Strings(changes)
		for _, c := range changes {
			fmt.Fprintf(w, "- %s\n", report.Text(c))
		}
		fmt.Fprintln(w)
	}
}
