package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobInsertMany is JobInsertManyResults returning only the ids: a job whose
// unique key was held has the holder's id.
func (s *Store) JobInsertMany(ctx context.Context, p store.InsertManyParams) ([]job.ID, error) {
	res, err := s.JobInsertManyResults(ctx, p)
	return store.ResultIDs(res), err
}

// JobInsertManyResults inserts every job in one write transaction,
// Scheduled, and answers per job in input order. Ids come from an
// AUTOINCREMENT column, so one is never reused even after its job is
// deleted. A job whose unique key is held is not inserted and answers the
// holder's id (unique.go). A zero ScheduledAt means due at the store's now.
// Tags are stored as a set. Invalid params insert nothing and wrap
// store.ErrInvalidParams. After the commit, subscribers hear a Wake-Up Hint
// for every Queue that got a job due now.
func (s *Store) JobInsertManyResults(ctx context.Context, p store.InsertManyParams) ([]store.InsertResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(p.Jobs) == 0 {
		return []store.InsertResult{}, s.ready(ctx)
	}
	var res []store.InsertResult
	var due []string
	err := s.write(ctx, "insert jobs", func(tx *sql.Tx) error {
		var err error
		res, due, err = s.insertResults(ctx, tx, true, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.hints.Announce(due)
	return res, nil
}

// insert is insertResults returning only the ids.
func (s *Store) insert(ctx context.Context, tx *sql.Tx, own bool, p store.InsertManyParams) ([]job.ID, []string, error) {
	res, due, err := s.insertResults(ctx, tx, own, p)
	return store.ResultIDs(res), due, err
}

// insertJobs writes the jobs in tx, in p.InsertOrder() (every in-batch
// parent before its dependents, so ids follow), and answers per job in
// input order, with the Queues that got a job due now, sorted. own tells
// whether tx is one of the store's own write transactions. A batch without
// Dependencies or unique keys goes set-based (insertFlat); otherwise the
// jobs go one by one through prepared statements: a job with a unique key
// first takes it (takeUnique) and is skipped if it is held, a job with
// parents is inserted Awaiting Parent with its edges, then every parent
// already terminal is counted against its latch (settle).
func (s *Store) insertJobs(ctx context.Context, tx *sql.Tx, own bool, p store.InsertManyParams) ([]store.InsertResult, []string, error) {
	if !slices.ContainsFunc(p.Jobs, func(nj store.NewJob) bool { return len(nj.Dependency.Parents) > 0 || nj.Unique.Key != "" }) {
		ids, due, err := s.insertFlat(ctx, tx, own, p)
		if err != nil {
			return nil, nil, err
		}
		res := make([]store.InsertResult, len(ids))
		for i, id := range ids {
			res[i] = store.InsertResult{ID: id, Inserted: true}
		}
		return res, due, nil
	}
	if err := s.checkParents(ctx, tx, p.Jobs); err != nil {
		return nil, nil, err
	}
	now := s.clock.Now()
	st, err := s.prepareIn(ctx, tx, own, s.q.insertJob, s.q.insertPayload, s.q.insertTag, s.q.knowQueue, s.q.transition, s.m.knowTag,
		s.q.dep.insertDependent, s.q.dep.insertEdge)
	if err != nil {
		return nil, nil, err
	}
	defer st.close()
	insJob, insPayload, insTag, knowQueue, insTransition, knowTag := st[0], st[1], st[2], st[3], st[4], st[5]
	insDependent, insEdge := st[6], st[7]
	known := make(map[job.Tag]bool)

	ids := make([]job.ID, len(p.Jobs))
	results := make([]store.InsertResult, len(p.Jobs))
	var queues, due []string
	for _, i := range p.InsertOrder() {
		nj := p.Jobs[i]
		if nj.Unique.Key != "" {
			holder, err := s.takeUnique(ctx, tx, own, nj.Unique, now)
			if err != nil {
				return nil, nil, fmt.Errorf("jobs[%d]: %w", i, err)
			}
			if holder != 0 {
				ids[i], results[i] = holder, store.InsertResult{ID: holder}
				if nj.Unique.Mode.Rewrites() {
					q, err := s.rewrite(ctx, tx, p, i, holder, now, insPayload, insTag, knowTag)
					if err != nil {
						return nil, nil, fmt.Errorf("jobs[%d]: %w", i, err)
					}
					if q != "" && !slices.Contains(due, q) {
						due = append(due, q)
					}
					results[i].Replaced = true
				}
				continue
			}
		}
		dueAt := nj.Unique.InsertDue(now, nj.ScheduledAt)
		parents := nj.Dependency.ParentIDs(ids)
		var res sql.Result
		// A job without a key is written without the column, as before
		// migration 0016; a keyed one by its own statement.
		switch r := s.schema.Rename; {
		case len(parents) == 0 && nj.ConcurrencyKey == "":
			res, err = insJob.ExecContext(ctx, nj.Queue, nj.WireName, nj.MaxAttempts, micros(dueAt), micros(now))
		case len(parents) == 0:
			res, err = tx.ExecContext(ctx, r(sqlInsertKeyedJob), nj.Queue, nj.WireName, nj.MaxAttempts, micros(dueAt), micros(now), nj.ConcurrencyKey)
		case nj.ConcurrencyKey == "":
			res, err = insDependent.ExecContext(ctx, nj.Queue, nj.WireName, nj.MaxAttempts, micros(dueAt), micros(now), len(parents))
		default:
			res, err = tx.ExecContext(ctx, r(sqlInsertKeyedDependent), nj.Queue, nj.WireName, nj.MaxAttempts, micros(dueAt), micros(now),
				len(parents), nj.ConcurrencyKey)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("jobs[%d]: %w", i, err)
		}
		id64, err := res.LastInsertId()
		if err != nil {
			return nil, nil, fmt.Errorf("job %d: read its id: %w", i, err)
		}
		id := job.ID(id64)
		if nj.Unique.Key != "" {
			if err := s.bindUnique(ctx, tx, own, nj.Unique.Key, id64); err != nil {
				return nil, nil, fmt.Errorf("jobs[%d]: %w", i, err)
			}
		}
		payload, err := payloadFor(p, i, id)
		if err != nil {
			return nil, nil, err
		}
		if len(payload) > 0 {
			if _, err := insPayload.ExecContext(ctx, id64, payload); err != nil {
				return nil, nil, fmt.Errorf("job %d: payload: %w", i, err)
			}
		}
		for _, t := range nj.Tags {
			if _, err := insTag.ExecContext(ctx, id64, t.Key, t.Value); err != nil {
				return nil, nil, fmt.Errorf("job %d: tag %s: %w", i, t, err)
			}
			if !known[t] {
				known[t] = true
				if err := knowTags(ctx, knowTag, []job.Tag{t}); err != nil {
					return nil, nil, fmt.Errorf("jobs[%d]: %w", i, err)
				}
			}
		}
		for _, pid := range parents {
			if _, err := insEdge.ExecContext(ctx, id64, int64(pid), encode(modeCodes, nj.Dependency.Mode)); err != nil {
				return nil, nil, fmt.Errorf("job %d: parent %d: %w", i, pid, err)
			}
		}
		if err := s.logEntry(ctx, tx, insTransition, id64, micros(now), stateCode(job.StateUnknown),
			stateCode(core.InsertState(len(parents))), viaCode(core.ViaInsert), 0, ""); err != nil {
			return nil, nil, fmt.Errorf("jobs[%d]: %w", i, err)
		}
		if !slices.Contains(queues, nj.Queue) {
			queues = append(queues, nj.Queue)
			if _, err := knowQueue.ExecContext(ctx, nj.Queue); err != nil {
				return nil, nil, fmt.Errorf("queue %q: %w", nj.Queue, err)
			}
		}
		if len(parents) == 0 && !dueAt.After(now) && !slices.Contains(due, nj.Queue) {
			due = append(due, nj.Queue)
		}
		ids[i], results[i] = id, store.InsertResult{ID: id, Inserted: true}
	}
	existing := store.ExistingParents(p.Jobs)
	candidates := make([]int64, len(existing))
	for k, id := range existing {
		candidates[k] = int64(id)
	}
	released, err := s.settle(ctx, tx, candidates, now)
	if err != nil {
		return nil, nil, err
	}
	for _, q := range released {
		if !slices.Contains(due, q) {
			due = append(due, q)
		}
	}
	slices.Sort(due)
	return results, due, nil
}

// stmts is a set of statements prepared in one transaction.
type stmts []*sql.Stmt

// prepare readies every query in tx, one of the store's own write
// transactions (see Store.stmt); on failure it closes what it made.
func (s *Store) prepare(ctx context.Context, tx *sql.Tx, queries ...string) (stmts, error) {
	return s.prepareIn(ctx, tx, true, queries...)
}

// prepareIn readies every query in tx; own tells whether tx is one of the
// store's own write transactions, which may use the statements prepared at
// Open, or a caller's. On failure it closes what it made.
func (s *Store) prepareIn(ctx context.Context, tx *sql.Tx, own bool, queries ...string) (stmts, error) {
	out := make(stmts, 0, len(queries))
	for _, q := range queries {
		var st *sql.Stmt
		var err error
		if own {
			st, err = s.stmt(ctx, tx, q)
		} else if st, err = tx.PrepareContext(ctx, q); err != nil {
			err = fmt.Errorf("prepare: %w", err)
		}
		if err != nil {
			out.close()
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (st stmts) close() {
	for _, s := range st {
		_ = s.Close()
	}
}

// insertFlat is insert for a batch without Dependencies, set-based: one
// INSERT of every job row in input order (the ids follow it), then one
// INSERT each for the payloads, the Transition Log entries, the Tags and
// Tag Suggest's dictionary, and the Monitor's counts (the rows flip
// count_flip, so the count trigger leaves them alone). Jobs that share
// their Queue, Wire Name, attempt budget and due time — a bulk enqueue —
// are read as a plain array; others as one JSON row each.
func (s *Store) insertFlat(ctx context.Context, tx *sql.Tx, own bool, p store.InsertManyParams) ([]job.ID, []string, error) {
	now := s.clock.Now()
	at := micros(now)
	run := func(query string, args ...any) (*sql.Rows, error) {
		if own {
			return s.query(ctx, tx, query, args...)
		}
		return tx.QueryContext(ctx, query, args...)
	}
	exec := func(what, query string, args ...any) error {
		var err error
		if own {
			_, err = s.exec(ctx, tx, query, args...)
		} else {
			_, err = tx.ExecContext(ctx, query, args...)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}

	n := len(p.Jobs)
	j0 := p.Jobs[0]
	due0 := micros(core.DueAt(now, j0.ScheduledAt))
	uniform := !slices.ContainsFunc(p.Jobs, func(nj store.NewJob) bool {
		return nj.Queue != j0.Queue || nj.WireName != j0.WireName || nj.MaxAttempts != j0.MaxAttempts ||
			micros(core.DueAt(now, nj.ScheduledAt)) != due0 || nj.ConcurrencyKey != j0.ConcurrencyKey
	})
	var rows *sql.Rows
	var err error
	if uniform {
		b := make([]byte, 0, 2*n+1)
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '0')
		}
		rows, err = run(s.q.insertUniform, "["+string(b)+"]", j0.Queue, j0.WireName, j0.MaxAttempts, due0, at, keyArg(j0.ConcurrencyKey))
	} else {
		var batch jsonRows
		for _, nj := range p.Jobs {
			batch.row()
			batch.str(nj.Queue)
			batch.str(nj.WireName)
			batch.int(int64(nj.MaxAttempts))
			batch.int(micros(core.DueAt(now, nj.ScheduledAt)))
			if nj.ConcurrencyKey != "" {
				batch.str(nj.ConcurrencyKey)
			}
		}
		rows, err = run(s.q.insertRows, batch.String(), at)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("insert jobs: %w", err)
	}
	ids := make([]job.ID, 0, n)
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			_ = rows.Close()
			return nil, nil, fmt.Errorf("insert jobs: %w", err)
		}
		ids = append(ids, job.ID(id))
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, nil, fmt.Errorf("insert jobs: %w", err)
	}
	if len(ids) != n {
		return nil, nil, fmt.Errorf("insert jobs: %d rows for %d jobs", len(ids), n)
	}
	// The rows went in in input order and ids only grow: the i-th smallest
	// id is job i's.
	slices.Sort(ids)

	var payloads, entries jsonObject
	var tags, known jsonRows
	var counts countDeltas
	var queues, due []string
	seen := make(map[job.Tag]bool)
	record := s.opts.History.Records()
	for i, nj := range p.Jobs {
		id := int64(ids[i])
		payload, err := payloadFor(p, i, ids[i])
		if err != nil {
			return nil, nil, err
		}
		if len(payload) > 0 {
			payloads.hex(id, payload)
			if payloads.full() {
				if err := exec("payloads", s.q.payloadsIn, payloads.String()); err != nil {
					return nil, nil, err
				}
				payloads.reset()
			}
		}
		if record {
			entries.int(id, 0)
		}
		appendTags(&tags, &known, seen, id, nj.Tags)
		counts.add([]byte(nj.Queue), codeScheduled, 1)
		if !slices.Contains(queues, nj.Queue) {
			queues = append(queues, nj.Queue)
		}
		if !core.DueAt(now, nj.ScheduledAt).After(now) && !slices.Contains(due, nj.Queue) {
			due = append(due, nj.Queue)
		}
	}
	if payloads.len() > 0 {
		if err := exec("payloads", s.q.payloadsIn, payloads.String()); err != nil {
			return nil, nil, err
		}
	}
	if entries.len() > 0 {
		if err := exec("record transitions", s.q.transitionsOf, entries.String(), at,
			stateCode(job.StateUnknown), codeScheduled, viaCode(core.ViaInsert)); err != nil {
			return nil, nil, err
		}
	}
	if tags.len() > 0 {
		if err := exec("tags", s.q.tagRows, tags.String()); err != nil {
			return nil, nil, err
		}
		if err := exec("know tags", s.q.knowTagRows, known.String()); err != nil {
			return nil, nil, err
		}
	}
	var deltas jsonRows
	for _, c := range counts {
		deltas.row()
		deltas.str(c.queue)
		deltas.int(c.state)
		deltas.int(c.n)
	}
	if err := exec("count", s.q.countDeltas, deltas.String()); err != nil {
		return nil, nil, err
	}
	for _, q := range queues {
		if err := exec(fmt.Sprintf("queue %q", q), s.q.knowQueue, q); err != nil {
			return nil, nil, err
		}
	}
	slices.Sort(due)
	return ids, due, nil
}

// appendTags adds a row per Tag of job id to tags (job id, key, value) and,
// for each Tag not yet in seen, its row of Tag Suggest's dictionary to known
// (key, value, folded, display).
func appendTags(tags, known *jsonRows, seen map[job.Tag]bool, id int64, ts []job.Tag) {
	for _, t := range ts {
		tags.row()
		tags.int(id)
		tags.str(t.Key)
		tags.str(t.Value)
		if !seen[t] {
			seen[t] = true
			known.row()
			known.str(t.Key)
			known.str(t.Value)
			known.str(store.FoldTag(t))
			known.str(t.String())
		}
	}
}

// payloadFor returns the payload job i of p is stored with under id: its
// own, or what p.PayloadFor gives.
func payloadFor(p store.InsertManyParams, i int, id job.ID) ([]byte, error) {
	if p.PayloadFor == nil {
		return p.Jobs[i].Payload, nil
	}
	b, err := p.PayloadFor(i, id)
	if err != nil {
		return nil, fmt.Errorf("jobs[%d]: payload: %w", i, err)
	}
	return b, nil
}
