package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// jrow is one job row as a writing transaction reads and rewrites it.
type jrow struct {
	job       job.Job
	uniqueKey string
	// depMode is the Dependency Mode code plus one; 0: no parents.
	depMode    int64
	depPending int64
	workflow   int64
	schedule   string
	hasOutput  bool
	// key is the job's Concurrency Key; '' for none.
	key string
	// read are the row's values of saveCols as read (saveMany writes only
	// what changed); nil for a row not read.
	read []any
}

// jobCols are the columns scanJob reads, in its order.
const jobCols = `j.id, j.queue, j.wire_name, j.state, j.attempt, j.attempt_base, j.max_attempts, j.scheduled_at,
	j.created_at, j.finalized_at, j.retry_cause, j.cancel_cause, j.worker, j.lease_expires_at, j.cancel_requested,
	j.payload, j.trace_context, j.progress_attempt, j.progress_fraction, j.progress_note, j.progress_at,
	j.unique_key, j.dep_mode, j.dep_pending, j.workflow_id, j.schedule_name, j.output IS NOT NULL, j.snoozes,
	j.cursor_attempt, j.cursor_value, j.cursor_at, j.concurrency_key, j.terminal_cause`

type scanner interface{ Scan(dest ...any) error }

// scanJob reads one row of jobCols.
func scanJob(sc scanner) (*jrow, error) {
	var (
		r                                                   jrow
		id, attempt, base, maxA, sched, created, fin, lease int64
		state, rc, cc                                       int64
		queue, wire, worker, ukey, schedName                string
		cancelReq                                           bool
		payload                                             []byte
		trace                                               sql.NullString
		pAttempt, pAt                                       sql.NullInt64
		pFrac                                               sql.NullFloat64
		pNote, terminal                                     sql.NullString
		cAttempt, cAt                                       sql.NullInt64
		cValue                                              []byte
	)
	if err := sc.Scan(&id, &queue, &wire, &state, &attempt, &base, &maxA, &sched, &created, &fin, &rc, &cc,
		&worker, &lease, &cancelReq, &payload, &trace, &pAttempt, &pFrac, &pNote, &pAt,
		&ukey, &r.depMode, &r.depPending, &r.workflow, &schedName, &r.hasOutput, &r.job.Snoozes,
		&cAttempt, &cValue, &cAt, &r.key, &terminal); err != nil {
		return nil, err
	}
	j := &r.job
	j.ID, j.Queue, j.WireName = job.ID(id), queue, wire
	var err error
	if j.State, err = decode(stateCodes, "state", state); err != nil {
		return nil, err
	}
	if j.RetryCause, err = decode(retryCauseCodes, "retry cause", rc); err != nil {
		return nil, err
	}
	if j.CancelCause, err = decode(cancelCauseCodes, "cancel cause", cc); err != nil {
		return nil, err
	}
	if j.TerminalCause, err = job.ParseTerminalCause(terminal.String); err != nil {
		return nil, fmt.Errorf("job %d: %w", id, err)
	}
	j.Attempt, j.AttemptBase, j.MaxAttempts = job.Attempt(attempt), job.Attempt(base), int(maxA)
	j.ScheduledAt, j.CreatedAt = fromMicros(sched), fromMicros(created)
	if fin != 0 {
		j.FinalizedAt = fromMicros(fin)
	}
	if lease != 0 {
		j.LeaseExpiresAt = fromMicros(lease)
	}
	j.Worker, j.CancelRequested = job.WorkerID(worker), cancelReq
	if len(payload) > 0 {
		j.Payload = payload
	}
	if trace.Valid && trace.String != "" {
		if j.TraceContext, err = store.DecodeTraceContext(trace.String); err != nil {
			return nil, fmt.Errorf("job %d: trace context: %w", id, err)
		}
	}
	if pAttempt.Valid {
		j.Progress = &job.Progress{Attempt: job.Attempt(pAttempt.Int64), Fraction: pFrac.Float64, Note: pNote.String, At: fromMicros(pAt.Int64)}
	}
	j.Cursor = cursorOf(cAttempt, cValue, cAt)
	r.uniqueKey, r.schedule = ukey, schedName
	j.ConcurrencyKey = r.key
	r.read = saveArgs(make([]any, 0, len(saveCols)), &r)
	return &r, nil
}

// load reads job id, or nil if there is none.
func (w *wtx) load(id job.ID) (*jrow, error) {
	r, err := scanJob(w.row(`SELECT `+jobCols+` FROM backwave_job j WHERE j.id = ?`, int64(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read job %d: %w", id, err)
	}
	return r, nil
}

// find reads job id or fails with store.ErrNotFound.
func (w *wtx) find(id job.ID) (*jrow, error) {
	r, err := w.load(id)
	if err == nil && r == nil {
		err = fmt.Errorf("job %d: %w", id, store.ErrNotFound)
	}
	return r, err
}

// held returns the job the Lease names if it is still Running under worker
// at exactly that Attempt — the fence every worker write passes — or nil.
func (w *wtx) held(worker job.WorkerID, l job.Lease) (*jrow, error) {
	r, err := w.load(l.ID)
	if err != nil || !holds(r, worker, l) {
		return nil, err
	}
	return r, nil
}

// holds reports whether r, a job as read (nil for none), is Running under
// worker at exactly l's Attempt: the fence every worker write passes.
func holds(r *jrow, worker job.WorkerID, l job.Lease) bool {
	return r != nil && r.job.State == job.StateRunning && r.job.Worker == worker && r.job.Attempt == l.Attempt
}

// save rewrites the job's mutable columns (saveCols).
func (w *wtx) save(r *jrow) error {
	if _, err := w.exec(saveSQL, append(saveArgs(make([]any, 0, len(saveCols)+1), r), int64(r.job.ID))...); err != nil {
		return fmt.Errorf("write job %d: %w", r.job.ID, err)
	}
	return nil
}

// saveSQL is save's statement.
var saveSQL = `UPDATE backwave_job SET ` + strings.Join(saveCols, ` = ?, `) + ` = ? WHERE id = ?`

// move applies one state change to r along the edge (r's state → to, via)
// and saves r: it keeps the Queue's Running count and the Monitor's counts,
// clears the Lease when the job leaves Running, applies the Retry Cause
// rule and the Terminal Cause rule (core.TerminalCauseAfter), stamps FinalizedAt on a terminal state, releases a while-live
// unique key, appends the Transition Log entry and, for a terminal state,
// settles the job's dependents' latches. Callers set the Attempt, due time,
// Lease and cancel cause the edge needs before calling; they set the Lease
// of a claim after, and save again.
func (w *wtx) move(r *jrow, to job.State, via core.Via, detail string) error {
	e := core.Edge{From: r.job.State, To: to, Via: via}
	return w.moveCaused(r, e, core.TerminalCauseAfter(e, 0), detail)
}

// moveCaused is move along e with the job's Terminal Cause set to cause:
// an applied outcome's (core.Decide), or core.TerminalCauseAfter's for an
// edge no Result ends.
func (w *wtx) moveCaused(r *jrow, e core.Edge, cause job.TerminalCause, detail string) error {
	if err := w.apply(r, e, cause); err != nil {
		return err
	}
	if err := w.save(r); err != nil {
		return err
	}
	if w.s.opts.History.Records() {
		if err := w.log(r, e, detail); err != nil {
			return err
		}
	}
	if e.To.Terminal() {
		return w.settle(r.job.ID)
	}
	return nil
}

// log appends the Transition Log entry of edge e to r's log under the next
// sequence number, trimming the log to store.TransitionLogCap entries
// (past the entries a live Transition Observer still awaits).
func (w *wtx) log(r *jrow, e core.Edge, detail string) error {
	var n int
	if err := w.row(`SELECT COUNT(*) FROM backwave_transition WHERE job_id = ?`, int64(r.job.ID)).Scan(&n); err != nil {
		return fmt.Errorf("job %d: count transitions: %w", r.job.ID, err)
	}
	if n >= store.TransitionLogCap {
		floor, err := w.observedFloor()
		if err != nil {
			return err
		}
		if _, err := w.exec(`DELETE FROM backwave_transition WHERE job_id = ? AND seq <= ? ORDER BY seq LIMIT ?`,
			int64(r.job.ID), floor, n-store.TransitionLogCap+1); err != nil {
			return fmt.Errorf("job %d: trim transitions: %w", r.job.ID, err)
		}
	}
	w.seq++
	_, err := w.exec(`INSERT INTO backwave_transition (seq, job_id, at, from_state, state, via, attempt, failure_detail)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, w.seq, int64(r.job.ID), micros(w.now), stateCode(e.From), stateCode(e.To),
		viaCode(e.Via), int64(r.job.Attempt), nullString(w.s.opts.History.Detail(detail)))
	if err != nil {
		return fmt.Errorf("job %d: record transition: %w", r.job.ID, err)
	}
	return nil
}

// observedFloor is the lowest cursor of a live Transition Observer
// registration; math.MaxInt64 when none is live.
func (w *wtx) observedFloor() (int64, error) {
	var floor sql.NullInt64
	if err := w.row(`SELECT MIN(cursor_seq) FROM backwave_observer WHERE seen_at > ?`,
		micros(w.now.Add(-store.ObserverRemoveAfter))).Scan(&floor); err != nil {
		return 0, fmt.Errorf("read the observers' floor: %w", err)
	}
	if !floor.Valid {
		return math.MaxInt64, nil
	}
	return floor.Int64, nil
}

// knowQueue makes the Queue known.
func (w *wtx) knowQueue(name string) error {
	if _, err := w.exec(`INSERT IGNORE INTO backwave_queue (name) VALUES (?)`, name); err != nil {
		return fmt.Errorf("queue %q: %w", name, err)
	}
	return nil
}

// addTags merges tags into job id's set.
func (w *wtx) addTags(id job.ID, tags []job.Tag) error {
	tags = job.NormalizeTags(tags)
	if len(tags) == 0 {
		return nil
	}
	var b strings.Builder
	args := make([]any, 0, 3*len(tags))
	b.WriteString(`INSERT IGNORE INTO backwave_job_tag (job_id, k, v) VALUES `)
	for i, t := range tags {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?)")
		args = append(args, int64(id), t.Key, t.Value)
	}
	if _, err := w.exec(b.String(), args...); err != nil {
		return fmt.Errorf("job %d: tags: %w", id, err)
	}
	return nil
}

// record appends an audit record of an Operator Action.
func (w *wtx) record(a store.Actor, action store.AuditAction, id job.ID, queue, detail string) error {
	_, err := w.exec(`INSERT INTO backwave_audit (at, actor, action, job_id, queue, detail) VALUES (?, ?, ?, ?, ?, ?)`,
		micros(w.now), string(a.OrSystem()), action.String(), int64(id), queue, detail)
	if err != nil {
		return fmt.Errorf("record the audit entry: %w", err)
	}
	return nil
}

// loadTags reads the Tags of the jobs in rows, in canonical order.
func loadTags(q querier, ctx context.Context, jobs []job.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	index := make(map[int64]int, len(jobs))
	var b strings.Builder
	args := make([]any, 0, len(jobs))
	b.WriteString(`SELECT job_id, k, v FROM backwave_job_tag WHERE job_id IN (`)
	for i, j := range jobs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('?')
		args = append(args, int64(j.ID))
		index[int64(j.ID)] = i
	}
	b.WriteString(`)`)
	rows, err := q.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return fmt.Errorf("read tags: %w", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var id int64
		var t job.Tag
		if err := rows.Scan(&id, &t.Key, &t.Value); err != nil {
			return fmt.Errorf("read tags: %w", err)
		}
		i := index[id]
		jobs[i].Tags = append(jobs[i].Tags, t)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read tags: %w", err)
	}
	for i := range jobs {
		slices.SortFunc(jobs[i].Tags, job.CompareTags)
	}
	return nil
}
