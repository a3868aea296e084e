package postgres

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// A claim is two statements (three with ClaimParams.Reopen) sent as one
// batch (one round trip with pgx) and run as one transaction:
//
//  1. claimLockSQL locks, in name order, the settings rows of the claimed
//     Queues that have a Concurrency Limit or a Rate Limit (rate.go). Every
//     claim that may take a slot, or a start, of such a Queue holds that
//     row until it commits, so such claims run one at a time per Queue;
//     claims of other Queues lock nothing here and never wait for each
//     other.
//  2. claimSQL takes its snapshot only after the locks are held, so the
//     Running count and the window count it reads for such a Queue include
//     every claim that committed before it; it leases at most
//     limit − running jobs there, and no more than the Rate leaves in the
//     window, which it counts. Jobs are picked with FOR UPDATE SKIP LOCKED,
//     so concurrent claimers never wait on, nor lease, one job twice.
//  3. with ClaimParams.Reopen, rateReopenSQL reads when the earliest
//     exhausted Rate Limit window of the claimed Queues ends (rate.go).
//
// Outcomes, expiries and Relinquishes free slots without the lock: they only
// lower the count, so a claim that missed one is conservative, never over.
// A limit set while a claim runs applies from the next claim: like a lowered
// limit, it revokes no Lease.
//
// The price of an exact cluster-wide count: every claim that names a limited
// Queue waits its turn on that Queue's row, even one that ends up leasing
// only from other Queues, for as long as the claim transaction lasts (one
// statement). Claims that name no limited Queue are unaffected.

const claimLockSQL = `SELECT q.name FROM backwave.queue q
WHERE q.name = ANY($1::text[]) AND (q.concurrency_limit > 0 OR q.rate_limit > 0 OR q.key_limit > 0 OR q.key_rate_limit > 0 OR q.fair_claim)
ORDER BY q.name COLLATE "C"
FOR UPDATE`

// genericPlanSQL makes the rest of a transaction run on cached generic
// plans. Left to choose, PostgreSQL keeps planning a small claim afresh
// every time — its custom plan looks cheaper than the generic one — and
// planning the claim costs more than running it when it leases a job or
// two: the pickup latency of a quiet Queue. The generic plan is the one a
// busy Queue's claims settle on anyway. The outcome report, Renew and
// Relinquish use it too, for a different reason (see reportSQL).
//
// It also turns JIT compilation off for the rest of the transaction. A
// generic plan's cost is estimated over the whole table, and once the job
// table grows large enough the claim's estimate passes jit_above_cost
// (100,000 by default): PostgreSQL then compiles the statement's
// expressions on every execution — about 400 functions, 0.3 to 1.8 s on a
// busy 2-core server, against a few milliseconds to run it — while the
// claim holds its limited Queues' rows (claimLockSQL). Every claim of those
// Queues queued behind it, missed its deadline (a third of the Lease), and
// the Queues stopped: the liveness failure of the 30-minute failover run
// (docs/torture.md). These statements touch a few rows each; compiling
// never pays for them.
const genericPlanSQL = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('jit', 'off', true)`

// claimSQL leases up to $3 due jobs over the Queues $2 in their given order.
// A Queue named twice counts once, at its first place; paused Queues are
// skipped. Each Queue is asked for no more than its room (the batch, or
// what its Concurrency Limit leaves) less the due jobs the Queues before it
// showed in this statement's snapshot, so a claim locks rows of a later
// Queue only when the earlier ones look short; under contention it may
// lease fewer than it could, never more. Each job's Attempt is charged, its
// Lease runs until now + $5 µs, and its claim enters the Transition Log.
// Rows come back with their Queue's place in $2, for sorting.
//
// The UPDATE finds the picked rows by the ctid their lock was taken on (a
// TID scan), not through the primary key again. The lock keeps that tuple
// from being updated or vacuumed until commit; a tuple whose locked version
// this statement's snapshot cannot see (a concurrent change that left it
// claimable) is simply not updated and stays Scheduled, so a claim may
// lease fewer, never a wrong job.
var claimSQL = `WITH RECURSIVE now AS (SELECT t, (extract(epoch FROM t) * 1000000)::bigint AS us
             FROM (SELECT coalesce($1::timestamptz, now()) AS t) c),
queues AS (
    SELECT DISTINCT ON (u.name) u.name, u.ord, q.concurrency_limit, q.rate_limit, q.rate_window, q.rate_count,
        CASE WHEN q.rate_limit > 0 THEN ` + rateWindowSQL + ` END AS ws,
        q.key_limit, q.key_rate_limit, q.key_rate_period, q.fair_claim, q.fair_turn,
        (q.key_limit > 0 OR q.key_rate_limit > 0 OR q.fair_claim) AS keyed,
        CASE WHEN q.key_rate_limit > 0 THEN ` + keyRateWindowSQL + ` END AS kws
    FROM unnest($2::text[]) WITH ORDINALITY AS u(name, ord)
    JOIN backwave.queue q ON q.name = u.name
    CROSS JOIN now
    WHERE NOT q.paused
    ORDER BY u.name, u.ord
),
qroom AS (
    SELECT qs.name, qs.ord, qs.keyed,
        least(CASE WHEN qs.concurrency_limit > 0
            THEN greatest(0, least($3::int, qs.concurrency_limit - (SELECT count(*) FROM backwave.job r
                                                                     WHERE r.queue = qs.name AND r.state = 'running')))
            ELSE $3::int END,
        CASE WHEN qs.rate_limit = 0 THEN $3::int
            WHEN qs.rate_window IS NULL OR qs.rate_window < qs.ws THEN qs.rate_limit
            WHEN qs.rate_window = qs.ws THEN greatest(0, qs.rate_limit - qs.rate_count)
            ELSE 0 END) AS n
    FROM queues qs
),` + keyClaimSQL + `
room AS (
    SELECT r.name, r.ord, r.n,
        CASE WHEN r.keyed THEN (SELECT count(*) FROM kcand c WHERE c.name = r.name AND NOT c.marker)
        ELSE (SELECT count(*) FROM (SELECT 1 FROM backwave.job d
                                    WHERE d.queue = r.name AND d.state = 'scheduled'
                                      AND d.scheduled_at <= coalesce($1::timestamptz, now())
                                    ORDER BY d.scheduled_at, d.id
                                    LIMIT $3::int) due) END AS due
    FROM qroom r
),
budget AS (
    SELECT r.name, r.ord,
        greatest(0, least(r.n, $3::int - coalesce(sum(least(r.n, r.due)) OVER (
            ORDER BY r.ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0))) AS n
    FROM room r
),
candidate AS (
    SELECT c.ctid, c.id, c.scheduled_at, b.ord
    FROM budget b JOIN queues qs ON qs.name = b.name AND NOT qs.keyed, now, LATERAL (
        SELECT j.ctid, j.id, j.scheduled_at FROM backwave.job j
        WHERE j.queue = b.name AND j.state = 'scheduled' AND j.scheduled_at <= now.t
        ORDER BY j.scheduled_at, j.id
        LIMIT b.n
        FOR UPDATE SKIP LOCKED
    ) c
    WHERE b.n > 0
),` + keyPickSQL + `
picked AS (
    SELECT c.ctid, c.id, c.ord, 0::bigint AS rnd, c.scheduled_at FROM candidate c
    UNION ALL
    SELECT k.ctid, k.id, k.ord, k.rnd, k.scheduled_at FROM klocked k
    ORDER BY 3, 4, 5, 2 LIMIT $3::int
),
claimed AS (
    UPDATE backwave.job j
    SET state = 'running', attempt = j.attempt + 1, worker = $4::text,
        lease_expires_at = now.t + $5::bigint * interval '1 microsecond'
    FROM now
    WHERE j.ctid = ANY (ARRAY(SELECT p.ctid FROM picked p))
    RETURNING j.*, now.t AS now
),
rated AS (
    UPDATE backwave.queue q
    SET rate_count = CASE WHEN c.rl = 0 THEN q.rate_count WHEN q.rate_window = c.ws THEN q.rate_count + c.k ELSE c.k END,
        rate_window = CASE WHEN c.rl = 0 THEN q.rate_window ELSE c.ws END,
        fair_turn = CASE WHEN c.fair THEN q.fair_turn + c.k ELSE q.fair_turn END
    FROM (SELECT qs.name, qs.ws, qs.rate_limit AS rl, qs.fair_claim AS fair, count(*) AS k FROM claimed j JOIN queues qs ON qs.name = j.queue
          WHERE qs.rate_limit > 0 OR qs.fair_claim GROUP BY qs.name, qs.ws, qs.rate_limit, qs.fair_claim) c
    WHERE q.name = c.name
),` + keyRatedSQL + `
logged AS (
    INSERT INTO backwave.job_transition (job_id, at, from_state, state, via, attempt)
    SELECT c.id, c.now, 'scheduled', 'running', 'claim', c.attempt FROM claimed c WHERE $6::bool
),
trimmed AS (` + trimSQL("claimed", "$6") + `)
SELECT ` + jobColumns + `, p.ord, p.rnd FROM claimed j JOIN picked p ON p.id = j.id
UNION ALL
SELECT 0, '', '', 'scheduled', 0, 0, now.t, now.t, NULL, '', '', NULL, NULL, false, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ` + keyReopenRow + `
FROM kreopen r, now WHERE r.ends IS NOT NULL`

// JobClaim leases up to p.Limit due jobs to p.Worker in one transaction,
// charging each one's next Attempt and running its Lease until the store's
// now plus p.LeaseDuration. Queues are taken in the given order (a Queue
// named twice counts once); within a Queue jobs go in due order, ties by id.
// Paused Queues are skipped, and a Queue with a Concurrency Limit yields no
// more jobs than leave its Running count, across every node, at the limit.
// The jobs are returned in claim order.
func (s *Store) JobClaim(ctx context.Context, p store.ClaimParams) ([]job.Job, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	var jobs []job.Job
	var ords []int64 // each job's Queue's place in p.Queues, for sorting
	var rnds []int64 // each job's place in its keyed Queue's claim order (0 in any other Queue), for sorting
	var reopen, keyReopen int64
	// One row buffer and one list of scan destinations serve every row.
	var r jobRow
	var ord, rnd int64
	dest := r.dest(&ord, &rnd)
	claim, claimArgs := claimStatement(p.Skip,
		[]any{s.nowArg(), p.Queues, int32(min(p.Limit, 1<<31-1)), string(p.Worker), micros(p.LeaseDuration), s.opts.History.Records()})
	stmts := []stmt{
		{sql: genericPlanSQL},
		{sql: s.sql(claimLockSQL), args: []any{p.Queues}},
		{
			sql:  s.sql(claim),
			args: claimArgs,
			each: func(scan scanFunc) error {
				r = jobRow{}
				if err := scan(dest...); err != nil {
					return err
				}
				if ord == keyReopenOrd {
					keyReopen = rnd
					return nil
				}
				j, err := r.job()
				if err != nil {
					return err
				}
				if jobs == nil { // sized once, at the first row
					jobs, ords = make([]job.Job, 0, min(p.Limit, 1024)), make([]int64, 0, min(p.Limit, 1024))
					rnds = make([]int64, 0, min(p.Limit, 1024))
				}
				jobs, ords, rnds = append(jobs, j), append(ords, ord), append(rnds, rnd)
				return nil
			},
		},
	}
	if p.Reopen != nil {
		stmts = append(stmts, stmt{
			sql:  s.sql(rateReopenSQL),
			args: []any{s.nowArg(), p.Queues},
			each: func(scan scanFunc) error { return scan(&reopen) },
		})
	}
	err := s.db.batch(ctx, stmts...)
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("claim for %s", p.Worker), err)
	}
	sort.Sort(claimOrder{jobs: jobs, ords: ords, rnds: rnds}) // in place: no second copy of the batch
	if p.Reopen != nil {
		if keyReopen > 0 && (reopen == 0 || keyReopen < reopen) {
			reopen = keyReopen
		}
		*p.Reopen = time.Duration(reopen) * time.Microsecond
	}
	return jobs, nil
}

// claimOrder sorts claimed jobs by their Queue's place, then their place
// in a keyed Queue's claim order (0 for every job of any other Queue), then
// due time, then id, keeping each job's places alongside it.
type claimOrder struct {
	jobs []job.Job
	ords []int64
	rnds []int64
}

func (o claimOrder) Len() int { return len(o.jobs) }

func (o claimOrder) Less(a, b int) bool {
	if o.ords[a] != o.ords[b] {
		return o.ords[a] < o.ords[b]
	}
	if o.rnds[a] != o.rnds[b] {
		return o.rnds[a] < o.rnds[b]
	}
	if c := o.jobs[a].ScheduledAt.Compare(o.jobs[b].ScheduledAt); c != 0 {
		return c < 0
	}
	return o.jobs[a].ID < o.jobs[b].ID
}

func (o claimOrder) Swap(a, b int) {
	o.jobs[a], o.jobs[b] = o.jobs[b], o.jobs[a]
	o.ords[a], o.ords[b] = o.ords[b], o.ords[a]
	o.rnds[a], o.rnds[b] = o.rnds[b], o.rnds[a]
}
