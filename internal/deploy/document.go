package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
)

// Superseded is the status of a run whose upload was no longer the newest version of its
// key when it arrived: nothing was deployed, and the newer upload's own event deploys it.
const Superseded run.Status = "superseded"

// Document is the run document stored at runs/NAME/RUN_ID.json: the run state machine
// plus what the driver needs between steps and what the report shows.
type Document struct {
	Run       *run.Run `json:"run"`
	Bundle    Bundle   `json:"bundle"`
	Namespace string   `json:"namespace,omitempty"`
	GraphKey  string   `json:"graph_key,omitempty"`
	// LockToken identifies the lock this run holds; a step that finds another token in
	// the lock object has lost it.
	LockToken string          `json:"lock_token,omitempty"`
	Decisions []plan.Decision `json:"decisions,omitempty"`
	Refusals  []string        `json:"refusals,omitempty"`
	Errors    []string        `json:"errors,omitempty"`
	Warnings  []string        `json:"warnings,omitempty"`
	// Notes say what else the run did (e.g. removed the emptied graph).
	Notes []string `json:"notes,omitempty"`
	// Pending holds the results of the last step's actions, by config name, for the next
	// step's Advance.
	Pending map[string]run.Observation `json:"pending,omitempty"`
	// Lookups are each stack's output lookups, so parameters resolve without the bundle.
	Lookups map[string][]config.Lookup `json:"lookups,omitempty"`
	// Protection is the termination protection the config wants; LiveProtection what the
	// stack has, as last seen.
	Protection     map[string]bool `json:"protection,omitempty"`
	LiveProtection map[string]bool `json:"live_protection,omitempty"`
	// Statuses are the stacks' CloudFormation statuses as last seen.
	Statuses map[string]string `json:"statuses,omitempty"`
	// Drop lists stacks the plan dropped from the graph (gone from AWS and the config).
	Drop []string `json:"drop,omitempty"`
	// Plan is, for an apply run, the id of the approved plan it applies.
	Plan string `json:"plan,omitempty"`
	// Destroy marks a run (a plan or its apply) that deletes every stack of the graph.
	Destroy bool `json:"destroy,omitempty"`
	Steps   int  `json:"steps"`
}

// Report is the document as the report package shows it.
func (d *Document) Report() report.Input {
	in := report.Input{Run: d.Run, Bundle: d.Bundle.String(), Decisions: d.Decisions, Refusals: d.Refusals, Errors: d.Errors, Warnings: d.Warnings, Notes: d.Notes}
	return in
}

// activeIndex is the content of an open run's index object (bucket.OpenRunKey), so a
// stack status event finds its run with one listing.
type activeIndex struct {
	Deployment string   `json:"deployment"`
	Run        string   `json:"run"`
	Stacks     []string `json:"stacks"` // CloudFormation stack names
}

// errRaceLost says another step wrote the run document since it was read.
var errRaceLost = errors.New("run document changed since it was read")

// errNoRun says the run document does not exist.
var errNoRun = errors.New("no such run")

// loadDocument reads a run document and its ETag.
func (d *Driver) loadDocument(ctx context.Context, deployment, runID string) (*Document, string, error) {
	key := bucket.RunKey(deployment, runID)
	o, err := bucket.Get(ctx, d.s3, d.cfg.Bucket, key, "", 0)
	if errors.Is(err, bucket.ErrNotFound) {
		return nil, "", fmt.Errorf("run %s of deployment %s: no document %s: %w", runID, deployment, bucket.URI(d.cfg.Bucket, key), errNoRun)
	}
	if err != nil {
		return nil, "", fmt.Errorf("run %s of deployment %s: %w", runID, deployment, err)
	}
	doc, err := DecodeDocument(o.Body)
	if err != nil {
		return nil, "", fmt.Errorf("run %s: %s: %w", runID, bucket.URI(d.cfg.Bucket, key), err)
	}
	return doc, o.ETag, nil
}

// DecodeDocument parses a run document.
func DecodeDocument(body []byte) (*Document, error) {
	var doc Document
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("not a cairn run document: %w", err)
	}
	if doc.Run == nil {
		return nil, errors.New("not a cairn run document: no run")
	}
	if doc.Run.Stacks == nil {
		doc.Run.Stacks = map[string]*run.Stack{}
	}
	return &doc, nil
}

// saveDocument writes doc conditionally: created when etag is "", else only over etag.
// It returns the new ETag, or errRaceLost.
func (d *Driver) saveDocument(ctx context.Context, doc *Document, etag string) (string, error) {
	key := bucket.RunKey(doc.Run.Deployment, doc.Run.ID)
	etag, err := bucket.WriteJSON(ctx, d.s3, d.cfg.Bucket, key, doc, bucket.Write{Create: etag == "", IfMatch: etag})
	if errors.Is(err, bucket.ErrConflict) {
		return "", fmt.Errorf("run %s: %w: %w", doc.Run.ID, errRaceLost, err)
	}
	if err != nil {
		return "", fmt.Errorf("run %s: %w", doc.Run.ID, err)
	}
	return etag, nil
}

// writeReport stores the Markdown report next to the run document.
func (d *Driver) writeReport(ctx context.Context, doc *Document) error {
	var b bytes.Buffer
	in := doc.Report()
	if doc.Run.Status == Superseded {
		in.Status = string(Superseded)
	}
	if err := report.Markdown(&b, in); err != nil {
		return err
	}
	if _, err := bucket.Put(ctx, d.s3, d.cfg.Bucket, bucket.RunReportKey(doc.Run.Deployment, doc.Run.ID), b.Bytes(), bucket.Write{ContentType: "text/markdown"}); err != nil {
		return fmt.Errorf("run %s: report: %w", doc.Run.ID, err)
	}
	return nil
}

func (d *Driver) writeIndex(ctx context.Context, doc *Document) error {
	idx := activeIndex{Deployment: doc.Run.Deployment, Run: doc.Run.ID}
	for _, s := range doc.Run.Stacks {
		idx.Stacks = append(idx.Stacks, s.StackName)
	}
	sort.Strings(idx.Stacks)
	if _, err := bucket.WriteJSON(ctx, d.s3, d.cfg.Bucket, bucket.OpenRunKey(doc.Run.ID), idx, bucket.Write{}); err != nil {
		return fmt.Errorf("run %s: index: %w", doc.Run.ID, err)
	}
	return nil
}

func (d *Driver) deleteIndex(ctx context.Context, runID string) error {
	if err := bucket.Delete(ctx, d.s3, d.cfg.Bucket, bucket.OpenRunKey(runID), ""); err != nil {
		return fmt.Errorf("run %s: index: %w", runID, err)
	}
	return nil
}

// findRun returns the open run that owns the CloudFormation stack named stackName, from
// the active index: one ListObjectsV2 and a read of each open run's index.
func (d *Driver) findRun(ctx context.Context, stackName string) (*activeIndex, error) {
	keys, err := bucket.List(ctx, d.s3, d.cfg.Bucket, bucket.OpenRunsPrefix)
	if err != nil {
		return nil, fmt.Errorf("open runs: %w", err)
	}
	for _, key := range keys {
		if _, ok := bucket.OpenRunOf(key); !ok {
			continue
		}
		o, err := bucket.Get(ctx, d.s3, d.cfg.Bucket, key, "", 0)
		if errors.Is(err, bucket.ErrNotFound) {
			continue // the run ended meanwhile
		}
		if err != nil {
			return nil, err
		}
		var idx activeIndex
		if err := json.Unmarshal(o.Body, &idx); err != nil {
			d.log.Warn("deploy: ignoring a malformed open-run index", "key", key, "err", err)
			continue
		}
		for _, s := range idx.Stacks {
			if s == stackName {
				return &idx, nil
			}
		}
	}
	return nil, nil
}
