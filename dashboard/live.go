package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
)

// keepAlive is how often an idle event stream sends a comment, so proxies
// keep it open.
const keepAlive = 15 * time.Second

// events is the live-refresh stream: every RefreshInterval it reads the
// store's maintained counts, Queue settings, schedules and the newest
// audit entry, and sends an "refresh" event when any of them changed. The
// page's script then fetches its own live region again; the event carries
// no data of its own.
func (s *server) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ctx := r.Context()
	last, err := s.sharedFingerprint(ctx)
	if err != nil {
		s.log.WarnContext(ctx, "dashboard: live refresh", "err", err)
	}
	// A browser reconnecting on its own sends the id of the last event it
	// saw: a change while it was away is announced at once.
	event := "ready"
	if seen := r.Header.Get("Last-Event-ID"); seen != "" && seen != strconv.FormatUint(last, 16) {
		event = "refresh"
	}
	if _, err := fmt.Fprintf(w, "retry: 3000\nid: %x\nevent: %s\ndata: 0\n\n", last, event); err != nil {
		return
	}
	if rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(s.refresh)
	defer tick.Stop()
	idle := time.Now()
	seq := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// A caller whose View was withdrawn stops getting events.
		if !s.allowed(r, permission.View) {
			return
		}
		fp, err := s.sharedFingerprint(ctx)
		if err != nil {
			s.log.WarnContext(ctx, "dashboard: live refresh", "err", err)
			continue
		}
		switch {
		case fp != last:
			last = fp
			seq++
			_, err = fmt.Fprintf(w, "id: %x\nevent: refresh\ndata: %d\n\n", fp, seq)
		case time.Since(idle) >= keepAlive:
			_, err = fmt.Fprint(w, ": keep-alive\n\n")
		default:
			continue
		}
		idle = time.Now()
		if err != nil || rc.Flush() != nil {
			return
		}
	}
}

// sharedFingerprint returns the fingerprint of the store, reading it at
// most once per half RefreshInterval however many pages are open: every
// event stream of the dashboard shares the last reading.
func (s *server) sharedFingerprint(ctx context.Context) (uint64, error) {
	s.live.mu.Lock()
	defer s.live.mu.Unlock()
	if !s.live.at.IsZero() && time.Since(s.live.at) < s.refresh/2 {
		return s.live.fp, nil
	}
	fp, err := s.fingerprint(ctx)
	if err != nil {
		return 0, err
	}
	s.live.fp, s.live.at = fp, time.Now()
	return fp, nil
}

// liveCache is the last store fingerprint, shared by the event streams.
type liveCache struct {
	mu sync.Mutex
	fp uint64
	at time.Time
}

// fingerprint hashes what the live pages show from cheap reads: counts by
// Queue and state (maintained counters), Queue settings and Running
// counts, schedules' last and next occurrences, and the newest audit
// entry.
func (s *server) fingerprint(ctx context.Context) (uint64, error) {
	h := fnv.New64a()
	counts, err := s.reader.CountByQueue(ctx)
	if err != nil {
		return 0, err
	}
	for _, c := range counts {
		fmt.Fprintf(h, "c%q%d=%d;", c.Queue, c.State, c.Count)
	}
	qs, err := s.reader.Queues(ctx)
	if err != nil {
		return 0, err
	}
	for _, q := range qs {
		fmt.Fprintf(h, "q%q%t%d%d;", q.Name, q.Paused, q.Limit, q.Running)
	}
	scs, err := s.reader.Schedules(ctx)
	if err != nil {
		return 0, err
	}
	for _, sc := range scs {
		fmt.Fprintf(h, "s%q%t%d%d%d%d;", sc.Name, sc.Paused, sc.Last.UnixNano(), sc.Next.UnixNano(), sc.LastJob, sc.Revision)
	}
	au, err := s.reader.Audit(ctx, backwave.AuditListParams{PageParams: backwave.PageParams{Limit: 1}})
	if err != nil {
		return 0, err
	}
	for _, e := range au.Items {
		fmt.Fprintf(h, "a%d;", e.ID)
	}
	return h.Sum64(), nil
}

// suggestLimit is how many Tags Tag Suggest offers at once.
const suggestLimit = 20

// suggestion is one Tag Suggest answer: the display form the tagq field
// takes, and the structural parts.
type suggestion struct {
	Display string `json:"display"`
	Key     string `json:"key"`
	Value   string `json:"value"`
}

// suggest answers Tag Suggest as JSON: the stored Tags whose display form
// starts with prefix, case-insensitively, in lexicographic order.
func (s *server) suggest(w http.ResponseWriter, r *http.Request) {
	prefix := r.URL.Query().Get("prefix")
	limit := suggestLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			http.Error(w, "bad request: limit must be a number from 1 to 100", http.StatusBadRequest)
			return
		}
		limit = n
	}
	tags, err := s.reader.TagSuggest(r.Context(), prefix, limit)
	if err != nil {
		status := statusOf(err)
		if status == http.StatusInternalServerError {
			s.log.ErrorContext(r.Context(), "dashboard: tag suggest", "err", err)
			http.Error(w, "the store could not answer", status)
			return
		}
		http.Error(w, err.Error(), status)
		return
	}
	out := make([]suggestion, 0, len(tags))
	for _, t := range tags {
		out = append(out, suggestion{Display: t.String(), Key: t.Key, Value: t.Value})
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		s.log.WarnContext(r.Context(), "dashboard: tag suggest: write", "err", err)
	}
}

// registerBuiltins registers every built-in page and Operator Action.
func (s *server) registerBuiltins() {
	must(s.get("/{$}", "", s.overview))
	must(s.get("/jobs", "", s.jobList))
	must(s.get("/jobs/{id}", "", s.jobDetail))
	must(s.get("/jobs/facet", "", s.jobFacet))
	must(s.get("/jobs/matching", "", s.matchingConfirm))
	must(s.get("/queues", "", s.queues))
	must(s.get("/nodes", "", s.nodes))
	must(s.get("/schedules", "", s.schedules))
	must(s.get("/audit", "", s.audit))
	must(s.get("/enqueue", "", s.enqueueForm))
	must(s.getRaw("/events", s.events))
	must(s.getRaw("/tags/suggest", s.suggest))

	must(s.post("/jobs/{id}/requeue", "", permission.ActionRequeue.Permission(), s.requeue))
	must(s.post("/jobs/{id}/cancel", "", permission.ActionCancel.Permission(), s.cancel))
	must(s.post("/jobs/{id}/reschedule", "", permission.ActionReschedule.Permission(), s.reschedule))
	must(s.post("/jobs/bulk/requeue", "", permission.ActionRequeue.Permission(), s.bulk("requeue", func(r *http.Request, a *backwave.Admin, id backwave.JobID) error {
		_, err := a.Requeue(r.Context(), id)
		return err
	})))
	must(s.post("/jobs/bulk/cancel", "", permission.ActionCancel.Permission(), s.bulk("cancel", func(r *http.Request, a *backwave.Admin, id backwave.JobID) error {
		_, err := a.Cancel(r.Context(), id)
		return err
	})))
	must(s.post("/jobs/bulk/delete", "", permission.ActionDelete.Permission(), s.bulk("delete", func(r *http.Request, a *backwave.Admin, id backwave.JobID) error {
		_, err := a.Delete(r.Context(), id)
		return err
	})))
	must(s.post("/jobs/{id}/delete", "", permission.ActionDelete.Permission(), s.deleteJob))
	must(s.post("/jobs/matching/requeue", "", permission.ActionRequeueMatching.Permission(), s.matching(backwave.BulkRequeue)))
	must(s.post("/jobs/matching/cancel", "", permission.ActionCancelMatching.Permission(), s.matching(backwave.BulkCancel)))
	must(s.post("/jobs/matching/delete", "", permission.ActionDeleteMatching.Permission(), s.matching(backwave.BulkDelete)))
	must(s.post("/queues/pause", "", permission.ActionPauseQueue.Permission(), s.pauseQueue))
	must(s.post("/queues/resume", "", permission.ActionResumeQueue.Permission(), s.resumeQueue))
	must(s.post("/queues/limit", "", permission.ActionSetQueueLimit.Permission(), s.setQueueLimit))
	// The permission table has no Action of its own for the Rate Limit: it
	// is a Queue setting like the Concurrency Limit, under the same gate
	// (PauseQueue), as the CLI's `backwave queues rate` is.
	must(s.post("/queues/rate", "", permission.ActionSetQueueLimit.Permission(), s.setQueueRate))
	must(s.post("/queues/key-limit", "", permission.ActionSetKeyLimit.Permission(), s.setKeyLimit))
	must(s.post("/queues/key-rate", "", permission.ActionSetKeyRate.Permission(), s.setKeyRate))
	must(s.post("/queues/fair", "", permission.ActionSetFairClaim.Permission(), s.setFairClaim))
	must(s.post("/queues/remove", "", permission.ActionRemoveQueue.Permission(), s.removeQueue))
	must(s.post("/schedules/trigger", "", permission.ActionTriggerSchedule.Permission(), s.triggerSchedule))
	must(s.post("/schedules/pause", "", permission.ActionPauseSchedule.Permission(), s.pauseSchedule))
	must(s.post("/schedules/resume", "", permission.ActionResumeSchedule.Permission(), s.resumeSchedule))
	must(s.post("/schedules/remove", "", permission.ActionRemoveSchedule.Permission(), s.removeSchedule))
	must(s.post("/enqueue/job", "", permission.ActionEnqueue.Permission(), s.enqueue))
}

func builtinNav() []navItem {
	return []navItem{
		{Label: "Overview", Path: "/"},
		{Label: "Jobs", Path: "/jobs"},
		{Label: "Queues", Path: "/queues"},
		{Label: "Nodes", Path: "/nodes"},
		{Label: "Recurring Schedules", Path: "/schedules"},
		{Label: "Audit trail", Path: "/audit"},
		{Label: "Enqueue", Path: "/enqueue"},
	}
}
