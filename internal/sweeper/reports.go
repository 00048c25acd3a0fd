package sweeper

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/drift"
	"github.com/cairn-dev/cairn/internal/objects"
)

// finishGraph writes g's report and publishes its summary when something drifted or
// changed since the previous report.
func (d *Driver) finishGraph(ctx context.Context, sw *drift.Sweep, g *drift.Graph) error {
	key := bucket.DriftReportKey(g.Name, sw.ID)
	prevKey, prev, err := d.previousReport(ctx, g.Name, key)
	if err != nil {
		d.log.Warn("drift: previous report unreadable; changes are not computed", "graph", g.Name, "err", err)
	}
	r := &drift.Report{Sweep: sw.ID, Trigger: sw.Trigger, StartedAt: sw.StartedAt, WrittenAt: d.clk.Now().UTC(), Graph: g, Previous: prevKey}
	if prev != nil {
		r.Changes = g.Changes(prev.Graph)
	}
	notify := g.Drifted() || len(r.Changes) > 0
	// Report is set only once everything is done, so a failure is retried by a later pass.
	g.Report, g.Notified = key, notify && d.cfg.Topic != ""
	body, err := json.MarshalIndent(r, "", "  ")
	var md bytes.Buffer
	drift.Markdown(&md, r)
	g.Report = ""
	if err != nil {
		return fmt.Errorf("drift: encode report %s: %w", key, err)
	}
	mdKey := bucket.DriftMarkdownKey(g.Name, sw.ID)
	for _, o := range []struct {
		key, ctype string
		body       []byte
	}{{key, "application/json", body}, {mdKey, "text/markdown; charset=utf-8", md.Bytes()}} {
		if _, err := objects.Put(ctx, d.c.S3, d.cfg.Bucket, o.key, o.body, objects.Write{ContentType: o.ctype}); err != nil {
			return fmt.Errorf("drift: report: %w", err)
		}
	}
	d.log.Info("drift: report written", "graph", g.Name, "report", key, "drifted", g.Count(drift.Drifted),
		"in_sync", g.Count(drift.InSync), "changes", len(r.Changes), "notify", g.Notified)
	if g.Notified {
		uri := bucket.URI(d.cfg.Bucket, mdKey)
		if _, err := d.c.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(d.cfg.Topic),
			Subject: aws.String(drift.Subject(r)), Message: aws.String(drift.Summary(r, uri))}); err != nil {
			return fmt.Errorf("drift: publish the drift summary of %s to %s: %w", g.Name, d.cfg.Topic, err)
		}
	}
	g.Report = key
	return nil
}

// previousReport returns the newest report of name older than key, if any.
func (d *Driver) previousReport(ctx context.Context, name, key string) (string, *drift.Report, error) {
	keys, err := objects.List(ctx, d.c.S3, d.cfg.Bucket, bucket.DriftReportsOf(name))
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
func (d *Driver) ReadReport(ctx context.Context, key string) (*drift.Report, error) {
	o, err := objects.Get(ctx, d.c.S3, d.cfg.Bucket, key, "", 0)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var r drift.Report
	if err := json.Unmarshal(o.Body, &r); err != nil || r.Graph == nil {
		return nil, fmt.Errorf("s3://%s/%s is not a drift report (%v)", d.cfg.Bucket, key, err)
	}
	return &r, nil
}
