package mariadb

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobInsertMany inserts every job in one writing transaction and returns
// their ids in input order (store.Inserter).
func (s *Store) JobInsertMany(ctx context.Context, p store.InsertManyParams) ([]job.ID, error) {
	res, err := s.JobInsertManyResults(ctx, p)
	return store.ResultIDs(res), err
}

// JobInsertManyResults is JobInsertMany answering per job
// (store.Inserter): a job whose unique key is held is not inserted and
// answers the holder's id.
func (s *Store) JobInsertManyResults(ctx context.Context, p store.InsertManyParams) ([]store.InsertResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []store.InsertResult
	err := s.write(ctx, "insert", func(w *wtx) error {
		var err error
		out, err = w.insertMany(p, 0)
		return err
	})
	return out, err
}

// insertMany inserts p's jobs in InsertOrder, each a member of Workflow
// workflow unless it is 0, and settles the latches of dependents whose
// existing parents are terminal already.
func (w *wtx) insertMany(p store.InsertManyParams, workflow int64) ([]store.InsertResult, error) {
	if err := w.checkParents(p.Jobs); err != nil {
		return nil, err
	}
	ids := make([]job.ID, len(p.Jobs))
	res := make([]store.InsertResult, len(p.Jobs))
	known := map[string]bool{}
	// A job with no unique key and no parents, outside a Workflow, reads
	// and writes no other row: it is staged and inserted with the others
	// (batch.go); any other job is inserted on its own, after them.
	var b batch
	for _, i := range p.InsertOrder() {
		nj := p.Jobs[i]
		id := job.ID(w.jobSeq + 1)
		if nj.Unique.Key == "" && len(nj.Dependency.Parents) == 0 && workflow == 0 {
			w.jobSeq++
			if err := w.stageNew(&b, p, i, id, known); err != nil {
				return nil, err
			}
			ids[i], res[i] = id, store.InsertResult{ID: id, Inserted: true}
			continue
		}
		if err := w.flush(&b); err != nil {
			return nil, err
		}
		holder, held, err := w.takeUnique(nj.Unique, id)
		if err != nil {
			return nil, err
		}
		if held {
			ids[i], res[i] = holder, store.InsertResult{ID: holder}
			if nj.Unique.Mode.Rewrites() {
				if err := w.rewrite(p, i, holder); err != nil {
					return nil, fmt.Errorf("jobs[%d]: %w", i, err)
				}
				res[i].Replaced = true
			}
			continue
		}
		w.jobSeq++
		payload := nj.Payload
		if p.PayloadFor != nil {
			b, err := p.PayloadFor(i, id)
			if err != nil {
				return nil, fmt.Errorf("jobs[%d]: payload: %w", i, err)
			}
			payload = b
		}
		if !known[nj.Queue] {
			if err := w.knowQueue(nj.Queue); err != nil {
				return nil, err
			}
			known[nj.Queue] = true
		}
		parents := nj.Dependency.ParentIDs(ids)
		r := &jrow{job: job.Job{
			ID: id, WireName: nj.WireName, Queue: nj.Queue, MaxAttempts: nj.MaxAttempts,
			ScheduledAt: nj.Unique.InsertDue(w.now, nj.ScheduledAt).UTC().Truncate(time.Microsecond), CreatedAt: w.now,
			ConcurrencyKey: nj.ConcurrencyKey,
		}, workflow: workflow, depPending: int64(len(parents)), key: nj.ConcurrencyKey}
		if nj.Unique.Scope == store.UniqueWhileLive {
			r.uniqueKey = nj.Unique.Key
		}
		if len(parents) > 0 {
			r.depMode = int64(nj.Dependency.Mode) + 1
		}
		var trace any
		if tc := store.NormalTraceContext(nj.TraceContext); len(tc) > 0 {
			trace = store.EncodeTraceContext(tc)
		}
		if _, err := w.exec(`INSERT INTO backwave_job (id, queue, wire_name, state, max_attempts, scheduled_at, created_at,
			payload, trace_context, unique_key, dep_mode, dep_pending, workflow_id, concurrency_key)
			VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			int64(id), nj.Queue, nj.WireName, nj.MaxAttempts, micros(r.job.ScheduledAt), micros(w.now),
			nullBytes(payload), trace, r.uniqueKey, r.depMode, r.depPending, workflow, nj.ConcurrencyKey); err != nil {
			return nil, fmt.Errorf("jobs[%d]: %w", i, err)
		}
		if err := w.addTags(id, nj.Tags); err != nil {
			return nil, err
		}
		if err := w.link(id, parents); err != nil {
			return nil, err
		}
		ids[i], res[i] = id, store.InsertResult{ID: id, Inserted: true}
		if err := w.move(r, core.InsertState(len(parents)), core.ViaInsert, ""); err != nil {
			return nil, err
		}
		if p.Actor != "" {
			// An operator's enqueue is audited with it.
			if err := w.record(p.Actor, store.AuditEnqueue, id, nj.Queue, store.EnqueueDetail(nj.WireName)); err != nil {
				return nil, err
			}
		}
	}
	if err := w.flush(&b); err != nil {
		return nil, err
	}
	for _, id := range store.ExistingParents(p.Jobs) {
		r, err := w.find(id)
		if err != nil {
			return nil, err
		}
		if r.job.State.Terminal() {
			if err := w.settle(id); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// stageNew stages job i of p, a job with no unique key and no parents
// outside a Workflow, under id: insertMany's steps for it, its rows left
// to b's flush.
func (w *wtx) stageNew(b *batch, p store.InsertManyParams, i int, id job.ID, known map[string]bool) error {
	nj := p.Jobs[i]
	payload := nj.Payload
	if p.PayloadFor != nil {
		pb, err := p.PayloadFor(i, id)
		if err != nil {
			return fmt.Errorf("jobs[%d]: payload: %w", i, err)
		}
		payload = pb
	}
	if !known[nj.Queue] {
		if err := w.knowQueue(nj.Queue); err != nil {
			return err
		}
		known[nj.Queue] = true
	}
	r := &jrow{job: job.Job{
		ID: id, WireName: nj.WireName, Queue: nj.Queue, MaxAttempts: nj.MaxAttempts,
		ScheduledAt: nj.Unique.InsertDue(w.now, nj.ScheduledAt).UTC().Truncate(time.Microsecond), CreatedAt: w.now,
		ConcurrencyKey: nj.ConcurrencyKey,
	}, key: nj.ConcurrencyKey}
	var trace any
	if tc := store.NormalTraceContext(nj.TraceContext); len(tc) > 0 {
		trace = store.EncodeTraceContext(tc)
	}
	for _, t := range job.NormalizeTags(nj.Tags) {
		b.tags = append(b.tags, jobTag{int64(id), t})
	}
	e := core.Edge{From: job.StateUnknown, To: core.InsertState(0), Via: core.ViaInsert}
	if err := w.apply(r, e, core.TerminalCauseAfter(e, 0)); err != nil {
		return err
	}
	b.fresh = append(b.fresh, freshJob{r: r, payload: payload, trace: trace})
	w.stageLog(b, r, e, "")
	if p.Actor != "" {
		// An operator's enqueue is audited with it.
		if err := w.record(p.Actor, store.AuditEnqueue, id, nj.Queue, store.EnqueueDetail(nj.WireName)); err != nil {
			return err
		}
	}
	return nil
}

// checkParents fails with store.ErrUnknownParent if an Existing parent is
// not stored. It reads with a locking read so that it sees the newest
// committed rows inside an application's transaction too.
func (w *wtx) checkParents(jobs []store.NewJob) error {
	want := store.ExistingParents(jobs)
	if len(want) == 0 {
		return nil
	}
	var b strings.Builder
	args := make([]any, len(want))
	b.WriteString(`SELECT id FROM backwave_job WHERE id IN (`)
	for i, id := range want {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('?')
		args[i] = int64(id)
	}
	b.WriteString(`) LOCK IN SHARE MODE`)
	rows, err := w.query(b.String(), args...)
	if err != nil {
		return fmt.Errorf("read parents: %w", err)
	}
	have := map[job.ID]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			_ = rows.Close()
			return fmt.Errorf("read parents: %w", err)
		}
		have[job.ID(id)] = true
	}
	_ = rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read parents: %w", err)
	}
	var missing []job.ID
	for _, id := range want {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %w: no job %v", store.ErrInvalidParams, store.ErrUnknownParent, missing)
	}
	return nil
}

// takeUnique takes u's key for job id, if u names one: the unique index
// decides (an INSERT IGNORE that inserts nothing found the key held), and
// a UniquePeriod hold whose Period ran out is taken over. It answers the
// holder when the key is held.
func (w *wtx) takeUnique(u store.Unique, id job.ID) (job.ID, bool, error) {
	if u.Key == "" {
		return 0, false, nil
	}
	var until int64
	if u.Scope == store.UniquePeriod {
		until = micros(w.now.Add(u.Period))
	}
	res, err := w.exec(`INSERT IGNORE INTO backwave_unique (ukey, job_id, until_at) VALUES (?, ?, ?)`, u.Key, int64(id), until)
	if err != nil {
		return 0, false, fmt.Errorf("unique key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return 0, false, nil
	}
	res, err = w.exec(`UPDATE backwave_unique SET job_id = ?, until_at = ? WHERE ukey = ? AND until_at <> 0 AND until_at <= ?`,
		int64(id), until, u.Key, micros(w.now))
	if err != nil {
		return 0, false, fmt.Errorf("unique key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return 0, false, nil
	}
	var holder int64
	if err := w.row(`SELECT job_id FROM backwave_unique WHERE ukey = ?`, u.Key).Scan(&holder); err != nil {
		return 0, false, fmt.Errorf("unique key holder: %w", err)
	}
	return job.ID(holder), true, nil
}

// rewrite gives holder, the job holding job i's unique key, job i's payload
// and Tags and the due time its mode decides (store.Unique.RewriteDue),
// and records the rewrite in the audit trail, under the store's write
// lock. A holder that is not Scheduled is store.ErrHolderNotPending, and
// the transaction is rolled back (a caller's own must be).
func (w *wtx) rewrite(p store.InsertManyParams, i int, holder job.ID) error {
	nj := p.Jobs[i]
	r, err := w.load(holder)
	switch {
	case err != nil:
		return err
	case r == nil:
		return fmt.Errorf("%w: unique key %q is held by job %d, which is purged", store.ErrHolderNotPending, nj.Unique.Key, holder)
	case r.job.State != job.StateScheduled:
		return fmt.Errorf("%w: unique key %q is held by job %d, which is %s", store.ErrHolderNotPending, nj.Unique.Key, holder, r.job.State)
	}
	payload := nj.Payload
	if p.PayloadFor != nil {
		if payload, err = p.PayloadFor(i, holder); err != nil {
			return fmt.Errorf("payload: %w", err)
		}
	}
	due := nj.Unique.RewriteDue(w.now, r.job.CreatedAt, nj.ScheduledAt).UTC().Truncate(time.Microsecond)
	if _, err := w.exec(`UPDATE backwave_job SET payload = ?, scheduled_at = ? WHERE id = ?`, nullBytes(payload), micros(due), int64(holder)); err != nil {
		return fmt.Errorf("rewrite job %d: %w", holder, err)
	}
	if _, err := w.exec(`DELETE FROM backwave_job_tag WHERE job_id = ?`, int64(holder)); err != nil {
		return fmt.Errorf("rewrite job %d: tags: %w", holder, err)
	}
	if err := w.addTags(holder, nj.Tags); err != nil {
		return err
	}
	return w.record(store.ActorSystem, store.RewriteAction(nj.Unique.Mode), holder, r.job.Queue, store.RewriteDetail(nj.Unique.Key, due))
}

// releaseUnique frees r's while-live key as r first ends terminal.
func (w *wtx) releaseUnique(r *jrow) error {
	if _, err := w.exec(`DELETE FROM backwave_unique WHERE ukey = ? AND job_id = ? AND until_at = 0`, r.uniqueKey, int64(r.job.ID)); err != nil {
		return fmt.Errorf("job %d: release unique key: %w", r.job.ID, err)
	}
	r.uniqueKey = ""
	return nil
}

// cloneBytes copies b, keeping nil nil.
func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}
