package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/awsclient"
	"github.com/cairn-dev/cairn/internal/awslocal"
	layout "github.com/cairn-dev/cairn/internal/bucket"
	"github.com/cairn-dev/cairn/internal/history"
	"github.com/cairn-dev/cairn/internal/runpage"
)

// get fetches url from the local cairn: its status, content type and body.
func get(t *testing.T, method, url string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

var pageLinkRE = regexp.MustCompile(`^(http://127\.0\.0\.1:\d+/_local/pages/)(runs|plans)/shop/(\S+)\.html\n$`)

// TestOpenPrintsThePageLink: against a local cairn, `cairn open` prints the link of the
// newest run's page (or the run's or plan's named), which the emulator serves rendered
// from the document with every stack and its status, beside its Markdown and JSON (as
// text), under an index of the deployments; nothing else is served there, and nothing is
// written.
func TestOpenPrintsThePageLink(t *testing.T) {
	webshopWorld(t)
	planID, _ := planAndApproveWebshop(t)
	code, out, errOut := runCLI(t, "open", "shop")
	m := pageLinkRE.FindStringSubmatch(out)
	if code != 0 || m == nil || m[2] != "runs" || errOut != "" {
		t.Fatalf("open: exit %d, stdout %q, stderr %q; want the link of the run's page", code, out, errOut)
	}
	base, runID := m[1], m[3]
	if code, again, _ := runCLI(t, "open", "shop", runID); code != 0 || again != out {
		t.Errorf("open shop %s printed %q, want %q", runID, again, out)
	}
	status, h, page := get(t, http.MethodGet, strings.TrimSpace(out))
	if status != http.StatusOK || h.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("GET the page: %d %v", status, h)
	}
	for _, n := range []string{"network", "database", "cache", "service", "edge"} {
		if !regexp.MustCompile(`data-stack="` + n + `"( open)?>\s*<summary><span class="name">` + n + `</span> <span class="badge ok phase">done</span>`).MatchString(page) {
			t.Errorf("the page does not show stack %s done", n)
		}
	}
	if !strings.Contains(page, `<a href="/_local/pages/plans/shop/`+planID+`.html">the plan it applies</a>`) {
		t.Error("the apply run's page does not link its plan's")
	}
	if status, h, md := get(t, http.MethodGet, base+"runs/shop/"+runID+".md"); status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") || !strings.HasPrefix(md, "# cairn run "+runID) {
		t.Errorf("GET the Markdown beside it: %d %s %.40q", status, h.Get("Content-Type"), md)
	}
	if status, _, index := get(t, http.MethodGet, base); status != http.StatusOK || !strings.Contains(index, `<a href="/_local/pages/runs/shop/`+runID+`.html">`+runID+`</a>`) ||
		!strings.Contains(index, `<a href="/_local/pages/plans/shop/`+planID+`.html">`+planID+`</a>`) {
		t.Errorf("GET the index: %d, want links to the run and the plan:\n%s", status, index)
	}
	if code, out, _ := runCLI(t, "open", "shop", planID); code != 0 || out != base+"plans/shop/"+planID+".html\n" {
		t.Errorf("open the plan: exit %d, %q", code, out)
	}
	if status, _, page := get(t, http.MethodGet, base+"plans/shop/"+planID+".html"); status != http.StatusOK || !strings.Contains(page, `data-stack="database"`) {
		t.Errorf("GET the plan's page: %d, want the database's change set:\n%s", status, page)
	}

	// Against AWS the link is a presigned GET of the page the deployer wrote beside the
	// run's Markdown report (here the emulator's S3 answers it).
	cfg, err := awsclient.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s3c := awsclient.S3(cfg)
	for _, p := range []history.Page{{Deployment: "shop", ID: runID, Key: layout.RunPageKey("shop", runID)}, {Deployment: "shop", ID: planID, Key: layout.PlanPageKey("shop", planID), Plan: true}} {
		// The link is signed on the wall clock and its expiry judged on the emulator's,
		// which this test world runs ahead of the wall clock: a week (the most S3 allows)
		// outlasts the test.
		link, err := pageLink(context.Background(), s3c, localBucket, p, 7*24*time.Hour, "")
		if err != nil || !strings.Contains(link, "X-Amz-Signature=") || !strings.Contains(link, "X-Amz-Expires=604800") {
			t.Fatalf("presigned link of %s: %q, %v", p.Key, link, err)
		}
		if status, h, body := get(t, http.MethodGet, link); status != http.StatusOK || h.Get("Content-Type") != runpage.ContentType || !strings.HasPrefix(body, "<!DOCTYPE html>") || !strings.Contains(body, p.ID) {
			t.Errorf("GET the presigned link of %s: %d %s %.80q", p.Key, status, h.Get("Content-Type"), body)
		}
	}
	if _, err := pageLink(context.Background(), s3c, localBucket, history.Page{Deployment: "shop", Key: layout.RunPageKey("shop", "R0")}, time.Minute, ""); err == nil || !strings.Contains(err.Error(), "no page s3://"+localBucket+"/runs/shop/R0.html") {
		t.Errorf("a page never written: %v", err)
	}
	if _, err := pageLink(context.Background(), s3c, localBucket, history.Page{Deployment: "shop", Key: "x", Unwritten: "run R is still running"}, time.Minute, ""); err == nil || err.Error() != "run R is still running" {
		t.Errorf("a page not written yet: %v", err)
	}

	if code, _, errOut := runCLI(t, "open", "shop", "nope"); code != 1 || !strings.Contains(errOut, "deployment shop has no run or plan nope") {
		t.Errorf("open an unknown run: exit %d, %q", code, errOut)
	}
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodPost, "runs/shop/" + runID + ".html", http.StatusMethodNotAllowed},
		{http.MethodGet, "runs/active/" + runID + ".json", http.StatusNotFound},
		{http.MethodGet, "state/shop/shop.json", http.StatusNotFound},
		{http.MethodGet, "runs/shop/../../state/shop/shop.json", http.StatusNotFound},
		{http.MethodGet, "runs/shop/nope.html", http.StatusNotFound},
	} {
		if status, _, body := get(t, tc.method, base+tc.path); status != tc.want {
			t.Errorf("%s %s: %d, want %d: %s", tc.method, tc.path, status, tc.want, body)
		}
	}
}

var waitArgs = []string{"--wait", "--poll", "20ms", "--timeout", "2m"}

// webshopWorld is the world the webshop deploys in (deployWebshop's): its ports function
// answers the service's port, its deployer seals with its key.
func webshopWorld(t *testing.T) *awslocal.Emulator {
	t.Helper()
	e, _ := deployEmulatorWith(t, emulatorOptions{step: 500 * time.Millisecond, ports: true, keyed: true})
	t.Setenv("CAIRN_BUCKET", localBucket)
	t.Setenv("GITHUB_ACTIONS", "")
	return e
}

// planAndApproveWebshop deploys the webshop bundle as deployment shop, as the tour does
// (its database is protected: plan, then approve), and returns the plan's id and its
// apply run's.
func planAndApproveWebshop(t *testing.T) (planID, runID string) {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"plan", filepath.Join(testBundles, "webshop"), "--deployment", "shop"}, waitArgs...)...)
	id := regexp.MustCompile(`(?m)^plan id: (\S+)$`).FindStringSubmatch(out + errOut)
	if code != 0 || id == nil {
		t.Fatalf("plan exited %d:\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, append([]string{"approve", "shop", id[1]}, waitArgs...)...)
	run := regexp.MustCompile(`(?m)^run (\S+) succeeded`).FindStringSubmatch(out + errOut)
	if code != 0 || run == nil {
		t.Fatalf("approve exited %d:\n%s\n%s", code, out, errOut)
	}
	return id[1], run[1]
}
