package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// insertSideSQL holds the CTEs insertSQL and insertGraphSQL share, over
// their CTE input (id, queue, payload, ord): the batch's Queues become
// known, and its payloads and Tags ($7 ordinals, $8 keys, $9 values) go
// into the side tables.
const insertSideSQL = `new_queue AS (
    INSERT INTO backwave.queue (name)
    SELECT DISTINCT i.queue FROM input i
    WHERE NOT EXISTS (SELECT 1 FROM backwave.queue q WHERE q.name = i.queue)
    ON CONFLICT DO NOTHING
),
new_payload AS (
    INSERT INTO backwave.job_payload (job_id, payload)
    SELECT i.id, i.payload FROM input i WHERE i.payload IS NOT NULL
),
new_tag AS (
    INSERT INTO backwave.job_tag (job_id, key, value)
    SELECT i.id, t.key, t.value
    FROM unnest($7::int[], $8::text[], $9::text[]) AS t(ord, key, value)
    JOIN input i ON i.ord = t.ord
    ON CONFLICT DO NOTHING
)`

// insertSQL inserts a batch of jobs in one statement: the Queues they name
// become known, each job gets its hot row, its payload (if any) and Tags in
// the side tables and its insert entry in the Transition Log, and one
// NOTIFY goes out per Queue that got a job due now. Ids are drawn in input
// order and returned with the input ordinal.
const insertSQL = `WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
input AS (
    SELECT nextval('backwave.job_id_seq') AS id, u.*
    FROM (SELECT * FROM unnest($2::text[], $3::text[], $4::bytea[], $5::timestamptz[], $6::int[])
            WITH ORDINALITY AS u(wire_name, queue, payload, scheduled_at, max_attempts, ord)
          ORDER BY ord) u
),
` + insertSideSQL + `,
new_job AS (
    INSERT INTO backwave.job (id, queue, wire_name, state, max_attempts, scheduled_at, created_at)
    SELECT i.id, i.queue, i.wire_name, 'scheduled', i.max_attempts, coalesce(i.scheduled_at, now.t), now.t
    FROM input i, now
),
known_tag AS (
    INSERT INTO backwave.tag (key, value, folded, display)
    SELECT DISTINCT ON (t.key, t.value) t.key, t.value, t.folded, t.display
    FROM unnest($8::text[], $9::text[], $11::text[], $12::text[]) AS t(key, value, folded, display)
    WHERE NOT EXISTS (SELECT 1 FROM backwave.tag d WHERE d.key = t.key AND d.value = t.value)
    ON CONFLICT DO NOTHING
),
logged AS (
    INSERT INTO backwave.job_transition (job_id, at, from_state, state, via, attempt)
    SELECT i.id, now.t, 'unknown', 'scheduled', 'insert', 0 FROM input i, now WHERE $13::bool
),
hint AS (
    SELECT pg_notify('backwave.hint', d.queue)
    FROM (SELECT DISTINCT i.queue FROM input i, now
          WHERE $10::bool AND coalesce(i.scheduled_at, now.t) <= now.t) d
)
SELECT i.ord, i.id, (SELECT count(*) FROM hint) FROM input i`

// JobInsertMany inserts every job in one statement and returns their ids in
// input order. A zero ScheduledAt is due at the store's now; Tags are stored
// as a set; a nil or empty payload stores none. Invalid params wrap
// store.ErrInvalidParams and insert nothing.
func (s *Store) JobInsertMany(ctx context.Context, p store.InsertManyParams) ([]job.ID, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	return s.insert(ctx, s.db, p)
}

// insert checks p and inserts its jobs through q.
func (s *Store) insert(ctx context.Context, q querier, p store.InsertManyParams) ([]job.ID, error) {
	if err := checkInsert(p); err != nil {
		return nil, err
	}
	return s.insertChecked(ctx, q, p)
}

// checkInsert is the validation of an insert: p's own, and the Tag text
// PostgreSQL refuses.
func checkInsert(p store.InsertManyParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	for i, nj := range p.Jobs {
		if err := checkTagText(nj.Tags); err != nil {
			return fmt.Errorf("job %d: %w", i, err)
		}
	}
	return nil
}

// insertChecked inserts the jobs of p, which checkInsert passed, through q.
func (s *Store) insertChecked(ctx context.Context, q querier, p store.InsertManyParams) ([]job.ID, error) {
	n := len(p.Jobs)
	if n == 0 {
		return []job.ID{}, nil
	}
	wireNames := make([]string, n)
	queues := make([]string, n)
	payloads := make([][]byte, n)
	due := make([]*time.Time, n)
	maxAttempts := make([]int32, n)
	for i, nj := range p.Jobs {
		wireNames[i], queues[i], maxAttempts[i] = nj.WireName, nj.Queue, int32(min(nj.MaxAttempts, 1<<31-1))
		if len(nj.Payload) > 0 {
			payloads[i] = nj.Payload
		}
		if !nj.ScheduledAt.IsZero() {
			t := nj.ScheduledAt
			due[i] = &t
		}
	}
	ords, keys, values := tagArrays(n, func(i int) []job.Tag { return p.Jobs[i].Tags })
	folded, display := foldArrays(keys, values)
	if hasParents(p) {
		return s.insertGraph(ctx, q, p, []any{s.nowArg(), wireNames, queues, payloads, due, maxAttempts, ords, keys, values,
			!s.opts.DisableNotify, folded, display, s.opts.History.Records()})
	}
	ids := make([]job.ID, n)
	err := q.query(ctx, s.sql(insertSQL),
		[]any{s.nowArg(), wireNames, queues, payloads, due, maxAttempts, ords, keys, values, !s.opts.DisableNotify,
			folded, display, s.opts.History.Records()},
		func(scan scanFunc) error {
			var ord int64
			var id job.ID
			var hints int64
			if err := scan(&ord, &id, &hints); err != nil {
				return err
			}
			if ord < 1 || ord > int64(n) {
				return fmt.Errorf("insert returned ordinal %d for %d jobs", ord, n)
			}
			ids[ord-1] = id
			return nil
		})
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("insert %d jobs", n), err)
	}
	for i, id := range ids {
		if id == 0 {
			return nil, s.wrap("insert", fmt.Errorf("no id returned for job %d", i))
		}
	}
	return ids, nil
}
