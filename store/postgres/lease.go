package postgres

import (
	"context"
	"fmt"

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
	query, progress := renewStatement(p)
	var l job.Lease // every returned row's, scanned in turn
	var cancel bool
	dest := []any{&l.ID, &l.Attempt, &cancel}
	err := s.db.batch(ctx, stmt{sql: genericPlanSQL}, stmt{
		sql:  s.sql(query),
		args: append([]any{s.nowArg(), ids, attempts, string(p.Worker), micros(p.LeaseDuration)}, progress...),
		each: func(scan scanFunc) error {
			if err := scan(dest...); err != nil {
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

// leaseLossSET is the SET list of a Lease ending without an outcome, by
// expiry or Relinquish, as core.LeaseLoss says: a job whose cancel was
// requested ends Cancelled (cause operator); otherwise at the attempt
// ceiling ("attempt >= max_attempts + attempt_base", core.AtCeiling against
// job.Job.Ceiling) the job dead-letters, and below it it is Scheduled and
// due at now. A job it dead-letters gets the Terminal Cause ceiling
// reached (core.TerminalCauseAfter), every other none. The Lease is cleared.
const leaseLossSET = `state = CASE WHEN j.cancel_requested THEN 'cancelled'
            WHEN j.attempt >= j.max_attempts + j.attempt_base THEN 'dead_lettered' ELSE 'scheduled' END,
        scheduled_at = CASE WHEN j.cancel_requested OR j.attempt >= j.max_attempts + j.attempt_base
            THEN j.scheduled_at ELSE now.t END,
        finalized_at = CASE WHEN j.cancel_requested OR j.attempt >= j.max_attempts + j.attempt_base
            THEN now.t ELSE j.finalized_at END,
        cancel_cause = CASE WHEN j.cancel_requested THEN 'operator' ELSE j.cancel_cause END,
        terminal_cause = CASE WHEN NOT j.cancel_requested AND j.attempt >= j.max_attempts + j.attempt_base
            THEN 'ceiling_reached' END,
        worker = NULL,
        lease_expires_at = NULL`

// leaseLossVia is the Transition Log action of a lost Lease whose job is now
// in state e.state: cancel if a recorded cancel ended it, else via.
func leaseLossVia(alias, via string) string {
	return `CASE WHEN ` + alias + `.state = 'cancelled' THEN 'cancel' ELSE '` + via + `' END`
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
	err := s.db.batch(ctx, stmt{sql: genericPlanSQL}, relinquish, s.settleStmt(int8Array(ids)))
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
