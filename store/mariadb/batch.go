package mariadb

import (
	"fmt"
	"strings"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// The hot path in sets. A claim, an outcome report, a renewal, an insert,
// a lease expiry sweep and a Relinquish each touch a batch of jobs while
// the transaction holds the writer row, so their cost is the round trips
// they make under it. They read the batch's rows in one statement
// (loadMany), decide every job's change in memory exactly as move does
// (apply), and write what they decided in a few statements a batch (a
// batch's flush): one multi-row INSERT of new jobs, one of their Tags, one
// UPDATE of the changed rows (saveMany) and one multi-row INSERT of the
// Transition Log entries, with one count of the logs that reach the cap. A
// job whose change reads or writes other job rows — a terminal job with
// uncounted dependents, a job with a unique key or parents at insert, a
// Workflow member at insert — goes the row-at-a-time way, after the batch
// so far is flushed, so every statement sees the rows as the row-at-a-time
// code would and the Transition Log's entries keep their order.

// batchRows is the most rows one statement of a flush writes.
const batchRows = 500

// batchBytes bounds the payload bytes of one multi-row job INSERT, well
// inside the server's max_allowed_packet.
const batchBytes = 4 << 20

// batch is the writes staged by stage and newJob, written by flush.
type batch struct {
	// fresh are new jobs, inserted with the state apply gave them.
	fresh []freshJob
	// tags are Tags to add: the new jobs', an outcome's Tag delta.
	tags []jobTag
	// outputs are Job Outputs of succeeded jobs.
	outputs []jobOutput
	// rows are stored jobs to rewrite (saveMany).
	rows []*jrow
	// logs are the Transition Log entries, in sequence order.
	logs []logRow
	// known are the jobs whose entries count towards the log cap; fresh
	// jobs have none stored.
	known []int64
}

type freshJob struct {
	r       *jrow
	payload []byte
	trace   any
}

type jobTag struct {
	id int64
	t  job.Tag
}

type jobOutput struct {
	id     int64
	output []byte
}

type logRow struct {
	seq, id, attempt int64
	from, to, via    int64
	detail           any
}

// apply is the part of moveCaused that writes no job row: the edge's
// check, the counts, the Workflow's counts, the job's state, causes and
// finalization, the release of a while-live unique key and the hint.
func (w *wtx) apply(r *jrow, e core.Edge, cause job.TerminalCause) error {
	to := e.To
	if !core.Legal(e) {
		return fmt.Errorf("job %d: illegal state edge %s", r.job.ID, e)
	}
	j := &r.job
	if e.From == job.StateRunning {
		j.Worker, j.LeaseExpiresAt = "", time.Time{}
		w.running[j.Queue]--
	}
	if to == job.StateRunning {
		w.running[j.Queue]++
	}
	if e.From != job.StateUnknown {
		w.counts[countKey{j.Queue, stateCode(e.From)}]--
	}
	w.counts[countKey{j.Queue, stateCode(to)}]++
	if r.key != "" {
		if e.From != job.StateUnknown {
			w.keyCounts[keyCountKey{j.Queue, r.key, stateCode(e.From)}]--
		}
		w.keyCounts[keyCountKey{j.Queue, r.key, stateCode(to)}]++
	}
	if r.workflow != 0 {
		if err := w.countMember(r.workflow, e.From, to); err != nil {
			return err
		}
	}
	j.State = to
	j.RetryCause = core.RetryCauseAfter(e, j.RetryCause)
	j.TerminalCause = cause
	if to.Terminal() {
		j.FinalizedAt = w.now
		if r.uniqueKey != "" {
			if err := w.releaseUnique(r); err != nil {
				return err
			}
		}
	}
	if to == job.StateScheduled && !j.ScheduledAt.After(w.now) {
		w.hint(j.Queue)
	}
	return nil
}

// stage is moveCaused for a stored job with no uncounted dependents,
// its row and its Transition Log entry left to b's flush.
func (w *wtx) stage(b *batch, r *jrow, e core.Edge, cause job.TerminalCause, detail string) error {
	if err := w.apply(r, e, cause); err != nil {
		return err
	}
	b.rows = append(b.rows, r)
	b.known = append(b.known, int64(r.job.ID))
	w.stageLog(b, r, e, detail)
	return nil
}

// stageLog allocates the next sequence number to r's entry for edge e.
func (w *wtx) stageLog(b *batch, r *jrow, e core.Edge, detail string) {
	if !w.s.opts.History.Records() {
		return
	}
	w.seq++
	b.logs = append(b.logs, logRow{seq: w.seq, id: int64(r.job.ID), attempt: int64(r.job.Attempt),
		from: stateCode(e.From), to: stateCode(e.To), via: viaCode(e.Via), detail: nullString(w.s.opts.History.Detail(detail))})
}

// flush writes what b staged and empties it.
func (w *wtx) flush(b *batch) error {
	if err := w.insertFresh(b.fresh); err != nil {
		return err
	}
	if err := w.insertTags(b.tags); err != nil {
		return err
	}
	if err := w.saveMany(b.rows); err != nil {
		return err
	}
	if err := w.writeOutputs(b.outputs); err != nil {
		return err
	}
	if err := w.trimLogs(b.known); err != nil {
		return err
	}
	if err := w.insertLogs(b.logs); err != nil {
		return err
	}
	*b = batch{}
	return nil
}

// chunked calls fn on consecutive pieces of n items of at most batchRows
// each.
func chunked(n int, fn func(lo, hi int) error) error {
	for lo := 0; lo < n; lo += batchRows {
		if err := fn(lo, min(lo+batchRows, n)); err != nil {
			return err
		}
	}
	return nil
}

// loadMany reads the jobs ids names, by id; an id with no job is absent.
func (w *wtx) loadMany(ids []int64) (map[int64]*jrow, error) {
	out := make(map[int64]*jrow, len(ids))
	err := chunked(len(ids), func(lo, hi int) error {
		var b strings.Builder
		b.WriteString(`SELECT ` + jobCols + ` FROM backwave_job j WHERE j.id IN `)
		args := inList(&b, make([]any, 0, hi-lo), ids[lo:hi])
		return w.scanJobs(out, b.String(), args...)
	})
	return out, err
}

// scanJobs reads the jobs a query of jobCols answers into out.
func (w *wtx) scanJobs(out map[int64]*jrow, q string, args ...any) error {
	rows, err := w.query(q, args...)
	if err != nil {
		return fmt.Errorf("read jobs: %w", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		r, err := scanJob(rows)
		if err != nil {
			return fmt.Errorf("read jobs: %w", err)
		}
		out[int64(r.job.ID)] = r
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read jobs: %w", err)
	}
	return nil
}

// withDependents is the jobs among ids with a dependent whose edge is not
// counted yet: the ones whose end settle must see.
func (w *wtx) withDependents(ids []int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	err := chunked(len(ids), func(lo, hi int) error {
		var b strings.Builder
		b.WriteString(`SELECT DISTINCT parent FROM backwave_job_edge WHERE counted = 0 AND parent IN `)
		args := inList(&b, make([]any, 0, hi-lo), ids[lo:hi])
		parents, err := w.ids(b.String(), args...)
		if err != nil {
			return fmt.Errorf("read dependents: %w", err)
		}
		for _, p := range parents {
			out[p] = true
		}
		return nil
	})
	return out, err
}

// saveCols are the columns save rewrites, in saveArgs' order.
var saveCols = []string{"state", "attempt", "attempt_base", "scheduled_at", "finalized_at",
	"retry_cause", "cancel_cause", "worker", "lease_expires_at", "cancel_requested",
	"progress_attempt", "progress_fraction", "progress_note", "progress_at",
	"unique_key", "dep_pending", "snoozes", "terminal_cause"}

// saveArgs are r's values of saveCols.
func saveArgs(args []any, r *jrow) []any {
	j := &r.job
	var fin, lease int64
	if !j.FinalizedAt.IsZero() {
		fin = micros(j.FinalizedAt)
	}
	if !j.LeaseExpiresAt.IsZero() {
		lease = micros(j.LeaseExpiresAt)
	}
	var pAttempt, pAt, pFrac, pNote any
	if p := j.Progress; p != nil {
		pAttempt, pFrac, pNote, pAt = int64(p.Attempt), p.Fraction, p.Note, micros(p.At)
	}
	return append(args,
		stateCode(j.State), int64(j.Attempt), int64(j.AttemptBase), micros(j.ScheduledAt), fin,
		encode(retryCauseCodes, j.RetryCause), encode(cancelCauseCodes, j.CancelCause), string(j.Worker), lease, j.CancelRequested,
		pAttempt, pFrac, pNote, pAt, r.uniqueKey, r.depPending, j.Snoozes, nullString(j.TerminalCause.String()))
}

// saveMany is save for every row, in one UPDATE of up to batchRows rows
// that sets only the columns some row changed since it was read: a column
// every row gives one value is set to it, any other is a CASE on the id
// over the rows that changed it.
func (w *wtx) saveMany(rows []*jrow) error {
	if len(rows) == 1 {
		return w.save(rows[0])
	}
	return chunked(len(rows), func(lo, hi int) error {
		part := rows[lo:hi]
		now := make([][]any, len(part))
		for i, r := range part {
			now[i] = saveArgs(make([]any, 0, len(saveCols)), r)
		}
		var b strings.Builder
		var args []any
		b.WriteString(`UPDATE backwave_job SET `)
		set := 0
		for c, col := range saveCols {
			var changed []int
			uniform := true
			for i, r := range part {
				if r.read == nil || now[i][c] != r.read[c] {
					changed = append(changed, i)
				}
				uniform = uniform && now[i][c] == now[0][c]
			}
			if len(changed) == 0 {
				continue
			}
			if set > 0 {
				b.WriteString(`, `)
			}
			set++
			if uniform {
				b.WriteString(col + ` = ?`)
				args = append(args, now[0][c])
				continue
			}
			b.WriteString(col + ` = CASE id`)
			for _, i := range changed {
				b.WriteString(` WHEN ? THEN ?`)
				args = append(args, int64(part[i].job.ID), now[i][c])
			}
			b.WriteString(` ELSE ` + col + ` END`)
		}
		if set == 0 {
			return nil
		}
		b.WriteString(` WHERE id IN `)
		ids := make([]int64, len(part))
		for i, r := range part {
			ids[i] = int64(r.job.ID)
		}
		args = inList(&b, args, ids)
		if _, err := w.exec(b.String(), args...); err != nil {
			return fmt.Errorf("write %d jobs: %w", len(part), err)
		}
		return nil
	})
}

// sized calls fn on consecutive pieces of n items of at most batchRows
// each and, but for a piece of one item, at most batchBytes in all, item
// i being size(i) bytes.
func sized(n int, size func(i int) int, fn func(lo, hi int) error) error {
	for lo := 0; lo < n; {
		hi, total := lo, 0
		for hi < n && hi-lo < batchRows && (hi == lo || total+size(hi) <= batchBytes) {
			total += size(hi)
			hi++
		}
		if err := fn(lo, hi); err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

// writeOutputs stores the Job Outputs, one UPDATE a piece.
func (w *wtx) writeOutputs(outputs []jobOutput) error {
	return sized(len(outputs), func(i int) int { return len(outputs[i].output) }, func(lo, hi int) error {
		if hi-lo == 1 {
			o := outputs[lo]
			if _, err := w.exec(`UPDATE backwave_job SET output = ? WHERE id = ?`, o.output, o.id); err != nil {
				return fmt.Errorf("job %d: output: %w", o.id, err)
			}
			return nil
		}
		var b strings.Builder
		args := make([]any, 0, 3*(hi-lo))
		b.WriteString(`UPDATE backwave_job SET output = CASE id`)
		ids := make([]int64, 0, hi-lo)
		for _, o := range outputs[lo:hi] {
			b.WriteString(` WHEN ? THEN ?`)
			args = append(args, o.id, o.output)
			ids = append(ids, o.id)
		}
		b.WriteString(` ELSE output END WHERE id IN `)
		args = inList(&b, args, ids)
		if _, err := w.exec(b.String(), args...); err != nil {
			return fmt.Errorf("output of %d jobs: %w", hi-lo, err)
		}
		return nil
	})
}

// insertFresh inserts the new jobs with their columns as apply left them.
func (w *wtx) insertFresh(fresh []freshJob) error {
	return sized(len(fresh), func(i int) int { return len(fresh[i].payload) }, func(lo, hi int) error {
		var b strings.Builder
		args := make([]any, 0, (hi-lo)*(len(saveCols)+12))
		b.WriteString(`INSERT INTO backwave_job (id, queue, wire_name, max_attempts, created_at, payload, trace_context,
			dep_mode, workflow_id, concurrency_key, ` + strings.Join(saveCols, ", ") + `) VALUES `)
		row := `(?` + strings.Repeat(`, ?`, 9+len(saveCols)) + `)`
		for i, f := range fresh[lo:hi] {
			if i > 0 {
				b.WriteString(`, `)
			}
			b.WriteString(row)
			j := &f.r.job
			args = append(args, int64(j.ID), j.Queue, j.WireName, j.MaxAttempts, micros(j.CreatedAt), nullBytes(f.payload), f.trace,
				f.r.depMode, f.r.workflow, f.r.key)
			args = saveArgs(args, f.r)
		}
		if _, err := w.exec(b.String(), args...); err != nil {
			return fmt.Errorf("insert %d jobs: %w", hi-lo, err)
		}
		return nil
	})
}

// insertTags adds the Tags, each (job, key, value) once.
func (w *wtx) insertTags(tags []jobTag) error {
	return chunked(len(tags), func(lo, hi int) error {
		var b strings.Builder
		args := make([]any, 0, 3*(hi-lo))
		b.WriteString(`INSERT IGNORE INTO backwave_job_tag (job_id, k, v) VALUES `)
		for i, t := range tags[lo:hi] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?)")
			args = append(args, t.id, t.t.Key, t.t.Value)
		}
		if _, err := w.exec(b.String(), args...); err != nil {
			return fmt.Errorf("tags of %d jobs: %w", hi-lo, err)
		}
		return nil
	})
}

// trimLogs makes room for one more entry in the log of each of ids that
// holds store.TransitionLogCap entries already, as log does; ids name
// distinct jobs.
func (w *wtx) trimLogs(ids []int64) error {
	if !w.s.opts.History.Records() {
		return nil
	}
	type full struct{ id, n int64 }
	var trim []full
	err := chunked(len(ids), func(lo, hi int) error {
		var b strings.Builder
		b.WriteString(`SELECT job_id, COUNT(*) FROM backwave_transition WHERE job_id IN `)
		args := inList(&b, make([]any, 0, hi-lo+1), ids[lo:hi])
		b.WriteString(` GROUP BY job_id HAVING COUNT(*) >= ?`)
		args = append(args, store.TransitionLogCap)
		rows, err := w.query(b.String(), args...)
		if err != nil {
			return fmt.Errorf("count transitions: %w", err)
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var f full
			if err := rows.Scan(&f.id, &f.n); err != nil {
				return fmt.Errorf("count transitions: %w", err)
			}
			trim = append(trim, f)
		}
		return rows.Err()
	})
	if err != nil || len(trim) == 0 {
		return err
	}
	floor, err := w.observedFloor()
	if err != nil {
		return err
	}
	for _, f := range trim {
		if _, err := w.exec(`DELETE FROM backwave_transition WHERE job_id = ? AND seq <= ? ORDER BY seq LIMIT ?`,
			f.id, floor, f.n-store.TransitionLogCap+1); err != nil {
			return fmt.Errorf("job %d: trim transitions: %w", f.id, err)
		}
	}
	return nil
}

// insertLogs appends the staged Transition Log entries.
func (w *wtx) insertLogs(logs []logRow) error {
	return chunked(len(logs), func(lo, hi int) error {
		var b strings.Builder
		args := make([]any, 0, 8*(hi-lo))
		b.WriteString(`INSERT INTO backwave_transition (seq, job_id, at, from_state, state, via, attempt, failure_detail) VALUES `)
		at := micros(w.now)
		for i, l := range logs[lo:hi] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, l.seq, l.id, at, l.from, l.to, l.via, l.attempt, l.detail)
		}
		if _, err := w.exec(b.String(), args...); err != nil {
			return fmt.Errorf("record %d transitions: %w", hi-lo, err)
		}
		return nil
	})
}

// distinct reports whether ids holds no id twice.
func distinct(ids []int64) bool {
	seen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			return false
		}
		seen[id] = true
	}
	return true
}
