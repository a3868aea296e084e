package dashboard

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/backwave/backwave"
)

// screenshot, when set, makes TestBrowser write a PNG of the overview
// there: go test ./dashboard -run TestBrowser -args -screenshot=$PWD/docs/dashboard.png
var screenshot = flag.String("screenshot", "", "write a PNG screenshot of the overview to this file")

// newBrowser starts Debian's headless chromium for the test, or skips the
// test when there is none.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("skipping browser test: no chromium on PATH (install Debian's chromium: apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.NoFirstRun,
		chromedp.WindowSize(1440, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// tab opens a new tab of the browser, with a time limit, watching for
// dialogs and uncaught exceptions.
func tab(t *testing.T, browser context.Context) (context.Context, *pageWatch) {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelT)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("open tab: %v", err)
	}
	return ctx, watch(ctx)
}

// pageWatch records every JavaScript dialog (alert, confirm, prompt) and
// every uncaught exception of a tab: an XSS payload that runs calls alert,
// and a broken script throws.
type pageWatch struct {
	dialog     chan struct{} // signalled on every dialog
	mu         sync.Mutex
	dialogs    []string
	exceptions []string
}

func watch(ctx context.Context) *pageWatch {
	w := &pageWatch{dialog: make(chan struct{}, 1)}
	dialogs := chromedp.Events(ctx, cdppage.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			w.mu.Lock()
			w.dialogs = append(w.dialogs, ev.URL+": "+ev.Message)
			w.mu.Unlock()
			select {
			case w.dialog <- struct{}{}:
			default:
			}
			_, _ = chromedp.Call(ctx, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			msg := ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
			w.mu.Lock()
			w.exceptions = append(w.exceptions, ev.ExceptionDetails.URL+": "+msg)
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *pageWatch) seen() (dialogs, exceptions []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.dialogs), slices.Clone(w.exceptions)
}

// navigate loads url and waits for the dashboard's frame.
func navigate(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.ID("live"))); err != nil {
		t.Fatalf("navigate %s: %v", url, err)
	}
}

// clickAndLoad clicks sel and waits for the page load the click causes.
func clickAndLoad(t *testing.T, ctx context.Context, sel chromedp.CSS) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(cdppage.LoadEventFired, nil, chromedp.Click(sel))); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitJS waits until the expression is truthy in the page.
func waitJS(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, js, err)
	}
}

// TestBrowser drives the dashboard in headless Chromium: every page loads
// with its script and no error, a dead-lettered job is requeued, a Queue
// paused, an SSE update arrives (and the pause control holds it back), Tag
// Suggest completes, and 1,000 jobs are paged through by keyset.
func TestBrowser(t *testing.T) {
	browser := newBrowser(t)
	f := newFixture(t)
	ids := seed(t, f)
	s, ts := f.serve(Options{Policy: allowAll(), RefreshInterval: 100 * time.Millisecond, Extensions: []Extension{testExtension()}})

	t.Run("every page loads", func(t *testing.T) {
		ctx, w := tab(t, browser)
		var paths []string
		for _, rt := range s.routes {
			if rt.method != "GET" || rt.path == "/events" || rt.path == "/tags/suggest" {
				continue
			}
			paths = append(paths, concrete(s.prefix, rt.path, ids.deadLettered))
		}
		paths = append(paths, idPath(ids.succeeded), idPath(ids.child), "/backwave/jobs?tk=tenant&tv=acme")
		for _, p := range paths {
			navigate(t, ctx, ts.URL+p)
			h1 := eval[string](t, ctx, `document.querySelector("main h1").textContent`)
			if h1 == "" {
				t.Errorf("%s: no heading", p)
			}
			// The script ran under the Content-Security-Policy: it took
			// over the live status line.
			waitJS(t, ctx, p+" live status", `document.getElementById("live-status").textContent.startsWith("Live: on")`)
		}
		if navs := eval[int](t, ctx, `document.querySelectorAll("header nav a").length`); navs != 8 {
			t.Errorf("%d nav entries, want 7 built-in and the extension's", navs)
		}
		dialogs, exceptions := w.seen()
		if len(dialogs)+len(exceptions) > 0 {
			t.Errorf("dialogs %q, exceptions %q", dialogs, exceptions)
		}
	})

	t.Run("reads without JavaScript", func(t *testing.T) {
		ctx, _ := tab(t, browser)
		if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatal(err)
		}
		navigate(t, ctx, ts.URL+"/backwave/jobs?tk=tenant&tv=acme")
		if st := eval[string](t, ctx, `document.getElementById("live-status").textContent`); !strings.HasPrefix(st, "Live refresh needs JavaScript") {
			t.Fatalf("the script ran with JavaScript off: status %q", st)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll("tr[data-job]").length`); n != 2 {
			t.Errorf("%d jobs listed for tenant=acme, want 2", n)
		}
		clickAndLoad(t, ctx, "a.facet-link")
		if facet := eval[string](t, ctx, `document.getElementById("facet-result").textContent`); !strings.Contains(facet, "urgent") {
			t.Errorf("the Tag Facet page without JavaScript: %q", facet)
		}
		clickAndLoad(t, ctx, `#facet-result a.tag`)
		if n := eval[int](t, ctx, `document.querySelectorAll("tr[data-job]").length`); n != 1 {
			t.Errorf("narrowing by a facet Tag lists %d jobs, want 1", n)
		}
	})

	t.Run("requeue a dead-lettered job", func(t *testing.T) {
		ctx, _ := tab(t, browser)
		navigate(t, ctx, ts.URL+idPath(ids.deadLettered))
		clickAndLoad(t, ctx, "#requeue")
		if loc := eval[string](t, ctx, `location.pathname`); loc != idPath(ids.deadLettered) {
			t.Errorf("after requeue the browser is at %s", loc)
		}
		au, err := f.admin.Audit(context.Background(), backwave.AuditListParams{JobID: ids.deadLettered})
		if err != nil {
			t.Fatal(err)
		}
		if len(au.Items) == 0 || au.Items[0].Action != backwave.AuditRequeue || au.Items[0].Actor != "test:alice" {
			t.Fatalf("audit trail of the job: %+v", au.Items)
		}
		// The handler always fails, so the requeued job runs Attempt 2
		// and dead-letters again; the page shows it once reloaded.
		f.waitState(ids.deadLettered, backwave.StateDeadLettered)
		navigate(t, ctx, ts.URL+idPath(ids.deadLettered))
		if txt := eval[string](t, ctx, `document.querySelector("dl.facts").textContent`); !strings.Contains(txt, "Attempt 2") {
			t.Errorf("job page after requeue: %q", txt)
		}
	})

	t.Run("enqueue a job by hand", func(t *testing.T) {
		ctx, _ := tab(t, browser)
		navigate(t, ctx, ts.URL+"/backwave/enqueue")
		if err := chromedp.Do(ctx,
			chromedp.SendKeys(chromedp.CSS(`input[name="wire_name"]`), "browser.resend"),
			chromedp.SendKeys(chromedp.CSS(`input[name="queue"]`), "mail"),
			chromedp.SetValue(chromedp.CSS(`textarea[name="payload"]`), `{"to": "ada@example.com"}`),
		); err != nil {
			t.Fatal(err)
		}
		clickAndLoad(t, ctx, "#enqueue")
		loc := eval[string](t, ctx, `location.pathname`)
		if !strings.HasPrefix(loc, "/backwave/jobs/") {
			t.Fatalf("after enqueue the browser is at %s, want the new job's page", loc)
		}
		if txt := eval[string](t, ctx, `document.querySelector("main").textContent`); !strings.Contains(txt, "browser.resend") {
			t.Errorf("the new job's page does not name its Wire Name: %q", txt)
		}
	})

	t.Run("the Nodes page", func(t *testing.T) {
		ctx, w := tab(t, browser)
		navigate(t, ctx, ts.URL+"/backwave/")
		clickAndLoad(t, ctx, `header nav a[href="/backwave/nodes"]`)
		id := f.client.NodeRegistryID()
		row := `document.querySelector('tr[data-node="` + id + `"]')`
		if live := eval[string](t, ctx, row+`.querySelector(".node-status").textContent`); live != "live" {
			t.Errorf("the fixture's node %s shows %q, want live", id, live)
		}
		if beat := eval[string](t, ctx, row+`.querySelector(".node-heartbeat").textContent`); !strings.HasSuffix(beat, " ago") {
			t.Errorf("last heartbeat %q has no relative time", beat)
		}
		if groups := eval[string](t, ctx, row+`.querySelector(".node-groups").textContent`); groups != "test: "+servedQueue {
			t.Errorf("groups cell %q, want %q", groups, "test: "+servedQueue)
		}
		// Mail has ready jobs and no node serves it: the warning leads to
		// its jobs, where they are marked overdue.
		clickAndLoad(t, ctx, `p[data-unserved="mail"] a`)
		if loc := eval[string](t, ctx, `location.pathname + location.search`); loc != "/backwave/jobs?queue=mail" {
			t.Fatalf("the warning's link led to %s", loc)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll("tr[data-job] .flag.overdue").length`); n == 0 {
			t.Error("no job of the unserved Queue mail is marked overdue")
		}
		dialogs, exceptions := w.seen()
		if len(dialogs)+len(exceptions) > 0 {
			t.Errorf("dialogs %q, exceptions %q", dialogs, exceptions)
		}
	})

	t.Run("pause a queue", func(t *testing.T) {
		ctx, _ := tab(t, browser)
		navigate(t, ctx, ts.URL+"/backwave/queues")
		clickAndLoad(t, ctx, `tbody[data-queue="mail"] button.pause`)
		if st := eval[string](t, ctx, `document.querySelector('tbody[data-queue="mail"] .queue-status').textContent`); !strings.Contains(st, "paused") {
			t.Errorf("queue status after pause: %q", st)
		}
		qs, err := f.admin.Queues(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if q.Name == "mail" && !q.Paused {
				t.Error("the store does not have mail paused")
			}
		}
		clickAndLoad(t, ctx, `tbody[data-queue="mail"] button.resume`)
	})

	t.Run("the Overview and Queues pages fit 1280 pixels; Queue controls under their Queue, Rate Limit and Key Limit set there", func(t *testing.T) {
		ctx, w := tab(t, browser)
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
			t.Fatal(err)
		}
		// Nothing runs off the right edge: every count and control can be
		// reached.
		for _, p := range []string{"/backwave/", "/backwave/queues"} {
			navigate(t, ctx, ts.URL+p)
			if over := eval[float64](t, ctx, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); over > 0 {
				t.Errorf("%s is %.0f pixels wider than a 1280-pixel window", p, over)
			}
		}
		// Each Queue's controls sit right under its own row, from its
		// left edge, and inside the table.
		geo := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("tbody.queue")).map(b => {
			const row = b.querySelector("tr.queue-row").getBoundingClientRect();
			const ctl = b.querySelector("tr.queue-controls > td").getBoundingClientRect();
			const last = Array.from(b.querySelectorAll(".controls form")).map(f => f.getBoundingClientRect().right);
			const table = b.closest("table").getBoundingClientRect();
			const bad = [];
			if (Math.abs(ctl.top - row.bottom) > 1) bad.push("controls start " + (ctl.top - row.bottom) + "px from the row's bottom");
			if (Math.abs(ctl.left - row.left) > 1) bad.push("controls start " + (ctl.left - row.left) + "px from the row's left");
			if (Math.max(...last) > table.right + 1) bad.push("a control ends " + (Math.max(...last) - table.right) + "px right of the table");
			return bad.length ? b.dataset.queue + ": " + bad.join(", ") : "";
		}).filter(x => x)`)
		for _, g := range geo {
			t.Error(g)
		}
		setForm := func(form, field, value string) {
			t.Helper()
			sel := `tbody[data-queue="mail"] form.` + form + ` input[name="` + field + `"]`
			eval[bool](t, ctx, `(document.querySelector('`+sel+`').value = "`+value+`") !== null`)
		}
		setForm("set-rate", "rate_limit", "30")
		setForm("set-rate", "rate_period", "1m")
		clickAndLoad(t, ctx, `tbody[data-queue="mail"] form.set-rate button`)
		if rate := eval[string](t, ctx, `document.querySelector('tbody[data-queue="mail"] .queue-rate').textContent`); !strings.Contains(rate, "of 30 started per 1m0s") {
			t.Errorf("the mail row's Rate Limit after setting 30 per 1m: %q", rate)
		}
		setForm("set-key-limit", "key_limit", "2")
		clickAndLoad(t, ctx, `tbody[data-queue="mail"] form.set-key-limit button`)
		if keys := eval[string](t, ctx, `document.querySelector('tbody[data-queue="mail"] .queue-keys').textContent`); !strings.Contains(keys, "key limit 2") {
			t.Errorf("the mail row's key policy after a Key Limit of 2: %q", keys)
		}
		qs, err := f.admin.Queues(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if q.Name == "mail" && (q.Rate != backwave.QueueRate{Limit: 30, Period: time.Minute} || q.Keys.Limit != 2) {
				t.Errorf("the store has mail at rate %+v, Key Limit %d; want 30 per 1m and 2", q.Rate, q.Keys.Limit)
			}
		}
		// Put mail back as the later subtests expect it.
		setForm("set-rate", "rate_limit", "0")
		setForm("set-rate", "rate_period", "")
		clickAndLoad(t, ctx, `tbody[data-queue="mail"] form.set-rate button`)
		setForm("set-key-limit", "key_limit", "0")
		clickAndLoad(t, ctx, `tbody[data-queue="mail"] form.set-key-limit button`)
		if rate := eval[string](t, ctx, `document.querySelector('tbody[data-queue="mail"] .queue-rate').textContent`); rate != "none" {
			t.Errorf("the mail row's Rate Limit after removing it: %q", rate)
		}
		dialogs, exceptions := w.seen()
		if len(dialogs)+len(exceptions) > 0 {
			t.Errorf("dialogs %q, exceptions %q", dialogs, exceptions)
		}
	})

	t.Run("an SSE update arrives, and pause holds it back", func(t *testing.T) {
		ctx, _ := tab(t, browser)
		navigate(t, ctx, ts.URL+"/backwave/")
		waitJS(t, ctx, "live on", `document.getElementById("live-status").textContent === "Live: on"`)
		before := eval[string](t, ctx, `document.querySelector('[data-count="total"]').textContent`)
		f.enqueue(anyJob{W: "test.mail"}, backwave.WithQueue("mail"))
		want := fmt.Sprint(atoi(t, before) + 1)
		waitJS(t, ctx, "the new count", `document.querySelector('[data-count="total"]').textContent === "`+want+`" && document.getElementById("live").dataset.refreshed > 0`)

		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("live-toggle"))); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "paused", `document.getElementById("live-status").textContent === "Live: paused"`)
		refreshed := eval[string](t, ctx, `document.getElementById("live").dataset.refreshed`)
		f.enqueue(anyJob{W: "test.mail"}, backwave.WithQueue("mail"))
		// Ten refresh intervals with no swap: the stream is closed.
		if err := chromedp.Do(ctx, chromedp.Sleep(time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := eval[string](t, ctx, `document.getElementById("live").dataset.refreshed`); got != refreshed {
			t.Errorf("a paused page refreshed (%s → %s)", refreshed, got)
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("live-toggle"))); err != nil {
			t.Fatal(err)
		}
		want = fmt.Sprint(atoi(t, want) + 1)
		waitJS(t, ctx, "the count after resume", `document.querySelector('[data-count="total"]').textContent === "`+want+`"`)
	})

	t.Run("tag suggest", func(t *testing.T) {
		ctx, _ := tab(t, browser)
		navigate(t, ctx, ts.URL+"/backwave/jobs")
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`input[name="tagq"]`), "TEN")); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "suggestions", `Array.from(document.querySelectorAll("#tag-suggestions option")).map(o => o.value).join(",") === "tenant=acme,tenant=globex"`)
		if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`input[name="tagq"]`), "tenant=acme")); err != nil {
			t.Fatal(err)
		}
		clickAndLoad(t, ctx, `#filter button[type="submit"]`)
		waitJS(t, ctx, "the Tag Facet beside the list", `document.querySelector("section[data-facet]").dataset.loaded === "1"`)
		if facet := eval[string](t, ctx, `document.querySelector("#facet-result").textContent`); !strings.Contains(facet, "urgent") {
			t.Errorf("Tag Facet of tenant=acme: %q", facet)
		}
		rows := eval[[]int64](t, ctx, `Array.from(document.querySelectorAll("tr[data-job]")).map(r => +r.dataset.job)`)
		if !slices.Equal(rows, []int64{int64(ids.deadLettered), int64(ids.succeeded)}) {
			t.Errorf("tenant=acme lists %v, want [%d %d]", rows, ids.deadLettered, ids.succeeded)
		}
	})

	t.Run("bulk requeue", func(t *testing.T) {
		ctx, _ := tab(t, browser)
		navigate(t, ctx, ts.URL+"/backwave/jobs?state=quarantined")
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr[data-job] input[type="checkbox"]`))); err != nil {
			t.Fatal(err)
		}
		clickAndLoad(t, ctx, "#bulk-requeue")
		if n := eval[string](t, ctx, `document.querySelector(".notice").textContent`); n != "1 job requeued." {
			t.Errorf("bulk notice %q", n)
		}
	})

	t.Run("select the page, then cancel all matching", func(t *testing.T) {
		ctx, _ := tab(t, browser)
		for range 3 {
			f.enqueue(anyJob{W: "test.triage"}, backwave.WithQueue("triage"), backwave.WithRunAt(time.Now().Add(time.Hour)))
		}
		navigate(t, ctx, ts.URL+"/backwave/jobs?queue=triage")
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("select-page"))); err != nil {
			t.Fatal(err)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('tr[data-job] input[name="id"]:checked').length`); n != 3 {
			t.Errorf("select every job on this page ticked %d rows, want 3", n)
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr[data-job] input[name="id"]`))); err != nil {
			t.Fatal(err)
		}
		if eval[bool](t, ctx, `document.getElementById("select-page").checked`) {
			t.Error("the page checkbox stays ticked with a row unticked")
		}
		clickAndLoad(t, ctx, `#matching a[href*="action=cancel"]`)
		if n := eval[string](t, ctx, `document.getElementById("preview-applicable").textContent`); n != "3" {
			t.Errorf("the confirm step says %q jobs can be cancelled, want 3", n)
		}
		clickAndLoad(t, ctx, "#matching-submit")
		if n := eval[string](t, ctx, `document.querySelector(".notice").textContent`); n != "3 jobs cancelled." {
			t.Errorf("notice after cancel all matching: %q", n)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll("tr[data-job] .s-cancelled").length`); n != 3 {
			t.Errorf("the list after the cancel shows %d cancelled jobs, want 3", n)
		}
	})

	t.Run("page through 1,000 jobs", func(t *testing.T) {
		ctx, _ := tab(t, browser)
		params := make([]backwave.EnqueueParams, 1000)
		for i := range params {
			params[i] = backwave.EnqueueParams{Args: anyJob{W: "test.bulk"}, Options: []backwave.EnqueueOption{backwave.WithQueue("bulk")}}
		}
		made, err := f.client.EnqueueMany(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		navigate(t, ctx, ts.URL+"/backwave/jobs?queue=bulk")
		var seen []int64
		pages := 0
		for {
			pages++
			seen = append(seen, eval[[]int64](t, ctx, `Array.from(document.querySelectorAll("tr[data-job]")).map(r => +r.dataset.job)`)...)
			if !eval[bool](t, ctx, `!!document.getElementById("page-next")`) {
				break
			}
			if pages > 20 {
				t.Fatal("more than 20 pages for 1,000 jobs")
			}
			clickAndLoad(t, ctx, "#page-next")
		}
		want := make([]int64, len(made))
		for i, id := range made {
			want[len(made)-1-i] = int64(id)
		}
		if !slices.Equal(seen, want) {
			t.Errorf("paged %d ids over %d pages; want the 1,000 made, newest first, each once", len(seen), pages)
		}
		if pages != 10 {
			t.Errorf("%d pages of 100, want 10", pages)
		}
	})

	if *screenshot != "" {
		t.Run("screenshot", func(t *testing.T) {
			// A dashboard without the test extension, over jobs just
			// finished (the throughput panel reads them from the store).
			_, plain := f.serve(Options{Policy: allowAll()})
			ctx, _ := tab(t, browser)
			navigate(t, ctx, plain.URL+"/backwave/")
			var made []backwave.JobID
			for i := range 40 {
				made = append(made, f.enqueue(okJob{Out: "done"}, backwave.WithTags(backwave.Keyed("tenant", fmt.Sprintf("t%d", i%4)))))
			}
			for i := range 3 {
				made = append(made, f.enqueue(failJob{Detail: fmt.Sprintf("timeout %d", i)}))
			}
			for _, id := range made[:40] {
				f.waitState(id, backwave.StateSucceeded)
			}
			navigate(t, ctx, plain.URL+"/backwave/")
			waitJS(t, ctx, "live on", `document.getElementById("live-status").textContent === "Live: on"`)
			shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(*screenshot, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s", *screenshot)
		})
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return n
}
