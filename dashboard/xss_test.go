package dashboard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/backwave/backwave"
)

// xssPayloads are placed in every operator-visible field that carries
// user data: payloads, Tags, Queue names, Wire Names, schedule names,
// Actors, Failure Detail and Job Output. Each calls alert when it runs.
var xssPayloads = []string{
	`<script>alert(1)</script>`,
	`"><script>alert(1)</script>`,
	`'><img src=x onerror=alert(1)>`,
	`<img src=x onerror=alert(1)>`,
	`<svg onload=alert(1)>`,
	`<svg><script>alert(1)</script></svg>`,
	`<body onload=alert(1)>`,
	`<iframe src="javascript:alert(1)"></iframe>`,
	`javascript:alert(1)`,
	`" onmouseover="alert(1)`,
	`' onfocus='alert(1)' autofocus='`,
	`<a href="javascript:alert(1)">x</a>`,
	`<details open ontoggle=alert(1)>`,
	`<input autofocus onfocus=alert(1)>`,
	`<video><source onerror=alert(1)></video>`,
	`<audio src=x onerror=alert(1)>`,
	`<marquee onstart=alert(1)>x</marquee>`,
	`<object data="javascript:alert(1)"></object>`,
	`<embed src="javascript:alert(1)">`,
	`<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>`,
	`</textarea><script>alert(1)</script>`,
	`</title><script>alert(1)</script>`,
	`</pre><script>alert(1)</script>`,
	`</script><script>alert(1)</script>`,
	`<!--<script>alert(1)</script>-->`,
	`]]><script>alert(1)</script>`,
	`{{.}}<script>alert(1)</script>`,
	`${alert(1)}`,
	"`+alert(1)+`",
	`';alert(1);//`,
	`";alert(1);//`,
	`\";alert(1);//`,
	`<scr<script>ipt>alert(1)</scr</script>ipt>`,
	`<SCRIPT SRC=data:text/javascript,alert(1)></SCRIPT>`,
	`<img src="x" onerror="&#97;lert(1)">`,
	`<img src=x onerror=\u0061lert(1)>`,
	`<svg><animate onbegin=alert(1) attributeName=x dur=1s>`,
	`<form action="javascript:alert(1)"><button>x</button></form>`,
	`<base href="javascript:alert(1)//">`,
	`<meta http-equiv="refresh" content="0;url=javascript:alert(1)">`,
	`<style>@import 'javascript:alert(1)';</style>`,
	`<div style="background:url(javascript:alert(1))">x</div>`,
	`data:text/html,<script>alert(1)</script>`,
	`<x onclick=alert(1)>click`,
	`<select autofocus onfocus=alert(1)>`,
	`<textarea autofocus onfocus=alert(1)>`,
	`<img src=x:alert(1) onerror=eval(src)>`,
	`<noscript><p title="</noscript><img src=x onerror=alert(1)>">`,
	`<template><script>alert(1)</script></template><script>alert(1)</script>`,
	`"><svg/onload=alert(1)>`,
	`'-alert(1)-'`,
	`<a href=" &#14;  javascript:alert(1)">x</a>`,
	`<img srcset="x" onerror="alert(1)">`,
	`<body onpageshow=alert(1)>`,
	`<iframe srcdoc="<script>parent.alert(1)</script>"></iframe>`,
	`<svg><a xlink:href="javascript:alert(1)"><text x="20" y="20">x</text></a></svg>`,
}

// placeXSS stores every payload in every field an operator sees, the way
// an application could: as the job payload, a Label and a Keyed Tag, the
// Queue name, the Wire Name, the schedule name, the Actor of an audited
// trigger, the Failure Detail of a dead-lettered job and the Job Output of
// a succeeded one. It returns the jobs whose pages to visit.
func placeXSS(t *testing.T, f *fixture) []backwave.JobID {
	t.Helper()
	ctx := context.Background()
	var jobs []backwave.JobID
	for i, p := range xssPayloads {
		tags := backwave.WithTags(backwave.Label(p), backwave.Keyed(p, p))
		jobs = append(jobs,
			f.enqueue(anyJob{W: p, Data: p}, backwave.WithQueue(p), tags),
			f.enqueue(failJob{Detail: p, Secret: p}, tags),
			f.enqueue(okJob{Out: p, Secret: p}, tags),
		)
		name := fmt.Sprintf("%s#%d", p, i)
		if err := f.client.RegisterSchedule(ctx, backwave.RecurringSchedule{
			Name: name, Cron: "0 3 * * *", Args: anyJob{W: p, Data: p},
			Options: []backwave.EnqueueOption{backwave.WithQueue(p), tags}, NoOverlap: true,
		}); err != nil {
			t.Fatalf("schedule %q: %v", name, err)
		}
		actor, err := backwave.NewAdmin(f.st, backwave.Actor(p))
		if err != nil {
			t.Fatalf("actor %q: %v", p, err)
		}
		if _, err := actor.TriggerSchedule(ctx, name); err != nil {
			t.Fatalf("trigger %q: %v", name, err)
		}
		if err := actor.SetQueueLimit(ctx, p, 2); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < len(jobs); i += 3 {
		f.waitState(jobs[i+1], backwave.StateDeadLettered)
		f.waitState(jobs[i+2], backwave.StateSucceeded)
	}
	return jobs
}

// xssPages lists the pages that show the payloads.
func xssPages(jobs []backwave.JobID) []string {
	paths := []string{"/backwave/", "/backwave/jobs", "/backwave/jobs?limit=1000", "/backwave/queues", "/backwave/schedules", "/backwave/audit"}
	for _, p := range xssPayloads[:8] {
		paths = append(paths, "/backwave/jobs?"+url.Values{"queue": {p}, "label": {p}, "wire": {p}}.Encode())
	}
	for _, id := range jobs {
		paths = append(paths, idPath(id))
	}
	return paths
}

// TestXSSEscapedInMarkup: no response carries a payload's markup as
// markup — every payload with a '<' is escaped wherever it is shown. The
// browser test below checks that nothing runs.
func TestXSSEscapedInMarkup(t *testing.T) {
	t.Parallel()
	if len(xssPayloads) < 50 {
		t.Fatalf("%d XSS payloads, want at least 50", len(xssPayloads))
	}
	f := newFixture(t)
	jobs := placeXSS(t, f)
	_, ts := f.serve(Options{Policy: allowAll()})
	paths := append(xssPages(jobs), "/backwave/tags/suggest?prefix=%3C")
	for _, path := range paths {
		status, body := get(t, ts, path)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, status)
		}
		for _, p := range xssPayloads {
			if strings.Contains(p, "<") && strings.Contains(body, p) {
				t.Errorf("GET %s carries %q unescaped", path, p)
			}
		}
	}
	// The payloads are on the pages, escaped: the test looks where they
	// are.
	_, body := get(t, ts, "/backwave/schedules")
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;#0") {
		t.Error("the schedules page does not show the first payload's schedule, escaped")
	}
}

// TestBrowserXSSInert loads every page that shows a payload in Chromium,
// once with the Content-Security-Policy bypassed (so escaping alone must
// hold) and once with it, and asserts no payload ran: no alert, confirm or
// prompt opened. It first shows the watch catches a payload that does run.
func TestBrowserXSSInert(t *testing.T) {
	browser := newBrowser(t)

	// The detector bites: a page that renders a payload raw is caught.
	raw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<!doctype html><p>"+xssPayloads[3]+"</p>")
	}))
	defer raw.Close()
	ctx, w := tab(t, browser)
	if err := chromedp.Do(ctx, chromedp.Navigate(raw.URL)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.dialog:
	case <-time.After(20 * time.Second):
		t.Fatal("a raw payload ran no dialog the watch saw: the check below would prove nothing")
	}

	f := newFixture(t)
	jobs := placeXSS(t, f)
	_, ts := f.serve(Options{Policy: allowAll()})
	for _, bypass := range []bool{true, false} {
		ctx, w := tab(t, browser)
		if _, err := chromedp.Call(ctx, cdppage.SetBypassCSP, cdppage.SetBypassCSPParams{Enabled: bypass}); err != nil {
			t.Fatal(err)
		}
		paths := xssPages(jobs)
		if !bypass {
			paths = paths[:14] // the list pages; the job pages ran above
		}
		for _, p := range paths {
			navigate(t, ctx, ts.URL+p)
			waitJS(t, ctx, "load", `document.readyState === "complete"`)
		}
		// Tag Suggest writes stored Tags into the page as the operator
		// types: they stay text too.
		navigate(t, ctx, ts.URL+"/backwave/jobs")
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`input[name="tagq"]`), "<")); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "suggestions", `document.querySelectorAll("#tag-suggestions option").length > 0`)
		// A last round trip, so a dialog from the final page is seen.
		if _, err := chromedp.Call(ctx, cdppage.GetFrameTree, cdp.Empty{}); err != nil {
			t.Fatal(err)
		}
		dialogs, _ := w.seen()
		if len(dialogs) > 0 {
			t.Errorf("CSP bypassed %v: %d payloads ran, e.g. %q", bypass, len(dialogs), dialogs[0])
		}
		t.Logf("CSP bypassed %v: %d pages, %d payloads in %d fields each, no dialog", bypass, len(paths)+1, len(xssPayloads), 8)
	}
}
