package postgres

import "github.com/backwave/backwave/store"

// Concurrency Keys in the claim (see Concurrency Key in the store package
// doc). A claimed Queue with a Key Limit, a Key Rate or Fair Claim is a
// keyed Queue; claimSQL takes from it through the CTEs here, and from
// every other Queue exactly as before.
//
//  1. keyscan finds the keys that have Scheduled jobs in each keyed Queue,
//     skipping through the index job_key_due one key at a time (one index
//     probe per key, whatever the number of jobs a key holds); keys adds
//     the jobs without a key, one key of their own, when the Queue has any
//     Scheduled (read from the counters, so that a Queue whose jobs all
//     carry keys never walks its due index looking for one without).
//  2. keyroom is each key's room: the Queue's room, less what the Key Limit
//     leaves (the key's Running count, from job_key_running) and the Key
//     Rate's window leaves (queue_key, the Rate Limit rule per key).
//  3. kcand reads, without locking, up to its room of each key's due jobs
//     in due order, numbering them within the key (rnd: the round of a Fair
//     Claim); their count is the keyed Queue's due count for the batch
//     budget, so a saturated key never starves the Queues after it.
//  4. kpick keeps the first of them the Queue's budget allows — in round
//     order with Fair Claim (round, then due time, then id), else in due
//     order — and klock locks exactly those, SKIP LOCKED (a CTE of its own, so
//     the lock runs once, each picked job found by its id), rechecking that
//     each is still Scheduled and due: under contention a claim may lease
//     fewer, never a job twice. Each locked job's place in its Queue's claim
//     order (rnd) sorts the batch and numbers Fair Claim's turns.
//  5. krated counts the leased jobs in their keys' windows.
//
// A claim of a Queue with a Key Limit or Key Rate holds the Queue's
// settings row locked (claimLockSQL), as for its Concurrency Limit, so the
// per-key counts it reads include every claim that committed before it:
// the key's counters are fenced as the Queue's are. Fair Claim alone
// counts nothing and takes no lock.
//
// The cost on the claim path: a Queue without a key setting runs the plain
// claim, unchanged (testdata/ledger.txt). A keyed Queue's claim costs one
// index probe per key with Scheduled jobs, one count of each key's Running
// jobs with a Key Limit, and reads at most its room of due jobs per key;
// it writes what the plain claim writes, plus one queue_key row per key
// leased from with a Key Rate.

// keyRateWindowSQL is rateWindowSQL for the Queue's Key Rate period.
const keyRateWindowSQL = `(now.us - ((now.us % q.key_rate_period) + q.key_rate_period) % q.key_rate_period)`

// keyClaimSQL are claimSQL's CTEs keyscan, keys, keyroom, kdue and kcand
// (see above); it follows qroom. A key's allowance is what its Key Limit
// and Key Rate leave within the Queue's room (the jobs without a key have
// neither); a key held below the Queue's room has one job more read than
// it may take, its marker, which says whether the key held back a due job
// while the claim still had room.
const keyClaimSQL = `
keyscan(name, key) AS (
    SELECT r.name, (SELECT j.concurrency_key FROM backwave.job j
                    WHERE j.queue = r.name AND j.state = 'scheduled' AND j.concurrency_key IS NOT NULL
                    ORDER BY j.concurrency_key LIMIT 1)
    FROM qroom r WHERE r.keyed AND r.n > 0
    UNION ALL
    SELECT k.name, (SELECT j.concurrency_key FROM backwave.job j
                    WHERE j.queue = k.name AND j.state = 'scheduled' AND j.concurrency_key IS NOT NULL
                      AND j.concurrency_key > k.key
                    ORDER BY j.concurrency_key LIMIT 1)
    FROM keyscan k WHERE k.key IS NOT NULL
),
keys AS (
    SELECT k.name, k.key FROM keyscan k WHERE k.key IS NOT NULL
    UNION ALL
    SELECT r.name, NULL::text FROM qroom r
    WHERE r.keyed AND r.n > 0
      AND (SELECT coalesce(sum(c.n), 0) FROM (SELECT n FROM backwave.job_count WHERE queue = r.name AND state = 'scheduled'
                                             UNION ALL
                                             SELECT n FROM backwave.job_count_delta WHERE queue = r.name AND state = 'scheduled') c)
        > (SELECT coalesce(sum(c.n), 0) FROM (SELECT n FROM backwave.job_key_count WHERE queue = r.name AND state = 'scheduled'
                                             UNION ALL
                                             SELECT n FROM backwave.job_key_count_delta WHERE queue = r.name AND state = 'scheduled') c)
),
keystand AS (
    SELECT k.name, k.key, r.n AS room,
        CASE WHEN k.key IS NULL OR qs.key_limit = 0 THEN r.n
            ELSE greatest(0, qs.key_limit - (SELECT count(*) FROM backwave.job x
                WHERE x.queue = k.name AND x.state = 'running' AND x.concurrency_key IS NOT NULL AND x.concurrency_key = k.key)) END AS lim,
        CASE WHEN k.key IS NULL OR qs.key_rate_limit = 0 THEN r.n
            WHEN w.rate_window IS NULL OR w.rate_window < qs.kws THEN qs.key_rate_limit
            WHEN w.rate_window = qs.kws THEN greatest(0, qs.key_rate_limit - w.rate_count)
            ELSE 0 END AS budget,
        CASE WHEN qs.key_rate_limit > 0 THEN greatest(qs.kws, coalesce(w.rate_window, qs.kws)) + qs.key_rate_period END AS ends,
        coalesce(w.turn, 0) AS turn
    FROM keys k
    JOIN qroom r ON r.name = k.name
    JOIN queues qs ON qs.name = k.name
    LEFT JOIN backwave.queue_key w ON w.queue = k.name AND w.concurrency_key = coalesce(k.key, '')
),
keyroom AS (
    SELECT s.name, s.key, s.lim, s.budget, s.ends, s.turn, least(s.room, s.lim, s.budget) AS allow,
        least(s.room, least(s.room, s.lim, s.budget) + 1) AS rd
    FROM keystand s
),
kdue AS (
    SELECT kr.name, kr.key, kr.allow, c.id, c.scheduled_at
    FROM keyroom kr, now, LATERAL (
        SELECT k.id, k.scheduled_at FROM backwave.job k
        WHERE k.queue = kr.name AND k.state = 'scheduled' AND k.concurrency_key IS NOT NULL AND k.concurrency_key = kr.key
          AND k.scheduled_at <= now.t
        ORDER BY k.scheduled_at, k.id
        LIMIT kr.rd
    ) c
    WHERE kr.key IS NOT NULL AND kr.rd > 0
    UNION ALL
    SELECT kr.name, NULL::text, kr.allow, c.id, c.scheduled_at
    FROM keyroom kr, now, LATERAL (
        SELECT n.id, n.scheduled_at FROM backwave.job n
        WHERE n.queue = kr.name AND n.state = 'scheduled' AND n.concurrency_key IS NULL
          AND n.scheduled_at <= now.t
        ORDER BY n.scheduled_at, n.id
        LIMIT kr.rd
    ) c
    WHERE kr.key IS NULL AND kr.rd > 0
),
kcand AS (
    SELECT d.name, d.key, d.id, d.scheduled_at, d.rnd, d.rnd > d.allow AS marker,
        first_value(d.scheduled_at) OVER w AS head_at, first_value(d.id) OVER w AS head_id
    FROM (SELECT d.*, row_number() OVER (PARTITION BY d.name, d.key ORDER BY d.scheduled_at, d.id) AS rnd FROM kdue d) d
    WINDOW w AS (PARTITION BY d.name, d.key ORDER BY d.scheduled_at, d.id)
),`

// keyPickSQL are claimSQL's CTEs korder, kpick, kreopen, klock, klocked and
// ktaken (see
// above); it follows candidate, the plain Queues' pick. korder puts each
// keyed Queue's candidates in claim order — with Fair Claim by round, the
// keys of a round in the order of their earliest due job; else in due
// order — and counts the takes before each: a job is taken, and a marker
// held back with room left, while fewer than the Queue's budget were taken
// before it. kreopen is the earliest end of a Key Rate window that held a
// marker back (KeyPick.Reopen), in µs since the Unix epoch.
const keyPickSQL = `
korder AS (
    SELECT c.name, c.key, c.id, c.marker, b.ord, b.n,
        CASE WHEN qs.fair_claim THEN c.rnd ELSE 0 END AS rnd, c.scheduled_at,
        CASE WHEN qs.fair_claim THEN kr.turn ELSE 0 END AS turn,
        CASE WHEN qs.fair_claim THEN c.head_at ELSE c.scheduled_at END AS at,
        CASE WHEN qs.fair_claim THEN c.head_id ELSE c.id END AS seq,
        coalesce(count(*) FILTER (WHERE NOT c.marker) OVER (PARTITION BY c.name
            ORDER BY CASE WHEN qs.fair_claim THEN c.rnd ELSE 0 END,
                     CASE WHEN qs.fair_claim THEN kr.turn ELSE 0 END,
                     CASE WHEN qs.fair_claim THEN c.head_at ELSE c.scheduled_at END,
                     CASE WHEN qs.fair_claim THEN c.head_id ELSE c.id END
            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before,
        kr.budget <= least(b.n, kr.lim) AND qs.key_rate_limit > 0 AND c.key IS NOT NULL AS by_rate, kr.ends
    FROM kcand c JOIN queues qs ON qs.name = c.name JOIN budget b ON b.name = c.name
    JOIN keyroom kr ON kr.name = c.name AND kr.key IS NOT DISTINCT FROM c.key
),
kpick AS (
    SELECT o.name, o.key, o.id, o.ord, o.rnd, o.turn, o.at, o.seq, o.scheduled_at FROM korder o WHERE NOT o.marker AND o.before < o.n
),
kreopen AS (
    SELECT min(o.ends) AS ends FROM korder o WHERE o.marker AND o.before < o.n AND o.by_rate
),
klock AS (
    SELECT j.ctid, j.id, k.name, k.key, k.ord, k.rnd, k.turn, k.at, k.seq, k.scheduled_at
    FROM kpick k JOIN backwave.job j ON j.id = k.id
    WHERE j.state = 'scheduled' AND j.scheduled_at <= coalesce($1::timestamptz, now())
    FOR UPDATE OF j SKIP LOCKED
),
klocked AS (
    SELECT l.ctid, l.id, l.name, l.key, l.ord, row_number() OVER (PARTITION BY l.name ORDER BY l.rnd, l.turn, l.at, l.seq) AS rnd,
        l.scheduled_at
    FROM klock l
),
ktaken AS (
    SELECT l.name, l.key, count(*) AS k, max(l.rnd) AS last FROM klocked l GROUP BY l.name, l.key
),`

// keyRatedSQL is claimSQL's CTE krated: what a claim records of each key
// it leased from (store.KeyTaken): with a Key Rate, the keyed jobs counted
// in their key's window; with Fair Claim, the key's turn, the Queue's turn
// before the claim plus the place of the key's last job in the claim
// (rated moves the Queue's turn on by the jobs leased).
const keyRatedSQL = `
krated AS (
    INSERT INTO backwave.queue_key AS w (queue, concurrency_key, rate_window, rate_count, turn)
    SELECT t.name, coalesce(t.key, ''),
        CASE WHEN qs.key_rate_limit > 0 AND t.key IS NOT NULL THEN qs.kws END,
        CASE WHEN qs.key_rate_limit > 0 AND t.key IS NOT NULL THEN t.k ELSE 0 END,
        CASE WHEN qs.fair_claim THEN qs.fair_turn + t.last ELSE 0 END
    FROM ktaken t JOIN queues qs ON qs.name = t.name
    WHERE ((qs.key_rate_limit > 0 AND t.key IS NOT NULL) OR qs.fair_claim)
      AND EXISTS (SELECT 1 FROM claimed)
    ON CONFLICT (queue, concurrency_key) DO UPDATE
    SET rate_count = CASE WHEN w.rate_window = excluded.rate_window THEN w.rate_count + excluded.rate_count ELSE excluded.rate_count END,
        rate_window = excluded.rate_window,
        turn = CASE WHEN excluded.turn > 0 THEN excluded.turn ELSE w.turn END
),`

// keyReopenOrd marks the one row claimSQL adds after the claimed jobs when
// a Key Rate held a job back (kreopen): not a job, but the claim's Key
// Rate Reopen, µs from now, in its round column.
const keyReopenOrd = -1

// keyReopenRow is that row's place and Reopen columns.
const keyReopenRow = `-1::bigint, r.ends - now.us`

// concurrencyKeys returns the jobs' Concurrency Keys for an insert, NULL
// for none, or nil when no job has one (the insert then writes none).
func concurrencyKeys(jobs []store.NewJob) []*string {
	var keys []*string
	for i, nj := range jobs {
		if nj.ConcurrencyKey == "" {
			continue
		}
		if keys == nil {
			keys = make([]*string, len(jobs))
		}
		keys[i] = &jobs[i].ConcurrencyKey
	}
	return keys
}
