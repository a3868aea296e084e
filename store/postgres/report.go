package postgres

import (
	"context"
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// reportSQL applies a batch of outcomes under the fence in one statement.
// Each input row ($2…$9, with ordinal) is applied only if its job is still
// Running under worker $10 at exactly that Attempt; a retry becomes due at
// now + delay, a Retry Cause is set only when the outcome carries one, a
// cancel records cause operator, the Terminal Cause ($21, empty for none) is
// set as the outcome carries it (none when a recorded cancel wins), a
// terminal state stamps finalized_at, Job
// Output is stored when given ($9 is empty when no outcome gives one: a
// multi-argument unnest pads a shorter array with NULLs). Applied rows get their Transition Log entry
// and Tag delta ($11…$13, by ordinal), and one NOTIFY goes out per Queue
// where the outcome may have made a job claimable (a retry due at once, or a
// slot freed in a limited Queue); the applied rows are grouped by Queue
// first, so the queue table is read once per Queue, not once per row. The
// ordinals of applied rows come back.
//
// The statement runs on its generic plan (genericPlanSQL goes first in the
// same round trip): once the table has been analyzed, its statistics show
// worker almost always NULL, and a custom plan, which sees the batch's size,
// may then scan the job table and join the input to it row by row
// (EXPLAIN ANALYZE, 500 outcomes over 100,000 jobs: 99 ms) where the
// generic plan looks each job up by id (7 ms). Renew and Relinquish do the
// same.
//
// The fence reads "Running" as worker = $10 AND lease_expires_at IS NOT
// NULL, which the job table's CHECK makes equivalent to state = 'running':
// spelled with the state, it let the planner scan the job_running partial
// index, whose dead entries grow with every job worked until a vacuum, and
// rescan the unnested input once per row, so a report's cost grew through
// a drain. The input is materialized so that no plan unnests it more than
// once.
var reportSQL = `WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
input AS MATERIALIZED (
    SELECT * FROM unnest($2::bigint[], $3::int[], $4::text[], $5::text[], $6::bigint[], $7::text[],
                         $8::text[], $9::bytea[], $21::text[])
        WITH ORDINALITY AS u(id, attempt, state, via, delay, retry_cause, detail, output, terminal_cause, ord)
),
applied AS (
    UPDATE backwave.job j
    SET state = CASE WHEN j.cancel_requested THEN 'cancelled' ELSE i.state END,
        scheduled_at = CASE WHEN i.state = 'scheduled' AND NOT j.cancel_requested
            THEN now.t + i.delay * interval '1 microsecond' ELSE j.scheduled_at END,
        retry_cause = CASE WHEN i.retry_cause <> '' AND NOT j.cancel_requested THEN i.retry_cause ELSE j.retry_cause END,
        attempt_base = CASE WHEN i.via = 'snooze' AND NOT j.cancel_requested THEN j.attempt_base + 1 ELSE j.attempt_base END,
        snoozes = CASE WHEN i.via = 'snooze' AND NOT j.cancel_requested THEN j.snoozes + 1 ELSE j.snoozes END,
        cancel_cause = CASE WHEN i.state = 'cancelled' OR j.cancel_requested THEN 'operator' ELSE j.cancel_cause END,
        finalized_at = CASE WHEN i.state = 'scheduled' AND NOT j.cancel_requested THEN j.finalized_at ELSE now.t END,
        terminal_cause = CASE WHEN j.cancel_requested THEN NULL ELSE nullif(i.terminal_cause, '') END,
        output = CASE WHEN j.cancel_requested THEN j.output ELSE coalesce(i.output, j.output) END,
        worker = NULL,
        lease_expires_at = NULL
    FROM input i, now
    WHERE j.id = i.id AND j.attempt = i.attempt
      AND j.worker = $10::text AND j.lease_expires_at IS NOT NULL
    RETURNING j.id, j.attempt, j.queue, j.state,
        CASE WHEN j.cancel_requested THEN 'cancel' ELSE i.via END AS via,
        i.delay, i.detail, i.ord, now.t AS now
),
logged AS (
    INSERT INTO backwave.job_transition (job_id, at, from_state, state, via, attempt, failure_detail)
    SELECT a.id, a.now, 'running', a.state, a.via, a.attempt, CASE WHEN $16::bool THEN nullif(a.detail, '') END
    FROM applied a WHERE $15::bool
),
trimmed AS (` + trimSQL("applied", "$15") + `),
` + reportCursorCTE + `
tagged AS (
    INSERT INTO backwave.job_tag (job_id, key, value)
    SELECT a.id, t.key, t.value
    FROM unnest($11::int[], $12::text[], $13::text[]) AS t(ord, key, value)
    JOIN applied a ON a.ord = t.ord
    ON CONFLICT DO NOTHING
),
known_tag AS (
    INSERT INTO backwave.tag (key, value, folded, display)
    SELECT DISTINCT ON (t.key, t.value) t.key, t.value, t.folded, t.display
    FROM unnest($11::int[], $12::text[], $13::text[], $17::text[], $18::text[]) AS t(ord, key, value, folded, display)
    JOIN applied a ON a.ord = t.ord
    WHERE NOT EXISTS (SELECT 1 FROM backwave.tag d WHERE d.key = t.key AND d.value = t.value)
    ON CONFLICT DO NOTHING
),
hint AS (
    SELECT pg_notify('backwave.hint', q.name)
    FROM (SELECT a.queue, bool_or(a.state = 'scheduled' AND a.delay = 0) AS due
          FROM applied a WHERE $14::bool GROUP BY a.queue) d
    JOIN backwave.queue q ON q.name = d.queue
    WHERE NOT q.paused AND (d.due OR q.concurrency_limit > 0)
)
SELECT a.ord, (SELECT count(*) FROM hint) FROM applied a`

// OutcomeReport applies, in one statement, each outcome whose Lease
// p.Worker still holds, and answers every outcome in input order. An applied
// outcome moves the job to the outcome's state (a retry or a snooze is due
// at the store's now plus RetryDelay; a snooze also counts itself in
// snoozes and moves attempt_base up by one), sets the Retry Cause if the outcome carries
// one and keeps it otherwise, sets the outcome's Terminal Cause, records the Transition Log entry with the
// Failure Detail, stores the Job Output, merges the Tag delta and frees the
// Queue's slot (the Running count drops with the row). A stale outcome
// mutates nothing and is answered Applied=false; so is a repeat of a Lease
// earlier in the same batch. Params that fail store.ReportParams.Validate
// (an outcome the Core could not have decided) write nothing.
func (s *Store) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	out := make([]store.ReportResult, len(p.Outcomes))
	// The first outcome for a Lease is the one that may apply; a repeat in
	// the same batch finds the job no longer Running, as it would one call
	// later, so it is left out of the statement and answered stale.
	first := make(map[job.Lease]bool, len(p.Outcomes))
	var sent []int // indexes into p.Outcomes, by ordinal-1
	for i, o := range p.Outcomes {
		out[i] = store.ReportResult{Lease: o.Lease}
		if !first[o.Lease] {
			first[o.Lease] = true
			sent = append(sent, i)
		}
	}
	if len(sent) == 0 {
		return out, nil
	}
	n := len(sent)
	ids := make(pgArray[int8Elem], n)
	attempts := make(pgArray[int4Elem], n)
	states := make(pgArray[textElem], n)
	vias := make(pgArray[textElem], n)
	delays := make(pgArray[int8Elem], n)
	causes := make(pgArray[textElem], n)
	terminals := make(pgArray[textElem], n)
	details := make(pgArray[textElem], n)
	var outputs [][]byte // left empty when no outcome has Output: unnest pads it with NULLs
	for k, i := range sent {
		o := p.Outcomes[i]
		ids[k], attempts[k] = int8Elem(o.Lease.ID), int4Elem(o.Lease.Attempt)
		states[k], vias[k] = textElem(o.State.String()), textElem(o.Via.String())
		delays[k] = int8Elem(micros(o.RetryDelay))
		causes[k] = textElem(o.RetryCause.String())
		terminals[k] = textElem(o.TerminalCause.String())
		details[k] = textElem(pgText(o.FailureDetail))
		if o.Output != nil {
			if outputs == nil {
				outputs = make([][]byte, n)
			}
			outputs[k] = o.Output
			if len(o.Output) == 0 {
				outputs[k] = []byte{}
			}
		}
	}
	ords, keys, values := tagArrays(n, func(k int) []job.Tag { return p.Outcomes[sent[k]].TagDelta })
	for i := range keys {
		keys[i], values[i] = pgText(keys[i]), pgText(values[i])
	}
	folded, display := foldArrays(keys, values)
	var cursorOrds []int32 // only the outcomes that carry a Cursor
	var cursors [][]byte
	for k, i := range sent {
		if c := p.Outcomes[i].Cursor; c != nil {
			cursorOrds, cursors = append(cursorOrds, int32(k+1)), append(cursors, c)
		}
	}
	if outputs == nil {
		// Each nil element of a bytea array costs pgx an allocation to
		// encode; an empty array is one.
		outputs = [][]byte{}
	}
	var ord, hints int64 // every returned row's, scanned in turn
	dest := []any{&ord, &hints}
	report := stmt{
		sql: s.sql(reportSQL),
		args: []any{s.nowArg(), ids, attempts, states, vias,
			delays, causes, details, outputs,
			string(p.Worker), ords, keys, values, !s.opts.DisableNotify,
			s.opts.History.Records(), s.opts.History == store.HistoryTransitionsWithDetail, folded, display,
			cursorOrds, cursors, terminals},
		each: func(scan scanFunc) error {
			if err := scan(dest...); err != nil {
				return err
			}
			if ord < 1 || ord > int64(n) {
				return fmt.Errorf("report returned ordinal %d for %d outcomes", ord, n)
			}
			out[sent[ord-1]].Applied = true
			return nil
		},
	}
	// The batch's dependents are settled by a second statement in the same
	// transaction and round trip (see settleSQL).
	err := s.db.batch(ctx, stmt{sql: genericPlanSQL}, report, s.settleStmt(ids))
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("report %d outcomes for %s", len(p.Outcomes), p.Worker), err)
	}
	return out, nil
}
