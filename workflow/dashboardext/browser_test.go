package dashboardext_test

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
)

// newBrowser starts Debian's headless chromium, or skips the test.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("skipping browser test: no chromium on PATH (install Debian's chromium: apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.NoFirstRun, chromedp.WindowSize(1440, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelT)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// TestBrowser loads a failed Workflow's page in headless Chromium under the
// dashboard's Content-Security-Policy: the SVG graph lays out with every
// member, the failed path is drawn in red, no script throws; then the
// operator retries the failed path from the page's form, and the retry is
// audited.
func TestBrowser(t *testing.T) {
	ctx := newBrowser(t)
	f := newFixture(t)
	run := f.failedWorkflow()
	ts := f.serve(allowOnly(permission.View, permission.ViewSensitiveData, permission.Requeue, permission.Cancel))
	var mu sync.Mutex
	var exceptions []string
	events := chromedp.Events(ctx, runtime.ExceptionThrown)
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			mu.Lock()
			exceptions = append(exceptions, ev.ExceptionDetails.Text)
			mu.Unlock()
		}
	}()
	url := fmt.Sprintf("%s/backwave/x/workflows/w/%d", ts.URL, run.ID)
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.ID("wf-graph"))); err != nil {
		t.Fatalf("navigate %s: %v", url, err)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#wf-graph a.member").length`); n != 5 {
		t.Errorf("%d members in the graph, want 5", n)
	}
	if w := eval[float64](t, ctx, `document.getElementById("wf-graph").getBBox().width`); w < 3*200 {
		t.Errorf("the graph lays out %.0f wide, want three columns of boxes", w)
	}
	if red := eval[int](t, ctx, `[...document.querySelectorAll("#wf-graph rect")].filter(r => getComputedStyle(r).stroke === "rgb(192, 57, 43)").length`); red != 3 {
		t.Errorf("%d boxes drawn red, want the 3 of the failed path", red)
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.ID("wf-scope"), backwave.RetryFailedAndDownstream.String())); err != nil {
		t.Fatalf("choose the scope: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(cdppage.LoadEventFired, nil, chromedp.Click(chromedp.ID("wf-retry")))); err != nil {
		t.Fatalf("retry: %v", err)
	}
	// The retried members run again at once and fail again, so the status
	// may be Failed anew by the time it is read: the audit trail is what
	// says the page's form retried the Workflow.
	f.waitAudit("workflow_retry")
	mu.Lock()
	defer mu.Unlock()
	if len(exceptions) > 0 {
		t.Errorf("uncaught exceptions: %q", exceptions)
	}
}
