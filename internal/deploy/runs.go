package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/target"
)

// runs keeps the run documents, their reports and the index of open runs.
type runs struct{ *base }

// load reads a run document and its ETag.
func (rs runs) load(ctx context.Context, deployment, runID string) (*Document, string, error) {
	key := bucket.RunKey(deployment, runID)
	o, err := bucket.Get(ctx, rs.s3, rs.cfg.Bucket, key, "", 0)
	if errors.Is(err, bucket.ErrNotFound) {
		return nil, "", fmt.Errorf("run %s of deployment %s: no document %s: %w", runID, deployment, bucket.URI(rs.cfg.Bucket, key), errNoRun)
	}
	if err != nil {
		return nil, "", fmt.Errorf("run %s of deployment %s: %w", runID, deployment, err)
	}
	doc, err := DecodeDocument(o.Body)
	if err != nil {
		return nil, "", fmt.Errorf("run %s: %s: %w", runID, bucket.URI(rs.cfg.Bucket, key), err)
	}
	return doc, o.ETag, nil
}

// save writes doc conditionally: created when etag is "", else only over etag. It
// returns the new ETag, or errRaceLost.
func (rs runs) save(ctx context.Context, doc *Document, etag string) (string, error) {
	key := bucket.RunKey(doc.Run.Deployment, doc.Run.ID)
	etag, err := bucket.WriteJSON(ctx, rs.s3, rs.cfg.Bucket, key, doc, bucket.Write{Create: etag == "", IfMatch: etag})
	if errors.Is(err, bucket.ErrConflict) {
		return "", fmt.Errorf("run %s: %w: %w", doc.Run.ID, errRaceLost, err)
	}
	if err != nil {
		return "", fmt.Errorf("run %s: %w", doc.Run.ID, err)
	}
	return etag, nil
}

// report writes the Markdown report of a run that ends. It is written before the final
// run document, so whoever sees the run ended finds its report.
func (rs runs) report(ctx context.Context, doc *Document, log *slog.Logger) {
	var b bytes.Buffer
	err := report.Markdown(&b, doc.Report())
	if err == nil {
		_, err = bucket.Put(ctx, rs.s3, rs.cfg.Bucket, bucket.RunReportKey(doc.Run.Deployment, doc.Run.ID), b.Bytes(), bucket.Write{ContentType: "text/markdown"})
	}
	if err != nil {
		log.Warn("deploy: cannot write the report", "err", err)
	}
}

// index records doc as an open run, with its stacks, for findRun.
func (rs runs) index(ctx context.Context, doc *Document, log *slog.Logger) {
	idx := activeIndex{Deployment: doc.Run.Deployment, Run: doc.Run.ID}
	for _, s := range doc.Run.Stacks {
		idx.Stacks = append(idx.Stacks, s.Key())
	}
	sort.Strings(idx.Stacks)
	if _, err := bucket.WriteJSON(ctx, rs.s3, rs.cfg.Bucket, bucket.OpenRunKey(doc.Run.ID), idx, bucket.Write{}); err != nil {
		log.Warn("deploy: cannot index the open run; it advances by heartbeats only", "err", err)
	}
}

// unindex removes a run that ended from the index of open runs.
func (rs runs) unindex(ctx context.Context, runID string, log *slog.Logger) {
	if err := bucket.Delete(ctx, rs.s3, rs.cfg.Bucket, bucket.OpenRunKey(runID), ""); err != nil {
		log.Warn("deploy: cannot remove the open-run index", "err", err)
	}
}

// find returns the open run that owns the CloudFormation stack stackID (its ARN, or a
// name), from the index: one listing and a read of each open run's index object.
func (rs runs) find(ctx context.Context, stackID string) (*activeIndex, error) {
	keys := eventKeys(stackID, rs.cfg.Region)
	keys, err := bucket.List(ctx, rs.s3, rs.cfg.Bucket, bucket.OpenRunsPrefix)
	if err != nil {
		return nil, fmt.Errorf("open runs: %w", err)
	}
	for _, key := range keys {
		if _, ok := bucket.OpenRunOf(key); !ok {
			continue
		}
		o, err := bucket.Get(ctx, rs.s3, rs.cfg.Bucket, key, "", 0)
		if errors.Is(err, bucket.ErrNotFound) {
			continue // the run ended meanwhile
		}
		if err != nil {
			return nil, err
		}
		var idx activeIndex
		if err := json.Unmarshal(o.Body, &idx); err != nil {
			rs.log.Warn("deploy: ignoring a malformed open-run index", "key", key, "err", err)
			continue
		}
		for _, s := range idx.Stacks {
			if slices.Contains(keys, s) {
				return &idx, nil
			}
		}
	}
	return nil, nil
}

// eventKeys are the index keys (run.Stack.Key) a stack event's stack id may have: its name
// at home (a stack of cairn's region, its account being cairn's when the stack has none),
// ACCOUNT/REGION/NAME, ACCOUNT//NAME in cairn's region, /REGION/NAME in cairn's account.
func eventKeys(stackID, homeRegion string) []string {
	name := awsclient.StackName(stackID)
	at, ok := target.OfStackID(stackID)
	if !ok {
		return []string{name}
	}
	keys := []string{target.Key(at, name), target.Key(target.Target{Region: at.Region}, name)}
	if at.Region == homeRegion || homeRegion == "" {
		keys = append(keys, name, target.Key(target.Target{Account: at.Account}, name))
	}
	return keys
}
