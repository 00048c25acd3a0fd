package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/config"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/state"
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

// Bundle identifies the upload a run deploys.
type Bundle struct {
	Bucket    string `json:"bucket"`
	Key       string `json:"key"`
	VersionID string `json:"version_id,omitempty"`
	Sequencer string `json:"sequencer,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	GitRef    string `json:"git_ref,omitempty"`
	GitRemote string `json:"git_remote,omitempty"`
}

// Ref is the bundle as the persistent graph and the stack tags record it.
func (b Bundle) Ref() state.BundleRef {
	return state.BundleRef{VersionID: b.VersionID, SHA256: b.SHA256, GitRef: b.GitRef, GitRemote: b.GitRemote}
}

func (b Bundle) String() string {
	s := fmt.Sprintf("s3://%s/%s", b.Bucket, b.Key)
	if b.VersionID != "" {
		s += " version " + b.VersionID
	}
	if b.SHA256 != "" {
		s += ", sha256 " + b.SHA256
	}
	if b.GitRef != "" {
		s += ", git " + b.GitRef
	}
	if b.GitRemote != "" {
		s += " of " + b.GitRemote
	}
	return s
}

// Report is the document as the report package shows it.
func (d *Document) Report() report.Input {
	in := report.Input{Run: d.Run, Bundle: d.Bundle.String(), Decisions: d.Decisions, Refusals: d.Refusals, Errors: d.Errors, Warnings: d.Warnings, Notes: d.Notes}
	return in
}

// RunKey is the object key of a run document; ReportKey that of its Markdown report.
func RunKey(deployment, runID string) string { return "runs/" + deployment + "/" + runID + ".json" }

// ReportKey is the object key of a run's Markdown report.
func ReportKey(deployment, runID string) string { return "runs/" + deployment + "/" + runID + ".md" }

// activePrefix holds one small index object per open run, so a stack status event finds
// its run with one ListObjectsV2.
const activePrefix = "runs/active/"

// activeIndex is the content of runs/active/RUN_ID.json.
type activeIndex struct {
	Deployment string   `json:"deployment"`
	Run        string   `json:"run"`
	Stacks     []string `json:"stacks"` // CloudFormation stack names
}

func activeKey(runID string) string { return activePrefix + runID + ".json" }

// errRaceLost says another step wrote the run document since it was read.
var errRaceLost = errors.New("run document changed since it was read")

// errNoRun says the run document does not exist.
var errNoRun = errors.New("no such run")

// loadDocument reads a run document and its ETag.
func (d *Driver) loadDocument(ctx context.Context, deployment, runID string) (*Document, string, error) {
	key := RunKey(deployment, runID)
	out, err := d.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &d.cfg.Bucket, Key: &key})
	if err != nil {
		if awsclient.NotFound(err) {
			return nil, "", fmt.Errorf("run %s of deployment %s: no document s3://%s/%s: %w", runID, deployment, d.cfg.Bucket, key, errNoRun)
		}
		return nil, "", fmt.Errorf("run %s of deployment %s: read s3://%s/%s: %w", runID, deployment, d.cfg.Bucket, key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, "", fmt.Errorf("run %s: read s3://%s/%s: %w", runID, d.cfg.Bucket, key, err)
	}
	doc, err := DecodeDocument(body)
	if err != nil {
		return nil, "", fmt.Errorf("run %s: s3://%s/%s: %w", runID, d.cfg.Bucket, key, err)
	}
	return doc, aws.ToString(out.ETag), nil
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
	body, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", fmt.Errorf("run %s: encode document: %w", doc.Run.ID, err)
	}
	key := RunKey(doc.Run.Deployment, doc.Run.ID)
	in := &s3.PutObjectInput{Bucket: &d.cfg.Bucket, Key: &key, Body: bytes.NewReader(body), ContentType: aws.String("application/json")}
	if etag == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(etag)
	}
	out, err := d.s3.PutObject(ctx, in)
	if err != nil {
		if awsclient.PreconditionFailed(err) {
			return "", fmt.Errorf("run %s: write s3://%s/%s: %w", doc.Run.ID, d.cfg.Bucket, key, errRaceLost)
		}
		return "", fmt.Errorf("run %s: write s3://%s/%s: %w", doc.Run.ID, d.cfg.Bucket, key, err)
	}
	return aws.ToString(out.ETag), nil
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
	key := ReportKey(doc.Run.Deployment, doc.Run.ID)
	_, err := d.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: &d.cfg.Bucket, Key: &key, Body: bytes.NewReader(b.Bytes()), ContentType: aws.String("text/markdown")})
	if err != nil {
		return fmt.Errorf("run %s: write report s3://%s/%s: %w", doc.Run.ID, d.cfg.Bucket, key, err)
	}
	return nil
}

func (d *Driver) writeIndex(ctx context.Context, doc *Document) error {
	idx := activeIndex{Deployment: doc.Run.Deployment, Run: doc.Run.ID}
	for _, s := range doc.Run.Stacks {
		idx.Stacks = append(idx.Stacks, s.StackName)
	}
	sort.Strings(idx.Stacks)
	body, _ := json.Marshal(idx)
	key := activeKey(doc.Run.ID)
	_, err := d.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: &d.cfg.Bucket, Key: &key, Body: bytes.NewReader(body), ContentType: aws.String("application/json")})
	if err != nil {
		return fmt.Errorf("run %s: write index s3://%s/%s: %w", doc.Run.ID, d.cfg.Bucket, key, err)
	}
	return nil
}

func (d *Driver) deleteIndex(ctx context.Context, runID string) error {
	key := activeKey(runID)
	_, err := d.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &d.cfg.Bucket, Key: &key})
	if err != nil && !awsclient.NotFound(err) {
		return fmt.Errorf("run %s: delete index s3://%s/%s: %w", runID, d.cfg.Bucket, key, err)
	}
	return nil
}

// findRun returns the open run that owns the CloudFormation stack named stackName, from
// the active index: one ListObjectsV2 and a read of each open run's index.
func (d *Driver) findRun(ctx context.Context, stackName string) (*activeIndex, error) {
	in := &s3.ListObjectsV2Input{Bucket: &d.cfg.Bucket, Prefix: aws.String(activePrefix)}
	out, err := d.s3.ListObjectsV2(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("list open runs s3://%s/%s: %w", d.cfg.Bucket, activePrefix, err)
	}
	for _, o := range out.Contents {
		key := aws.ToString(o.Key)
		if !strings.HasSuffix(key, ".json") {
			continue
		}
		got, err := d.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &d.cfg.Bucket, Key: &key})
		if err != nil {
			if awsclient.NotFound(err) {
				continue // the run ended meanwhile
			}
			return nil, fmt.Errorf("read s3://%s/%s: %w", d.cfg.Bucket, key, err)
		}
		body, err := io.ReadAll(got.Body)
		got.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read s3://%s/%s: %w", d.cfg.Bucket, key, err)
		}
		var idx activeIndex
		if err := json.Unmarshal(body, &idx); err != nil {
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
