package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// leaseArrays splits Leases into parallel id and Attempt arrays.
func leaseArrays(ls []job.Lease) (ids []int64, attempts []int32) {
	ids = make([]int64, len(ls))
	attempts = make([]int32, len(ls))
	for i, l := range ls {
		ids[i], attempts[i] = int64(l.ID), int32(l.Attempt)
	}
	return ids, attempts
}

// renewSQL extends every Lease of $2/$3 still held by worker $4 — the job
// Running under that worker at exactly that Attempt — to now + $5 µs.
// "Running" is spelled as in reportSQL (see there): worker and a lease
// expiry set, which the table's CHECK makes equivalent to the state, so
// the plan looks rows up by id and never scans the job_running index.
const renewSQL = `WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t)
UPDATE backwave.job j
SET lease_expires_at = now.t + $5::bigint * interval '1 microsecond'
FROM (SELECT DISTINCT * FROM unnest($2::bigint[], $3::int[]) AS u(id, attempt)) l, now
WHERE j.id = ANY ($2::bigint[]) AND j.id = l.id AND j.attempt = l.attempt
  AND j.worker = $4::text AND j.lease_expires_at IS NOT NULL
RETURNING j.id, j.attempt, j.cancel_requested`

// LeaseRenew extends every Lease still held by p.Worker to the store's now
// plus p.LeaseDuration in one statement, and answers each Lease in input
// order: renewed, cancel requested (renewed, and an operator asked the job
// to stop), or lost. A Lease that lapsed but was not yet expired is still
// held and renews.
func (s *Store) LeaseRenew(ctx context.Context, p store.RenewParams) ([]store.RenewResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	out := make([]store.RenewResult, len(p.Leases))
	for i, l := range p.Leases {
		out[i] = store.RenewResult{Lease: l, Status: store.RenewLost}
	}
	if len(p.Leases) == 0 {
		return out, nil
	}
	ids, attempts := leaseArrays(p.Leases)
	status := make(map[job.Lease]store.RenewStatus, len(p.Leases))
	err := s.db.batch(ctx, stmt{sql: genericPlanSQL}, stmt{
		sql:  s.sql(renewSQL),
		args: []any{s.nowArg(), ids, attempts, string(p.Worker), micros(p.LeaseDuration)},
		each: func(scan scanFunc) error {
			var l job.Lease
			var cancel bool
			if err := scan(&l.ID, &l.Attempt, &cancel); err != nil {
				return err
			}
			status[l] = store.RenewRenewed
			if cancel {
				status[l] = store.RenewCancelRequested
			}
			return nil
		},
	})
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("renew %d leases for %s", len(p.Leases), p.Worker), err)
	}
	for i := range out {
		if st, ok := status[out[i].Lease]; ok {
			out[i].Status = st
		}
	}
	return out, nil
}

// reportSQL applies a batch of outcomes under the fence in one statement.
// Each input row ($2…$9, with ordinal) is applied only if its job is still
// Running under worker $10 at exactly that Attempt; a retry becomes due at
// now + delay, a Retry Cause is set only when the outcome carries one, a
// cancel records cause operator, a terminal state stamps finalized_at, Job
// Output is stored when given. Applied rows get their Transition Log entry
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
                         $8::text[], $9::bytea[])
        WITH ORDINALITY AS u(id, attempt, state, via, delay, retry_cause, detail, output, ord)
),
applied AS (
    UPDATE backwave.job j
    SET state = CASE WHEN j.cancel_requested THEN 'cancelled' ELSE i.state END,
        scheduled_at = CASE WHEN i.state = 'scheduled' AND NOT j.cancel_requested
            THEN now.t + i.delay * interval '1 microsecond' ELSE j.scheduled_at END,
        retry_cause = CASE WHEN i.retry_cause <> '' AND NOT j.cancel_requested THEN i.retry_cause ELSE j.retry_cause END,
        cancel_cause = CASE WHEN i.state = 'cancelled' OR j.cancel_requested THEN 'operator' ELSE j.cancel_cause END,
        finalized_at = CASE WHEN i.state = 'scheduled' AND NOT j.cancel_requested THEN j.finalized_at ELSE now.t END,
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
// outcome moves the job to the outcome's state (a retry is due at the
// store's now plus RetryDelay), sets the Retry Cause if the outcome carries
// one and keeps it otherwise, records the Transition Log entry with the
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
	ids := make([]int64, n)
	attempts := make([]int32, n)
	states := make([]string, n)
	vias := make([]string, n)
	delays := make([]int64, n)
	causes := make([]string, n)
	details := make([]string, n)
	outputs := make([][]byte, n)
	for k, i := range sent {
		o := p.Outcomes[i]
		ids[k], attempts[k] = int64(o.Lease.ID), int32(o.Lease.Attempt)
		states[k], vias[k] = o.State.String(), o.Via.String()
		delays[k] = micros(o.RetryDelay)
		causes[k] = o.RetryCause.String()
		details[k] = pgText(o.FailureDetail)
		if o.Output != nil {
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
	report := stmt{
		sql: s.sql(reportSQL),
		args: []any{s.nowArg(), ids, attempts, states, vias, delays, causes, details, outputs,
			string(p.Worker), ords, keys, values, !s.opts.DisableNotify,
			s.opts.History.Records(), s.opts.History == store.HistoryTransitionsWithDetail, folded, display},
		each: func(scan scanFunc) error {
			var ord, hints int64
			if err := scan(&ord, &hints); err != nil {
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

// leaseLossSET is the SET list of a Lease ending without an outcome, by
// expiry or Relinquish, as core.LeaseLoss says: a job whose cancel was
// requested ends Cancelled (cause operator); otherwise at the attempt
// ceiling ("attempt >= max_attempts + attempt_base", core.AtCeiling against
// job.Job.Ceiling) the job dead-letters, and below it it is Scheduled and
// due at now. The Lease is cleared.
const leaseLossSET = `state = CASE WHEN j.cancel_requested THEN 'cancelled'
            WHEN j.attempt >= j.max_attempts + j.attempt_base THEN 'dead_lettered' ELSE 'scheduled' END,
        scheduled_at = CASE WHEN j.cancel_requested OR j.attempt >= j.max_attempts + j.attempt_base
            THEN j.scheduled_at ELSE now.t END,
        finalized_at = CASE WHEN j.cancel_requested OR j.attempt >= j.max_attempts + j.attempt_base
            THEN now.t ELSE j.finalized_at END,
        cancel_cause = CASE WHEN j.cancel_requested THEN 'operator' ELSE j.cancel_cause END,
        worker = NULL,
        lease_expires_at = NULL`

// leaseLossVia is the Transition Log action of a lost Lease whose job is now
// in state e.state: cancel if a recorded cancel ended it, else via.
func leaseLossVia(alias, via string) string {
	return `CASE WHEN ` + alias + `.state = 'cancelled' THEN 'cancel' ELSE '` + via + `' END`
}

// trimSQL is a DELETE that drops the oldest Transition Log entries of the
// jobs in CTE from (columns id, attempt) past store.TransitionTrimAttempt,
// keeping the newest TransitionLogCap-1 of those the statement's snapshot
// sees: with the one entry the same statement adds, the log holds at most
// TransitionLogCap. records is the parameter saying the log is written.
func trimSQL(from, records string) string {
	return `DELETE FROM backwave.job_transition t USING ` + from + ` x
    WHERE ` + records + `::bool AND x.attempt > ` + strconv.Itoa(store.TransitionTrimAttempt) + ` AND t.job_id = x.id
      AND t.seq <= (SELECT t2.seq FROM backwave.job_transition t2 WHERE t2.job_id = x.id
                    ORDER BY t2.seq DESC OFFSET ` + strconv.Itoa(store.TransitionLogCap-1) + ` LIMIT 1)`
}

// expireSQL ends the lapsed Leases (expiry at or before now) of Running jobs
// in Queues $2, smallest id first, at most $3 of them (NULL: all). Rows
// another transaction holds (an outcome or renewal in flight) are skipped:
// they are being decided. A job the expiry reschedules gets the Retry Cause
// lease expired; one it dead-letters keeps its cause (core.RetryCauseAfter).
var expireSQL = `WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
lapsed AS (
    SELECT j.id FROM backwave.job j, now
    WHERE j.queue = ANY($2::text[]) AND j.state = 'running' AND j.lease_expires_at <= now.t
    ORDER BY j.id
    LIMIT $3::int
    FOR UPDATE OF j SKIP LOCKED
),
expired AS (
    UPDATE backwave.job j
    SET ` + leaseLossSET + `,
        retry_cause = CASE WHEN j.cancel_requested OR j.attempt >= j.max_attempts + j.attempt_base
            THEN j.retry_cause ELSE 'lease_expired' END
    FROM now
    WHERE j.id = ANY (ARRAY(SELECT l.id FROM lapsed l))
    RETURNING j.id, j.attempt, j.state, j.queue, now.t AS now
),
logged AS (
    INSERT INTO backwave.job_transition (job_id, at, from_state, state, via, attempt)
    SELECT e.id, e.now, 'running', e.state, ` + leaseLossVia("e", "expire") + `, e.attempt FROM expired e WHERE $5::bool
),
trimmed AS (` + trimSQL("expired", "$5") + `),
hint AS (
    SELECT pg_notify('backwave.hint', d.queue)
    FROM (SELECT DISTINCT e.queue FROM expired e WHERE $4::bool) d
)
SELECT e.id, e.attempt, (SELECT count(*) FROM hint) FROM expired e ORDER BY e.id`

// LeaseExpire ends, in one statement, the lapsed Leases (expiry at or
// before the store's now) of Running jobs in p.Queues, and settles the
// dependents of those it ended terminal in a second one, in one
// transaction; smallest job id first, at most p.Limit of them (0: all). Each job moves as
// core.AfterLeaseLoss says: Dead-Lettered at its attempt ceiling, otherwise
// Scheduled and due now; either way with Retry Cause lease expired. Slots
// are freed. The expired Leases are returned in id order. A job whose row
// another transaction is writing at that moment (its outcome, say) is left
// for that transaction and a later sweep.
func (s *Store) LeaseExpire(ctx context.Context, p store.ExpireParams) (store.ExpireResult, error) {
	if err := p.Validate(); err != nil {
		return store.ExpireResult{}, err
	}
	if err := s.enter(ctx); err != nil {
		return store.ExpireResult{}, err
	}
	var res store.ExpireResult
	if len(p.Queues) == 0 {
		return res, nil
	}
	var limit any // NULL: LIMIT ALL
	if p.Limit > 0 {
		limit = int32(min(p.Limit, 1<<31-1))
	}
	// The expired jobs' dependents are settled in the same transaction, by
	// a second statement over the ids the first returned (see settleSQL).
	err := s.db.inTx(ctx, func(q querier) error {
		res = store.ExpireResult{}
		err := q.query(ctx, s.sql(expireSQL), []any{s.nowArg(), p.Queues, limit, !s.opts.DisableNotify, s.opts.History.Records()},
			func(scan scanFunc) error {
				var l job.Lease
				var hints int64
				if err := scan(&l.ID, &l.Attempt, &hints); err != nil {
					return err
				}
				res.Expired = append(res.Expired, l)
				return nil
			})
		if err != nil {
			return err
		}
		ids, _ := leaseArrays(res.Expired)
		return s.settle(ctx, q, ids)
	})
	if err != nil {
		return store.ExpireResult{}, s.wrap("expire leases", err)
	}
	if err := s.foldCounts(ctx); err != nil {
		return res, s.wrap("fold job counts", err)
	}
	return res, nil
}

// relinquishSQL hands back every Lease of $2/$3 still held by worker $4
// (Running spelled as in reportSQL).
var relinquishSQL = `WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
handed AS (
    UPDATE backwave.job j
    SET ` + leaseLossSET + `
    FROM (SELECT DISTINCT * FROM unnest($2::bigint[], $3::int[]) AS u(id, attempt)) l, now
    WHERE j.id = ANY ($2::bigint[]) AND j.id = l.id AND j.attempt = l.attempt
      AND j.worker = $4::text AND j.lease_expires_at IS NOT NULL
    RETURNING j.id, j.attempt, j.state, j.queue, now.t AS now
),
logged AS (
    INSERT INTO backwave.job_transition (job_id, at, from_state, state, via, attempt)
    SELECT h.id, h.now, 'running', h.state, ` + leaseLossVia("h", "relinquish") + `, h.attempt FROM handed h WHERE $6::bool
),
trimmed AS (` + trimSQL("handed", "$6") + `),
hint AS (
    SELECT pg_notify('backwave.hint', d.queue)
    FROM (SELECT DISTINCT h.queue FROM handed h WHERE $5::bool) d
)
SELECT h.id, h.attempt, (SELECT count(*) FROM hint) FROM handed h`

// LeaseRelinquish hands back, in one statement, each Lease p.Worker still
// holds: the job returns to Scheduled due now with its Attempt as charged
// and its Retry Cause untouched, or dead-letters if that Attempt was its
// last (core.AfterLeaseLoss). Slots are freed; stale Leases are skipped.
// The handed-back Leases are listed in input order, each once.
func (s *Store) LeaseRelinquish(ctx context.Context, p store.RelinquishParams) (store.RelinquishResult, error) {
	if err := p.Validate(); err != nil {
		return store.RelinquishResult{}, err
	}
	if err := s.enter(ctx); err != nil {
		return store.RelinquishResult{}, err
	}
	var res store.RelinquishResult
	if len(p.Leases) == 0 {
		return res, nil
	}
	ids, attempts := leaseArrays(p.Leases)
	handed := make(map[job.Lease]bool, len(p.Leases))
	relinquish := stmt{
		sql:  s.sql(relinquishSQL),
		args: []any{s.nowArg(), ids, attempts, string(p.Worker), !s.opts.DisableNotify, s.opts.History.Records()},
		each: func(scan scanFunc) error {
			var l job.Lease
			var hints int64
			if err := scan(&l.ID, &l.Attempt, &hints); err != nil {
				return err
			}
			handed[l] = true
			return nil
		},
	}
	// A Relinquish at the attempt ceiling dead-letters: settle its
	// dependents in the same transaction (see settleSQL).
	err := s.db.batch(ctx, stmt{sql: genericPlanSQL}, relinquish, s.settleStmt(ids))
	if err != nil {
		return store.RelinquishResult{}, s.wrap(fmt.Sprintf("relinquish %d leases for %s", len(p.Leases), p.Worker), err)
	}
	for _, l := range p.Leases {
		if handed[l] {
			res.Relinquished = append(res.Relinquished, l)
			delete(handed, l)
		}
	}
	return res, nil
}
