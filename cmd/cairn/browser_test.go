package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/cairn-dev/cairn/internal/benchbundle"
	"github.com/cairn-dev/cairn/internal/plan"
	"github.com/cairn-dev/cairn/internal/report"
	runstate "github.com/cairn-dev/cairn/internal/run"
	"github.com/cairn-dev/cairn/internal/rundoc"
	"github.com/cairn-dev/cairn/internal/runpage"
)

// artifacts is where the browser test keeps its screenshots (gitignored, never committed).
var artifacts = filepath.Join(repoRoot, "artifacts", "runpage")

// chromium is the headless browser the page tests drive: Debian's chromium (or another
// Chromium found in PATH); the test skips, saying how to get one, where there is none.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium in PATH (chromium, chromium-browser, google-chrome or headless-shell): the browser test of the run pages needs one; install Debian's (apt-get install chromium) to run it")
	return ""
}

// browser is a headless Chromium tab that records what would be a page's fault: a
// console error, an uncaught exception, a log entry at error level (a blocked load, a
// Content-Security-Policy violation) and a JavaScript dialog.
type browser struct {
	ctx    context.Context
	mu     sync.Mutex
	faults []string
}

func newBrowser(t *testing.T, path string) *browser {
	t.Helper()
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]), chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		var fault string
		switch ev := ev.(type) {
		case *cdpruntime.EventConsoleAPICalled:
			if ev.Type == cdpruntime.ConsoleAPICalledTypeError || ev.Type == cdpruntime.ConsoleAPICalledTypeWarning {
				fault = fmt.Sprintf("console %s: %v", ev.Type, ev.Args)
			}
		case *cdpruntime.EventExceptionThrown:
			fault = fmt.Sprintf("exception: %s", ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				fault = fmt.Sprintf("log %s: %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		case *page.EventJavascriptDialogOpening:
			fault = "a JavaScript dialog opened: " + ev.Message
			go func() { _, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{}) }()
		}
		if fault != "" {
			b.mu.Lock()
			b.faults = append(b.faults, fault)
			b.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return b
}

// seen is what a page shows, read from the DOM as a person would see it.
type seen struct {
	Title     string     `json:"title"`
	Stacks    [][]string `json:"stacks"` // name, status
	Timeline  []string   `json:"timeline"`
	Failures  []string   `json:"failures"`
	Critical  string     `json:"critical"`
	Next      string     `json:"next"`
	Scripts   int        `json:"scripts"`
	Images    int        `json:"images"`
	Nodes     int        `json:"nodes"`
	Focusable int        `json:"focusable"`
	Loaded    float64    `json:"loaded"`   // ms from navigation to the load event
	Rendered  float64    `json:"rendered"` // ms from the response's end to the load event: the browser's own work
	Injected  bool       `json:"injected"`
}

const readPage = `(() => {
  const text = (e) => e ? e.textContent.trim() : "";
  const nav = performance.getEntriesByType("navigation")[0];
  return {
    title: document.title,
    stacks: [...document.querySelectorAll("details.stack")].map(d => [text(d.querySelector("summary .name")), text(d.querySelector("summary .phase"))]),
    timeline: [...document.querySelectorAll("#timeline li")].map(li => text(li.querySelector(".tl-name"))),
    failures: [...document.querySelectorAll("li.failure")].map(text),
    critical: text(document.getElementById("critical-path")),
    next: text(document.getElementById("next-step")),
    scripts: document.querySelectorAll("script").length,
    images: document.querySelectorAll("img").length,
    nodes: document.querySelectorAll("svg a.node").length,
    focusable: [...document.querySelectorAll("a[href], summary")].filter(e => e.tabIndex >= 0).length,
    loaded: nav ? nav.loadEventEnd - nav.startTime : -1,
    rendered: nav ? nav.loadEventEnd - nav.responseEnd : -1,
    injected: typeof window.cairnInjected !== "undefined",
  };
})()`

// visit loads url, reads what it shows and keeps a screenshot of the whole page as
// artifacts/runpage/NAME.png.
func (b *browser) visit(t *testing.T, url, name string) seen {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("browse %s: %v", url, err)
	}
	s, err := chromedp.Run(ctx, chromedp.Evaluate[seen](readPage))
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	// The whole page, and its first screen (what a person sees on opening it).
	for _, shot := range []struct {
		file string
		take chromedp.Action[[]byte]
	}{{name + ".png", chromedp.FullScreenshot(100)}, {name + "-top.png", chromedp.CaptureScreenshot()}} {
		png, err := chromedp.Run(ctx, shot.take)
		if err != nil {
			t.Fatalf("screenshot %s: %v", url, err)
		}
		file := filepath.Join(artifacts, shot.file)
		if err := os.WriteFile(file, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s (screenshot %s, %d KB)", name, url, file, len(png)>>10)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.faults) > 0 {
		t.Errorf("%s: the page had faults in the browser:\n%s", name, strings.Join(b.faults, "\n"))
		b.faults = nil
	}
	if s.Scripts != 0 || s.Images != 0 || s.Injected {
		t.Errorf("%s: %d script(s), %d image(s) on the page, injected %v", name, s.Scripts, s.Images, s.Injected)
	}
	return s
}

// fetch reads url: its body.
func fetch(t *testing.T, url string) []byte {
	t.Helper()
	status, _, body := get(t, http.MethodGet, url)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, status, body)
	}
	return []byte(body)
}

// section is what a stack's section shows, read from the DOM: whether it is open, whether
// its resources table is seen, its resources' rows (logical id, type, status, physical id,
// reason), its events' rows (time, resource, status, reason) and the reasons marked.
type section struct {
	Open      bool       `json:"open"`
	Visible   bool       `json:"visible"`
	Resources [][]string `json:"resources"`
	Events    [][]string `json:"events"`
	Marked    []string   `json:"marked"`
}

const readSection = `((name) => {
  const d = [...document.querySelectorAll("details.stack")].find(d => d.dataset.stack === name);
  if (!d) return null;
  const rows = (sel) => [...d.querySelectorAll(sel)].map(tr => [...tr.cells].map(c => c.textContent));
  const table = d.querySelector("table.resources");
  return {
    open: d.open,
    visible: !!table && table.checkVisibility(),
    resources: rows("table.resources tbody tr"),
    events: rows("details.events tbody tr"),
    marked: [...d.querySelectorAll("mark.reason")].map(m => m.textContent),
  };
})(%s)`

// stackSection reads stack name's section of the page the browser shows.
func (b *browser) stackSection(t *testing.T, name string) section {
	t.Helper()
	arg, _ := json.Marshal(name)
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[*section](fmt.Sprintf(readSection, arg)))
	if err != nil || s == nil {
		t.Fatalf("read the section of %s: %v", name, err)
	}
	return *s
}

// expand opens stack name's section as a person does, by its summary, and reads it.
func (b *browser) expand(t *testing.T, name string) section {
	t.Helper()
	arg, _ := json.Marshal(name)
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`details.stack[data-stack=%s] > summary`, arg)))); err != nil {
		t.Fatalf("click the summary of %s: %v", name, err)
	}
	return b.stackSection(t, name)
}

// checkResources: a stack's section shows each resource the run document keeps for it,
// with its latest status (the failed first), and each of its events in time order.
func checkResources(t *testing.T, page, name string, got section, s *runstate.Stack) {
	t.Helper()
	var want, gotIDs []string
	for _, r := range runstate.Resources(s.Events) {
		want = append(want, r.LogicalID)
	}
	for _, r := range got.Resources {
		gotIDs = append(gotIDs, r[0])
		if len(r) != 5 || r[2] == "" {
			t.Errorf("%s: %s's resource row %q lacks its status", page, name, r)
		}
	}
	if len(want) == 0 || !slices.Equal(gotIDs, want) {
		t.Errorf("%s: %s's section shows the resources %v, want %v (the run keeps %d events)", page, name, gotIDs, want, len(s.Events))
	}
	if len(got.Events) != len(s.Events) {
		t.Errorf("%s: %s's section shows %d events, the run keeps %d", page, name, len(got.Events), len(s.Events))
		return
	}
	for i, e := range s.Events {
		if row := got.Events[i]; row[1] != e.LogicalID || row[2] != e.Status {
			t.Errorf("%s: %s's event %d shows %q, want %s %s (time order)", page, name, i+1, row, e.LogicalID, e.Status)
		}
	}
}

// checkRunPage: the page shows every stack of the run document with its phase, the
// stacks that started in the order they started, and each failed stack's reason.
func checkRunPage(t *testing.T, name string, s seen, doc *rundoc.Document) {
	t.Helper()
	var want [][]string
	for _, n := range doc.Run.Names() {
		want = append(want, []string{n, string(doc.Run.Stacks[n].Phase)})
	}
	if !slices.EqualFunc(s.Stacks, want, slices.Equal) {
		t.Errorf("%s shows the stacks %v, want %v", name, s.Stacks, want)
	}
	var started []string
	for _, n := range doc.Run.Names() {
		if !doc.Run.Stacks[n].StartedAt.IsZero() {
			started = append(started, n)
		}
	}
	slices.SortStableFunc(started, func(a, b string) int {
		return doc.Run.Stacks[a].StartedAt.Compare(doc.Run.Stacks[b].StartedAt)
	})
	if !slices.Equal(s.Timeline, started) {
		t.Errorf("%s's timeline is %v, want the order the stacks started: %v", name, s.Timeline, started)
	}
	for _, n := range doc.Run.Names() {
		st := doc.Run.Stacks[n]
		if st.Phase != runstate.Failed {
			continue
		}
		if !slices.ContainsFunc(s.Failures, func(f string) bool { return strings.HasPrefix(f, n) && strings.Contains(f, report.Line(st.Reason)) }) {
			t.Errorf("%s does not show %s's reason %q among the failures %q", name, n, st.Reason, s.Failures)
		}
	}
}

// hostileReason is what a resource's failure says, made to break HTML: tags, a script,
// quotes leaving an attribute, an entity.
const hostileReason = `<script>window.cairnInjected=1</script><img src=x onerror="window.cairnInjected=2"> "double" 'single' &amp; </details><b>bold</b>`

// TestRunPageInBrowser drives headless Chromium through the pages of real runs against
// the emulator: the webshop's apply run (5 stacks), its failed update (a resource fails
// with a hostile reason) and its plan, and a 200-stack deployment's run and plan. Each
// loads with no console error, exception, blocked load or dialog, runs no script and
// shows no image; shows every stack with its status, the timeline in the order the stacks
// started, and a failed stack's reason as text; expanding a stack shows its resources and
// their events, and the failed update's section shows the failing resource's reason as
// text. It keeps screenshots in
// artifacts/runpage/ and logs the 200-stack run page's size and load time.
func TestRunPageInBrowser(t *testing.T) {
	path := chromium(t)
	webshopWorld(t)
	planID, runID := planAndApproveWebshop(t)
	code, out, errOut := runCLI(t, "local", "fault", "shop-cache", "Cache", "--fail", hostileReason)
	if code != 0 {
		t.Fatalf("fault: %d %s %s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, append([]string{"push", filepath.Join(testBundles, "webshop"), "--deployment", "shop", "--var-file", filepath.Join(testBundles, "..", "vars", "bigger-cache.yaml")}, waitArgs...)...)
	failed := regexp.MustCompile(`(?m)^run (\S+) failed`).FindStringSubmatch(out + errOut)
	if code != 1 || failed == nil {
		t.Fatalf("the failed update exited %d:\n%s\n%s", code, out, errOut)
	}
	link := mustOpenURL(t, "shop", runID)
	base := link[:strings.Index(link, runpage.LocalPath)+len(runpage.LocalPath)]
	b := newBrowser(t, path)

	pages := map[string]seen{}
	for _, tc := range []struct{ id, name string }{{runID, "webshop-run"}, {failed[1], "webshop-run-failed"}} {
		url := base + "runs/shop/" + tc.id + ".html"
		doc, err := rundoc.DecodeDocument(fetch(t, base+"runs/shop/"+tc.id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		s := b.visit(t, url, tc.name)
		pages[tc.name] = s
		checkRunPage(t, tc.name, s, doc)
		if s.Nodes != len(doc.Run.Stacks) || s.Focusable < 2*len(doc.Run.Stacks) {
			t.Errorf("%s: %d graph nodes, %d focusable; want a node and a section for each of the %d stacks", tc.name, s.Nodes, s.Focusable, len(doc.Run.Stacks))
		}
		if tc.id != runID {
			// The failed update: the cache's section is open, its failed resource first,
			// with the hostile reason shown as text, marked in the resources and events.
			c := b.stackSection(t, "cache")
			checkResources(t, tc.name, "cache", c, doc.Run.Stacks["cache"])
			if !c.Open || !c.Visible || len(c.Resources) == 0 || c.Resources[0][0] != "Cache" || !strings.Contains(c.Resources[0][2], "UPDATE_FAILED") || c.Resources[0][4] != hostileReason {
				t.Errorf("%s: the cache's section (open %v) shows the resources %q; want Cache failed first, with the reason %q", tc.name, c.Open, c.Resources, hostileReason)
			}
			if len(c.Marked) < 2 || c.Marked[0] != hostileReason || c.Marked[len(c.Marked)-1] != hostileReason {
				t.Errorf("%s: the reasons marked in the cache's section are %q, want the failure's in the resources and the events", tc.name, c.Marked)
			}
			continue
		}
		// The apply: a stack's section starts closed; expanding it shows its resources
		// and their events.
		for _, n := range doc.Run.Names() {
			if len(doc.Run.Stacks[n].Events) == 0 {
				continue
			}
			if before := b.stackSection(t, n); before.Open || before.Visible {
				t.Errorf("%s: %s's section is open before it is expanded", tc.name, n)
			}
			after := b.expand(t, n)
			if !after.Open || !after.Visible {
				t.Errorf("%s: expanding %s does not show its resources (open %v, table seen %v)", tc.name, n, after.Open, after.Visible)
			}
			checkResources(t, tc.name, n, after, doc.Run.Stacks[n])
		}
		png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(artifacts, tc.name+"-expanded.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	failedDoc, _ := rundoc.DecodeDocument(fetch(t, base+"runs/shop/"+failed[1]+".json"))
	if c := failedDoc.Run.Stacks["cache"]; c.Phase != runstate.Failed || !strings.Contains(c.Reason, hostileReason) {
		t.Errorf("the failed update's cache is %s (%q), want failed with the hostile reason", c.Phase, c.Reason)
	}
	if s := pages["webshop-run-failed"]; !strings.Contains(strings.Join(s.Failures, "\n"), hostileReason) || !strings.Contains(s.Next, "cairn ") {
		t.Errorf("the failed run's page shows the failures %q and next %q; want the hostile reason as text and a command", s.Failures, s.Next)
	}
	if s := b.visit(t, base+"plans/shop/"+planID+".html", "webshop-plan"); len(s.Stacks) != 5 {
		t.Errorf("the webshop's plan page shows %d change sets, want 5: %v", len(s.Stacks), s.Stacks)
	}

	big(t, b, base)
}

// mustOpen is `cairn open NAME [ID]`'s link.
func mustOpen(t *testing.T, deployment string, id ...string) string {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"open", deployment}, id...)...)
	if code != 0 {
		t.Fatalf("open %s %s: exit %d %s", deployment, id, code, errOut)
	}
	return out
}

// big deploys 200 generated stacks as deployment big, then plans a change of half of
// them (a quarter replaced), and checks and keeps the pages of the run and the plan.
func big(t *testing.T, b *browser, base string) {
	const n = 200
	dir := t.TempDir()
	if err := benchbundle.Write(dir, "big", n); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	args := []string{"push", dir, "--deployment", "big", "--wait", "--poll", "100ms", "--timeout", "10m"}
	if code, out, errOut := runCLI(t, args...); code != 0 {
		t.Fatalf("push of %d stacks exited %d:\n%.3000s\n%.3000s", n, code, out, errOut)
	}
	t.Logf("%d stacks deployed in %s", n, time.Since(began).Round(time.Second))
	link := strings.TrimSpace(mustOpen(t, "big"))
	id := strings.TrimSuffix(link[strings.LastIndex(link, "/")+1:], ".html")
	body := fetch(t, link)
	doc, err := rundoc.DecodeDocument(fetch(t, base+"runs/big/"+id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	s := b.visit(t, link, "big-run")
	checkRunPage(t, "big-run", s, doc)
	t.Logf("the page of a %d-stack run: %d bytes (%d KB); loaded in Chromium in %.0f ms (navigation start to load event, the local server's rendering included), %.0f ms of it the browser's (the response's end to the load event)", n, len(body), len(body)>>10, s.Loaded, s.Rendered)
	if len(body) > 1<<20 || s.Loaded > 5000 {
		t.Errorf("the %d-stack run page is %d bytes and loads in %.0f ms: want under 1 MB and 5 s", n, len(body), s.Loaded)
	}

	for i, edit := range []string{"", "      VisibilityTimeout: 60\n", "      QueueName: !Sub \"${AWS::StackName}-q\"\n", ""} {
		if edit == "" {
			continue
		}
		f := filepath.Join(dir, "templates", fmt.Sprintf("t%d.yaml", i))
		tmpl, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		changed := strings.Replace(string(tmpl), "    Properties:\n", "    Properties:\n"+edit, 1)
		if err := os.WriteFile(f, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCLI(t, "plan", dir, "--deployment", "big", "--wait", "--poll", "100ms", "--timeout", "10m", "--format", "json")
	var p plan.Document
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil {
		t.Fatalf("plan of %d stacks exited %d:\n%.3000s\n%.3000s", n, code, out, errOut)
	}
	ps := b.visit(t, mustOpenURL(t, "big", p.ID), "big-plan")
	replaced, shownStacks := 0, 0
	for _, st := range p.Stacks {
		if st.Replacements() > 0 {
			replaced++
		}
		if st.Action != plan.None || st.InputsMayChange {
			shownStacks++ // as the Markdown plan: what changes, and what may once its inputs are applied
		}
	}
	if len(ps.Stacks) != shownStacks || replaced == 0 || len(ps.Stacks) < replaced {
		t.Fatalf("the plan page shows %d stacks; the plan changes %d, %d with a replacement, and %d may change", len(ps.Stacks), len(p.Changing()), replaced, shownStacks)
	}
	t.Logf("the plan of %d stacks: %d change, %d with a replacement, %d more known after apply; its page is %d KB", n, len(p.Changing()), replaced, shownStacks-len(p.Changing()), len(fetch(t, mustOpenURL(t, "big", p.ID)))>>10)
	for i, st := range ps.Stacks[:replaced] {
		if s := p.Stack(st[0]); s == nil || s.Replacements() == 0 {
			t.Errorf("change set %d of the plan page is %s's, which replaces nothing: replacements come first", i+1, st[0])
		}
	}
}

// mustOpenURL is mustOpen's link, trimmed.
func mustOpenURL(t *testing.T, deployment string, id ...string) string {
	t.Helper()
	return strings.TrimSpace(mustOpen(t, deployment, id...))
}
