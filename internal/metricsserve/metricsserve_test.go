package metricsserve_test

import (
	"context"
	"io"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/internal/metricsserve"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store/memstore"
)

type mail struct{}

func (mail) WireName() string { return "test.mail" }

func (mail) JobOptions() backwave.JobOptions { return backwave.JobOptions{Queue: "mail"} }

type report struct{}

func (report) WireName() string { return "test.report" }

func (report) JobOptions() backwave.JobOptions { return backwave.JobOptions{Queue: "reports"} }

// TestScrapeShowsQueueThroughputAndDurations runs jobs on two Queues and
// scrapes /metrics: Attempts per Queue (throughput), the Attempt duration
// histogram by Queue and Wire Name, and the Queue gauges of Stats, in the
// Prometheus text format.
func TestScrapeShowsQueueThroughputAndDurations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, err := metricsserve.New(metricsserve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	h := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[mail]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[report]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	st := memstore.New(memstore.Options{Clock: backwave.WallClock{}})
	g := backwave.DefaultWorkerGroup("g", backwave.Strict("mail", "reports"))
	g.PollInterval = 10 * time.Millisecond
	cfg := backwave.Config{Handlers: h, Groups: []backwave.WorkerGroupOptions{g}}
	m.Install(&cfg)
	c, err := backwave.NewClient(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Watch(c); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	var params []backwave.EnqueueParams
	for range 3 {
		params = append(params, backwave.EnqueueParams{Args: mail{}})
	}
	params = append(params, backwave.EnqueueParams{Args: report{}})
	ids, err := c.EnqueueMany(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for {
			j, err := st.JobGet(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if j.State == job.StateSucceeded {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %d is %s after 30s", id, j.State)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// The duration is recorded as the handler returns, before the outcome
	// is reported: scrape until the last one is in.
	var text string
	for {
		text = scrape(t, m)
		if sample(text, "messaging_process_duration_seconds_count", `messaging_destination_name="mail"`) == "3" ||
			time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	want := []struct{ metric, labels, value string }{
		{"messaging_client_consumed_messages_total", `messaging_destination_name="mail"`, "3"},
		{"messaging_client_consumed_messages_total", `messaging_destination_name="reports"`, "1"},
		{"messaging_client_sent_messages_total", `messaging_destination_name="mail"`, "3"},
		{"messaging_process_duration_seconds_count", `backwave_wire_name="test.mail"`, "3"},
		{"messaging_process_duration_seconds_count", `messaging_destination_name="reports"`, "1"},
		{"messaging_process_duration_seconds_bucket", `messaging_destination_name="mail",.*le="\+Inf"`, "3"},
		{"backwave_queue_running", `messaging_destination_name="mail"`, "0"},
		{"backwave_queue_paused", `messaging_destination_name="reports"`, "0"},
		{"backwave_queue_ready", `messaging_destination_name="mail"`, "0"},
		{"backwave_queue_later", `messaging_destination_name="mail"`, "0"},
		{"backwave_queue_dead_lettered", `messaging_destination_name="mail"`, "0"},
		{"backwave_queue_oldest_ready_age_seconds", `messaging_destination_name="reports"`, "0"},
		{"backwave_pump_pool_size", `backwave_worker_group="g"`, strconv.Itoa(backwave.DefaultPoolSize)},
	}
	for _, w := range want {
		if got := sample(text, w.metric, w.labels); got != w.value {
			t.Errorf("%s{%s} = %q, want %q", w.metric, w.labels, got, w.value)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", text)
	}
}

func scrape(t *testing.T, m *metricsserve.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d", rec.Code)
	}
	b, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sample returns the value of the first sample of metric whose labels match
// the regular expression labels, or "" if none.
func sample(text, metric, labels string) string {
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(metric) + `\{([^}]*)\} (\S+)$`)
	lre := regexp.MustCompile(labels)
	for _, line := range strings.Split(text, "\n") {
		if m := re.FindStringSubmatch(line); m != nil && lre.MatchString(m[1]) {
			return m[2]
		}
	}
	return ""
}
