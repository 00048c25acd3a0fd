package localcairn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/objects"
	"github.com/cairn-dev/cairn/internal/runpage"
)

// indexRuns is how many of a deployment's newest runs, and of its plans, the index lists.
const indexRuns = 30

// pageRefresh is how often the page of a run still running loads itself again, seconds.
const pageRefresh = 3

// pageCSP allows a page nothing but its own inline style: no script, no fetch, no form.
const pageCSP = runpage.ContentSecurityPolicy + "; frame-ancestors 'none'"

// pagePathRE is FOLDER/DEPLOYMENT/ID.EXT of a page or of a document beside it.
var pagePathRE = regexp.MustCompile(`^(runs|plans|drift)/([A-Za-z0-9][A-Za-z0-9._-]{0,127})/([A-Za-z0-9][A-Za-z0-9._-]{0,127})\.(html|md|json)$`)

// Pages serves, under runpage.LocalPath, the pages of the runs and plans in cairn's bucket
// (rendered from their documents as they are asked for, so a running run's page is
// current and reloads itself until it ends), the Markdown and JSON beside them, and an
// index of the deployments with their runs, plans and drift reports. It reads the bucket
// with s3 and writes nothing.
func Pages(s3 history.S3API, bucket string) http.Handler {
	p := pages{store: &history.Store{S3: s3, Bucket: bucket}}
	return http.StripPrefix(strings.TrimSuffix(runpage.LocalPath, "/"), http.HandlerFunc(p.serve))
}

type pages struct{ store *history.Store }

func (p pages) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "cairn local pages are read only: use GET", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	ctx, path := r.Context(), strings.TrimPrefix(r.URL.Path, "/")
	var body []byte
	var err error
	contentType := runpage.ContentType
	switch m := pagePathRE.FindStringSubmatch(path); {
	case path == "" || path == "index.html":
		body, err = p.index(ctx)
	case m == nil || layout.Reserved(m[2]):
		http.Error(w, fmt.Sprintf("no page %s: pages are %sruns/NAME/RUN.html and %splans/NAME/PLAN.html; the index is %s", path, runpage.LocalPath, runpage.LocalPath, runpage.LocalPath), http.StatusNotFound)
		return
	case m[4] == "html" && m[1] != "drift":
		body, err = p.page(ctx, m[1], m[2], m[3])
	default:
		// The Markdown and JSON beside a page, as text: a browser never renders them.
		contentType = "text/plain; charset=utf-8"
		if m[4] == "json" {
			contentType = "application/json"
		}
		var o *objects.Object
		if o, err = objects.Get(ctx, p.store.S3, p.store.Bucket, path, "", 16<<20); err == nil {
			body = o.Body
		}
	}
	switch {
	case errors.Is(err, objects.ErrNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h.Set("Content-Type", contentType)
	_, _ = w.Write(body)
}

// page renders the page of run or plan id of deployment d from its document.
func (p pages) page(ctx context.Context, folder, d, id string) ([]byte, error) {
	links := []runpage.Link{{Text: "all deployments", Href: runpage.LocalPath}, {Text: "Markdown", Href: id + ".md"}, {Text: "document (JSON)", Href: id + ".json"}}
	if folder == "plans" {
		doc, err := p.store.Plan(ctx, d, id)
		if err != nil {
			return nil, err
		}
		links = append(links, runpage.Link{Text: "its plan run", Href: runpage.LocalPath + "runs/" + d + "/" + id + ".html"})
		return runpage.RenderPlan(runpage.Plan{Plan: doc, Links: links})
	}
	doc, err := p.store.Run(ctx, d, id)
	if err != nil {
		return nil, err
	}
	if doc.Run.Plan != "" {
		links = append(links, runpage.Link{Text: "the plan it applies", Href: runpage.LocalPath + "plans/" + d + "/" + doc.Run.Plan + ".html"})
	}
	return runpage.RenderRun(doc.Page(pageRefresh, links...))
}

// index lists the deployments, each with its newest runs and plans and its drift reports.
func (p pages) index(ctx context.Context) ([]byte, error) {
	names, err := objects.Deployments(ctx, p.store.S3, p.store.Bucket)
	if err != nil {
		return nil, err
	}
	in := runpage.Index{Title: "cairn local: deployments, runs, plans and drift (s3://" + p.store.Bucket + ")"}
	for _, d := range names {
		dep := runpage.Deployment{Name: d}
		runIDs, err := p.store.RunIDs(ctx, d)
		if err != nil {
			return nil, err
		}
		for _, id := range runIDs[:min(len(runIDs), indexRuns)] {
			e := runpage.Entry{ID: id, Status: "unreadable", Href: runpage.LocalPath + "runs/" + d + "/" + id + ".html"}
			if doc, err := p.store.Run(ctx, d, id); err == nil {
				e.Status, e.When = string(doc.Run.Status), doc.Run.StartedAt
			}
			dep.Runs = append(dep.Runs, e)
		}
		planIDs, err := p.store.PlanIDs(ctx, d)
		if err != nil {
			return nil, err
		}
		for _, id := range planIDs[:min(len(planIDs), indexRuns)] {
			e := runpage.Entry{ID: id, Status: "unreadable", Href: runpage.LocalPath + "plans/" + d + "/" + id + ".html"}
			if doc, err := p.store.Plan(ctx, d, id); err == nil {
				e.Status, e.When = string(doc.Status), doc.CreatedAt
			}
			dep.Plans = append(dep.Plans, e)
		}
		listed, err := objects.ListFolder(ctx, p.store.S3, p.store.Bucket, layout.DriftReportsOf(d))
		if err != nil {
			return nil, err
		}
		slices.Reverse(listed)
		for _, l := range listed {
			if id, ok := layout.DriftReportOf(d, l.Key); ok {
				dep.Drift = append(dep.Drift, runpage.Entry{ID: id, Status: "report", Href: runpage.LocalPath + "drift/" + d + "/" + id + ".md", When: l.LastModified})
			}
		}
		in.Deployments = append(in.Deployments, dep)
	}
	return runpage.RenderIndex(in)
}
