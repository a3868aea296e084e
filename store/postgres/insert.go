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

// insertSQL inserts a batch of jobs in one statement ($19 the Concurrency
// Keys, NULL for none, or a NULL array when no job has one): the jobs take their
// unique keys ($14 keys, $15 periods; see uniqueSQL), the Queues they name
// become known, each job inserted gets its hot row, its payload (if any)
// and Tags in the side tables and its insert entry in the Transition Log,
// and one NOTIFY goes out per Queue that got a job due now. Ids are drawn
// in input order, unless $16 gives them (drawn ahead: see givenIDs), and
// returned with the input ordinal and whether the job was inserted.
const insertSQL = `WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
candidate AS (
    SELECT coalesce(u.given_id, nextval('backwave.job_id_seq')) AS id, u.ord AS rank, u.*
    FROM (SELECT * FROM unnest($2::text[], $3::text[], $4::bytea[], $5::timestamptz[], $6::int[], $14::text[], $15::bigint[],
                               $16::bigint[], $19::text[])
            WITH ORDINALITY AS u(wire_name, queue, payload, scheduled_at, max_attempts, unique_key, unique_period, given_id,
                                 concurrency_key, ord)
          ORDER BY ord) u
),
` + uniqueSQL + `,
` + insertSideSQL + `,
` + traceSideSQL + `,
new_job AS (
    INSERT INTO backwave.job (id, queue, wire_name, state, max_attempts, scheduled_at, created_at, concurrency_key)
    SELECT i.id, i.queue, i.wire_name, 'scheduled', i.max_attempts, coalesce(i.scheduled_at, now.t), now.t, i.concurrency_key
    FROM input i, now
),
known_tag AS (
    INSERT INTO backwave.tag (key, value, folded, display)
    SELECT DISTINCT ON (t.key, t.value) t.key, t.value, t.folded, t.display
    FROM unnest($7::int[], $8::text[], $9::text[], $11::text[], $12::text[]) AS t(ord, key, value, folded, display)
    WHERE t.ord IN (SELECT i.ord FROM input i)
      AND NOT EXISTS (SELECT 1 FROM backwave.tag d WHERE d.key = t.key AND d.value = t.value)
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
SELECT i.ord, i.id, true, (SELECT count(*) FROM hint) FROM input i
UNION ALL
` + heldSQL

// JobInsertMany is JobInsertManyResults returning only the ids: a job whose
// unique key was held has the holder's id.
func (s *Store) JobInsertMany(ctx context.Context, p store.InsertManyParams) ([]job.ID, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	res, err := s.JobInsertManyResults(ctx, p)
	return store.ResultIDs(res), err
}

// JobInsertManyResults inserts every job in one statement and answers per
// job in input order. A job whose unique key is held is not inserted and
// answers the holder's id (unique.go). A zero ScheduledAt is due at the
// store's now; Tags are stored as a set; a nil or empty payload stores
// none. Invalid params wrap store.ErrInvalidParams and insert nothing.
func (s *Store) JobInsertManyResults(ctx context.Context, p store.InsertManyParams) ([]store.InsertResult, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	if !followsInsert(p) {
		return s.insertResults(ctx, s.db, p)
	}
	// A rewrite runs statements after the insert's: one transaction makes
	// them one atomic step, and a refused rewrite rolls the insert back.
	var res []store.InsertResult
	err := s.db.inTx(ctx, func(q querier) error {
		var err error
		res, err = s.insertResults(ctx, q, p)
		return err
	})
	return res, err
}

// insert is insertResults returning only the ids.
func (s *Store) insert(ctx context.Context, q querier, p store.InsertManyParams) ([]job.ID, error) {
	res, err := s.insertResults(ctx, q, p)
	return store.ResultIDs(res), err
}

// insertResults inserts the jobs through q, in one statement unless some
// job names parents (insertGraph), and answers per job in input order.
func (s *Store) insertResults(ctx context.Context, q querier, p store.InsertManyParams) ([]store.InsertResult, error) {
	if err := checkInsert(p); err != nil {
		return nil, err
	}
	res, err := s.insertChecked(ctx, q, p)
	if err != nil || !followsInsert(p) {
		return res, err
	}
	if err := s.afterInsert(ctx, q, p, res); err != nil {
		return nil, s.wrap("insert", err)
	}
	return res, nil
}

// checkInsert is the validation of an insert: p's own, and the Tag text
// PostgreSQL refuses.
func checkInsert(p store.InsertManyParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	for i, nj := range p.Jobs {
		if err := checkTagText(nj.Tags); err != nil {
			return fmt.Errorf("jobs[%d]: %w", i, err)
		}
	}
	return nil
}

// insertChecked inserts the jobs of p, which checkInsert passed, through q.
func (s *Store) insertChecked(ctx context.Context, q querier, p store.InsertManyParams) ([]store.InsertResult, error) {
	n := len(p.Jobs)
	if n == 0 {
		return []store.InsertResult{}, nil
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
	given, err := s.givenIDs(ctx, q, p, payloads)
	if err != nil {
		return nil, err
	}
	ords, keys, values := tagArrays(n, func(i int) []job.Tag { return p.Jobs[i].Tags })
	folded, display := foldArrays(keys, values)
	uniqueKeys, uniquePeriods := uniqueArrays(p.Jobs)
	traceOrds, traces := traceArrays(p.Jobs)
	ckeys := concurrencyKeys(p.Jobs)
	if hasParents(p) {
		return s.insertGraph(ctx, q, p, []any{s.nowArg(), wireNames, queues, payloads, due, maxAttempts, ords, keys, values,
			!s.opts.DisableNotify, folded, display, s.opts.History.Records()}, []any{uniqueKeys, uniquePeriods, given, traceOrds, traces, ckeys})
	}
	res := make([]store.InsertResult, n)
	err = q.query(ctx, s.sql(insertSQL),
		[]any{s.nowArg(), wireNames, queues, payloads, due, maxAttempts, ords, keys, values, !s.opts.DisableNotify,
			folded, display, s.opts.History.Records(), uniqueKeys, uniquePeriods, given, traceOrds, traces, ckeys},
		resultScanner(res))
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("insert %d jobs", n), err)
	}
	if err := checkResults(res); err != nil {
		return nil, s.wrap("insert", err)
	}
	return res, nil
}

// resultScanner returns the reader of an insert statement's result rows —
// ordinal, id, inserted, hints — into res. One set of scan destinations
// serves every row, so a row costs no allocation.
func resultScanner(res []store.InsertResult) func(scanFunc) error {
	var ord, hints int64
	var r store.InsertResult
	dest := []any{&ord, &r.ID, &r.Inserted, &hints}
	return func(scan scanFunc) error {
		r = store.InsertResult{}
		if err := scan(dest...); err != nil {
			return err
		}
		if ord < 1 || ord > int64(len(res)) {
			return fmt.Errorf("insert returned ordinal %d for %d jobs", ord, len(res))
		}
		res[ord-1] = r
		return nil
	}
}

// checkResults fails an insert that left a job without an answer.
func checkResults(res []store.InsertResult) error {
	for i, r := range res {
		if r.ID == 0 {
			return fmt.Errorf("no id returned for job %d", i)
		}
	}
	return nil
}

// drawIDsSQL draws $1 ids from the job id sequence, ascending.
const drawIDsSQL = `SELECT nextval('backwave.job_id_seq') FROM generate_series(1, $1::int) ORDER BY 1`

// givenIDs serves p.PayloadFor: when it is set, the batch's ids are drawn
// ahead through q, in one statement, and handed out in p.InsertOrder() (so
// a parent's id stays below its dependents'), and payloads[i] becomes
// PayloadFor(i, id). It returns the ids to insert under, by input
// ordinal, or nil when p.PayloadFor is nil and the insert draws its own. A
// job whose unique key turns out held is not inserted; its id is never
// used and its payload discarded.
func (s *Store) givenIDs(ctx context.Context, q querier, p store.InsertManyParams, payloads [][]byte) ([]int64, error) {
	if p.PayloadFor == nil {
		return nil, nil
	}
	n := len(p.Jobs)
	drawn := make([]int64, 0, n)
	err := q.query(ctx, s.sql(drawIDsSQL), []any{n}, func(scan scanFunc) error {
		var id int64
		if err := scan(&id); err != nil {
			return err
		}
		drawn = append(drawn, id)
		return nil
	})
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("draw %d job ids", n), err)
	}
	if len(drawn) != n {
		return nil, s.wrap("draw job ids", fmt.Errorf("%d ids for %d jobs", len(drawn), n))
	}
	given := make([]int64, n)
	for k, i := range p.InsertOrder() {
		given[i] = drawn[k]
		b, err := p.PayloadFor(i, job.ID(drawn[k]))
		if err != nil {
			return nil, fmt.Errorf("postgres: insert: jobs[%d]: payload: %w", i, err)
		}
		payloads[i] = nil
		if len(b) > 0 {
			payloads[i] = b
		}
	}
	return given, nil
}
