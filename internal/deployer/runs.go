package deployer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/changeset"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/report"
	"github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/runpage"
	"github.com/cairn-dev/cairn/internal/target"
)

// activeIndex is the content of an open run's index object (bucket.OpenRunKey): its time
// says whether the run's heartbeat chain is alive (stalled).
type activeIndex struct {
	Deployment string `json:"deployment"`
	Run        string `json:"run"`
}

// stackIndex is the content of a stack's entry of the open-run index by stack
// (bucket.OpenStackKey): the run that started it, and which stack of that run it is
// (run.Stack.Key), so an event of a same-named stack elsewhere is not taken for it.
type stackIndex struct {
	Deployment string `json:"deployment"`
	Run        string `json:"run"`
	Stack      string `json:"stack"`
}

// errRaceLost says another step wrote the run document since it was read.
var errRaceLost = errors.New("run document changed since it was read")

// errNoRun says the run document does not exist.
var errNoRun = errors.New("no such run")

// runs keeps the run documents, their reports and the index of open runs.
type runs struct{ *base }

// load reads a run document and its ETag.
func (rs runs) load(ctx context.Context, deployment, runID string) (*rundoc.Document, string, error) {
	key := bucket.RunKey(deployment, runID)
	o, err := objects.Get(ctx, rs.s3, rs.cfg.Bucket, key, "", 0)
	if errors.Is(err, objects.ErrNotFound) {
		return nil, "", fmt.Errorf("run %s of deployment %s: no document %s: %w", runID, deployment, bucket.URI(rs.cfg.Bucket, key), errNoRun)
	}
	if err != nil {
		return nil, "", fmt.Errorf("run %s of deployment %s: %w", runID, deployment, err)
	}
	doc, err := rundoc.DecodeDocument(o.Body)
	if err != nil {
		return nil, "", fmt.Errorf("run %s: %s: %w", runID, bucket.URI(rs.cfg.Bucket, key), err)
	}
	return doc, o.ETag, nil
}

// reload reads the run document again, as load does, unless it is still the one read
// with etag (a conditional read): then doc itself, the document decoded from that read,
// which the caller has not changed since. Decoding a run of 500 stacks costs more of the
// deployer's CPU than the rest of a step.
func (rs runs) reload(ctx context.Context, doc *rundoc.Document, etag string) (*rundoc.Document, string, error) {
	key := bucket.RunKey(doc.Run.Deployment, doc.Run.ID)
	o, err := objects.GetChanged(ctx, rs.s3, rs.cfg.Bucket, key, etag)
	switch {
	case errors.Is(err, objects.ErrNotModified):
		return doc, etag, nil
	case errors.Is(err, objects.ErrNotFound):
		return nil, "", fmt.Errorf("run %s of deployment %s: no document %s: %w", doc.Run.ID, doc.Run.Deployment, bucket.URI(rs.cfg.Bucket, key), errNoRun)
	case err != nil:
		return nil, "", fmt.Errorf("run %s of deployment %s: %w", doc.Run.ID, doc.Run.Deployment, err)
	}
	again, err := rundoc.DecodeDocument(o.Body)
	if err != nil {
		return nil, "", fmt.Errorf("run %s: %s: %w", doc.Run.ID, bucket.URI(rs.cfg.Bucket, key), err)
	}
	return again, o.ETag, nil
}

// The metadata a run document is saved with (in the same request, so they always agree):
// what a step needs of the run before it claims it (peek), so that it decodes the
// document once a step, under its claim, and not at all when it does not get the claim.
const (
	metaStatus    = "cairn-status"
	metaNamespace = "cairn-namespace"
	metaGraphKey  = "cairn-graph-key"
	metaLockToken = "cairn-lock-token"
	metaBeat      = "cairn-beat"
	metaSteps     = "cairn-steps"
)

// header is the metadata doc is saved with; nil when a value could not travel as an HTTP
// header (then peek reads the whole document).
func header(doc *rundoc.Document) map[string]string {
	m := map[string]string{metaStatus: string(doc.Run.Status), metaNamespace: doc.Namespace, metaGraphKey: doc.GraphKey,
		metaLockToken: doc.LockToken, metaBeat: strconv.Itoa(doc.Beat), metaSteps: strconv.Itoa(doc.Steps)}
	for _, v := range m {
		if strings.IndexFunc(v, func(r rune) bool { return r < ' ' || r > '~' }) >= 0 {
			return nil
		}
	}
	return m
}

// peek reads what a step needs of run runID before it claims it. For a running run saved
// with its header (metadata), that header alone: doc holds the run's ID, deployment and
// status, Namespace, GraphKey, LockToken, Beat and Steps, and partial is true. Otherwise
// (the run ended, or was saved without it) the whole document, as load reads it.
func (rs runs) peek(ctx context.Context, deployment, runID string) (doc *rundoc.Document, etag string, partial bool, err error) {
	key := bucket.RunKey(deployment, runID)
	o, err := objects.Head(ctx, rs.s3, rs.cfg.Bucket, key)
	if errors.Is(err, objects.ErrNotFound) {
		return nil, "", false, fmt.Errorf("run %s of deployment %s: no document %s: %w", runID, deployment, bucket.URI(rs.cfg.Bucket, key), errNoRun)
	}
	if err != nil {
		return nil, "", false, fmt.Errorf("run %s of deployment %s: %w", runID, deployment, err)
	}
	meta := map[string]string{}
	for k, v := range o.Metadata {
		meta[strings.ToLower(k)] = v
	}
	beat, berr := strconv.Atoi(meta[metaBeat])
	steps, serr := strconv.Atoi(meta[metaSteps])
	if run.Status(meta[metaStatus]) != run.Running || berr != nil || serr != nil {
		doc, etag, err = rs.load(ctx, deployment, runID)
		return doc, etag, false, err
	}
	doc = &rundoc.Document{Run: &run.Run{ID: runID, Deployment: deployment, Status: run.Running},
		Namespace: meta[metaNamespace], GraphKey: meta[metaGraphKey], LockToken: meta[metaLockToken], Beat: beat, Steps: steps}
	return doc, o.ETag, true, nil
}

// save writes doc conditionally: created when etag is "", else only over etag, with its
// header (peek); compact while the run runs (it is written at every step), indented once
// it ended (and a quiet run, whose document is its report). It returns the new ETag, or
// errRaceLost.
func (rs runs) save(ctx context.Context, doc *rundoc.Document, etag string) (string, error) {
	key := bucket.RunKey(doc.Run.Deployment, doc.Run.ID)
	w := objects.Write{Create: etag == "", IfMatch: etag, Metadata: header(doc), Compact: doc.Run.Status == run.Running && !doc.Quiet}
	etag, err := objects.WriteJSON(ctx, rs.s3, rs.cfg.Bucket, key, doc, w)
	if errors.Is(err, objects.ErrConflict) {
		return "", fmt.Errorf("run %s: %w: %w", doc.Run.ID, errRaceLost, err)
	}
	if err != nil {
		return "", fmt.Errorf("run %s: %w", doc.Run.ID, err)
	}
	return etag, nil
}

// report writes the Markdown report of a run that ends, and its page beside it. They are
// written before the final run document, so whoever sees the run ended finds them.
func (rs runs) report(ctx context.Context, doc *rundoc.Document, log *slog.Logger) {
	var b bytes.Buffer
	err := report.Markdown(&b, doc.Report())
	if err == nil {
		_, err = objects.Put(ctx, rs.s3, rs.cfg.Bucket, bucket.RunReportKey(doc.Run.Deployment, doc.Run.ID), b.Bytes(), objects.Write{ContentType: "text/markdown"})
	}
	if err != nil {
		log.Warn("deploy: cannot write the report", "err", err)
	}
	rs.page(ctx, doc, log)
}

// pageEvery is how often, at most, the page of a run still running is written again (as
// its stacks start and finish), and how often that page reloads itself.
const pageEvery = 30 * time.Second

// livePage writes the page of a run still running, in a step that started or finished
// stacks, unless it was written less than pageEvery ago: `cairn open` finds a page as soon
// as the run starts stacks, and it follows the run (it reloads itself) until the run ends.
func (rs runs) livePage(ctx context.Context, doc *rundoc.Document, now time.Time, log *slog.Logger) {
	if !doc.PageAt.IsZero() && now.Sub(doc.PageAt) < pageEvery {
		return
	}
	doc.PageAt = now
	rs.page(ctx, doc, log)
}

// page writes the run's page beside its report (a running run's reloads itself every
// pageEvery).
func (rs runs) page(ctx context.Context, doc *rundoc.Document, log *slog.Logger) {
	page, err := runpage.RenderRun(doc.Page(int(pageEvery / time.Second)))
	if err == nil {
		_, err = objects.Put(ctx, rs.s3, rs.cfg.Bucket, bucket.RunPageKey(doc.Run.Deployment, doc.Run.ID), page, objects.Write{ContentType: runpage.ContentType})
	}
	if err != nil {
		log.Warn("deploy: cannot write the run's page", "err", err)
	}
}

// index records doc as an open run (its stacks are indexed as it starts them,
// indexStacks), for resumeStalled.
func (rs runs) index(ctx context.Context, doc *rundoc.Document, log *slog.Logger) {
	idx := activeIndex{Deployment: doc.Run.Deployment, Run: doc.Run.ID}
	if _, err := objects.WriteJSON(ctx, rs.s3, rs.cfg.Bucket, bucket.OpenRunKey(doc.Run.ID), idx, objects.Write{}); err != nil {
		log.Warn("deploy: cannot index the open run; it advances by heartbeats only", "err", err)
	}
	rs.indexWaiting(ctx, doc, log)
}

// indexWaiting records run doc as the open run of each stack it waits for (a run waiting
// for stacks another hand is changing to settle), so their status events step it.
func (rs runs) indexWaiting(ctx context.Context, doc *rundoc.Document, log *slog.Logger) {
	keys := waitingKeys(doc)
	changeset.Concurrently(len(keys), func(i int) {
		_, name := target.ParseKey(keys[i])
		idx := stackIndex{Deployment: doc.Run.Deployment, Run: doc.Run.ID, Stack: keys[i]}
		if _, err := objects.WriteJSON(ctx, rs.s3, rs.cfg.Bucket, bucket.OpenStackKey(name), idx, objects.Write{}); err != nil {
			log.Warn("deploy: cannot index a stack the run waits for; its looks carry it on", "stack", keys[i], "err", err)
		}
	})
}

// unindexWaiting removes the entries indexWaiting wrote that still name run doc, as its
// wait ends (the run starts, or is refused): the stacks it then starts are indexed anew.
func (rs runs) unindexWaiting(ctx context.Context, doc *rundoc.Document, log *slog.Logger) {
	var keys []string
	for _, k := range waitingKeys(doc) {
		_, name := target.ParseKey(k)
		keys = append(keys, bucket.OpenStackKey(name))
	}
	rs.unindexKeys(ctx, doc.Run.ID, keys, false, log)
}

// indexStacks records run doc as the open run of each of the stacks named (config names),
// which it starts in this step, so their stack events find it (find). A failure is
// logged: the run's looks and heartbeat carry it on.
func (rs runs) indexStacks(ctx context.Context, doc *rundoc.Document, names []string, log *slog.Logger) {
	changeset.Concurrently(len(names), func(i int) {
		s := doc.Run.Stacks[names[i]]
		idx := stackIndex{Deployment: doc.Run.Deployment, Run: doc.Run.ID, Stack: s.Key()}
		if _, err := objects.WriteJSON(ctx, rs.s3, rs.cfg.Bucket, bucket.OpenStackKey(s.StackName), idx, objects.Write{}); err != nil {
			log.Warn("deploy: cannot index the stack's open run; its events are not seen, its looks carry it on", "stack", s.Name, "err", err)
		}
	})
}

// unindexStacks removes the entries of the stacks run doc started, once it ended: with
// its lock still held, no other run of its graph indexed them since, and one request
// deletes a thousand; without it (a run that lost its lock, or whose clean-up is finished
// by a later trigger), each entry is read and deleted only if it still names the run
// (If-Match), since another run may have indexed the stack since.
func (rs runs) unindexStacks(ctx context.Context, doc *rundoc.Document, locked bool, log *slog.Logger) {
	var keys []string
	for _, name := range doc.Run.Names() {
		if s := doc.Run.Stacks[name]; !s.StartedAt.IsZero() && s.StackName != "" {
			keys = append(keys, bucket.OpenStackKey(s.StackName))
		}
	}
	rs.unindexKeys(ctx, doc.Run.ID, keys, locked, log)
}

// unindexKeys deletes the open-run index entries keys of run runID (see unindexStacks).
func (rs runs) unindexKeys(ctx context.Context, runID string, keys []string, locked bool, log *slog.Logger) {
	if locked {
		if err := objects.DeleteMany(ctx, rs.s3, rs.cfg.Bucket, keys); err != nil {
			log.Warn("deploy: cannot remove the run's stacks from the open-run index; their late events find the run ended", "err", err)
		}
		return
	}
	changeset.Concurrently(len(keys), func(i int) {
		o, err := objects.Get(ctx, rs.s3, rs.cfg.Bucket, keys[i], "", 0)
		if err != nil {
			return // gone, or unreadable: a late event finds the run ended
		}
		var idx stackIndex
		if json.Unmarshal(o.Body, &idx) != nil || idx.Run != runID {
			return
		}
		if err := objects.Delete(ctx, rs.s3, rs.cfg.Bucket, keys[i], o.ETag); err != nil && !errors.Is(err, objects.ErrConflict) {
			log.Warn("deploy: cannot remove a stack of the run from the open-run index", "key", keys[i], "err", err)
		}
	})
}

// stalled returns the open runs whose index object was last written before since: the
// index is written when a run starts and at every beat of its heartbeat chain, so those
// runs' chains are lost (or they ended before their clean-up). One listing of the open
// runs (not of their stacks); each one found costs a read of its index object.
func (rs runs) stalled(ctx context.Context, since time.Time) ([]activeIndex, error) {
	listed, err := objects.ListFolder(ctx, rs.s3, rs.cfg.Bucket, bucket.OpenRunsPrefix)
	if err != nil {
		return nil, fmt.Errorf("open runs: %w", err)
	}
	var out []activeIndex
	for _, l := range listed {
		if _, ok := bucket.OpenRunOf(l.Key); !ok || !l.LastModified.Before(since) {
			continue
		}
		idx, err := rs.readIndex(ctx, l.Key)
		if err != nil {
			return nil, err
		}
		if idx != nil {
			out = append(out, *idx)
		}
	}
	return out, nil
}

// readIndex reads an open-run index object; nil when it is gone or malformed (logged).
func (rs runs) readIndex(ctx context.Context, key string) (*activeIndex, error) {
	o, err := objects.Get(ctx, rs.s3, rs.cfg.Bucket, key, "", 0)
	if errors.Is(err, objects.ErrNotFound) {
		return nil, nil // the run ended meanwhile
	}
	if err != nil {
		return nil, err
	}
	var idx activeIndex
	if err := json.Unmarshal(o.Body, &idx); err != nil || idx.Deployment == "" || idx.Run == "" {
		rs.log.Warn("deploy: ignoring a malformed open-run index", "key", key, "err", err)
		return nil, nil
	}
	return &idx, nil
}

// unindex removes a run that ended from the index of open runs.
func (rs runs) unindex(ctx context.Context, runID string, log *slog.Logger) {
	if err := objects.Delete(ctx, rs.s3, rs.cfg.Bucket, bucket.OpenRunKey(runID), ""); err != nil {
		log.Warn("deploy: cannot remove the open-run index", "err", err)
	}
}

// find returns the open run that started the CloudFormation stack stackID (its ARN, or
// a name), from the open-run index by stack: one read, whatever the number of open runs
// and of their stacks; nil when none did (a late event of a run that ended).
func (rs runs) find(ctx context.Context, stackID string) (*activeIndex, error) {
	o, err := objects.Get(ctx, rs.s3, rs.cfg.Bucket, bucket.OpenStackKey(awsclient.StackName(stackID)), "", 0)
	if errors.Is(err, objects.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open run of stack %s: %w", awsclient.StackName(stackID), err)
	}
	var idx stackIndex
	if err := json.Unmarshal(o.Body, &idx); err != nil || idx.Deployment == "" || idx.Run == "" {
		rs.log.Warn("deploy: ignoring a malformed entry of the open-run index", "stack_id", stackID, "err", err)
		return nil, nil
	}
	if !slices.Contains(eventKeys(stackID, rs.cfg.Region), idx.Stack) {
		return nil, nil // a stack of the same name elsewhere
	}
	return &activeIndex{Deployment: idx.Deployment, Run: idx.Run}, nil
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
