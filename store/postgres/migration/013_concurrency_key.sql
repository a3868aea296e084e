-- compat: n-1
-- Concurrency Keys: a job's key, a Queue's Key Limit, Key Rate and Fair
-- Claim, the per-key window counts and the per-key job counts. Additive: a
-- nullable column on the job table and constant defaults on the Queue
-- settings table (adding them rewrites no row), new tables, the count
-- triggers' functions replaced by ones that also count keyed jobs, and two
-- index steps. Code one release behind never sets a key and never reads the
-- key settings: its inserts get no key, and its claims take from a keyed
-- Queue as from any other (a fleet mid-upgrade enforces the Key Limit, Key
-- Rate and Fair Claim only on its newer nodes' claims).
--
-- concurrency_key is the job's Concurrency Key; NULL is none (an empty key
-- is refused at insert). Jobs without a key are in no new index, so they
-- cost what they cost before (testdata/ledger.txt).
ALTER TABLE backwave.job ADD COLUMN concurrency_key text;

-- key_limit: at most that many Running jobs per key (0: none); key_rate_limit
-- per key_rate_period µs: at most that many starts per key per window (0 and
-- 0: none); fair_claim: a claim batch takes round-robin across keys, and
-- fair_turn is the Queue's last Fair Claim turn (store.KeyPolicy.Pick). A
-- claim of a Queue with any of them holds the Queue's row locked
-- (claimLockSQL), as for a Concurrency Limit, so the per-key counts are
-- exact under concurrent claimers (store/postgres/key.go).
ALTER TABLE backwave.queue
    ADD COLUMN key_limit integer NOT NULL DEFAULT 0,
    ADD COLUMN key_rate_limit integer NOT NULL DEFAULT 0,
    ADD COLUMN key_rate_period bigint NOT NULL DEFAULT 0,
    ADD COLUMN fair_claim boolean NOT NULL DEFAULT false,
    ADD COLUMN fair_turn bigint NOT NULL DEFAULT 0;

-- What a claim keeps per key (store.KeyStanding, less the Running count):
-- the start (µs since the Unix epoch) of the Key Rate window rate_count
-- counted claims in (NULL: none), and the Fair Claim turn of the last claim
-- that took one of the key's jobs. concurrency_key '' is the jobs without a
-- key (one key of their own for Fair Claim). Written only by claims holding
-- the Queue's row lock.
CREATE TABLE backwave.queue_key (
    queue           text NOT NULL,
    concurrency_key text NOT NULL,
    rate_window     bigint,
    rate_count      integer NOT NULL DEFAULT 0,
    turn            bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, concurrency_key)
);

-- Counts of keyed jobs by Queue, key and state, kept like job_count: the
-- statement triggers append deltas (only keyed rows make any), the store
-- folds them now and then, and a read sums both. The Monitor's top keys
-- read these, never the job table.
CREATE TABLE backwave.job_key_count (
    queue           text NOT NULL,
    concurrency_key text NOT NULL,
    state           text NOT NULL,
    n               bigint NOT NULL,
    PRIMARY KEY (queue, concurrency_key, state)
);

CREATE TABLE backwave.job_key_count_delta (
    queue           text NOT NULL,
    concurrency_key text NOT NULL,
    state           text NOT NULL,
    n               bigint NOT NULL
);

CREATE INDEX job_key_count_delta_queue ON backwave.job_key_count_delta (queue);

-- The count triggers' functions, now counting keyed rows per key too. The
-- triggers stay as they were (statement-level, one call per statement), so
-- a statement of jobs without keys makes no extra call and inserts no extra
-- row.
CREATE OR REPLACE FUNCTION backwave.job_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO backwave.job_count_delta (queue, state, n)
    SELECT r.queue, r.state, count(*) FROM new_rows r GROUP BY r.queue, r.state;
    INSERT INTO backwave.job_key_count_delta (queue, concurrency_key, state, n)
    SELECT r.queue, r.concurrency_key, r.state, count(*) FROM new_rows r
    WHERE r.concurrency_key IS NOT NULL GROUP BY r.queue, r.concurrency_key, r.state;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION backwave.job_count_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO backwave.job_count_delta (queue, state, n)
    SELECT d.queue, d.state, sum(d.n) FROM (
        SELECT r.queue, r.state, 1 AS n FROM new_rows r
        UNION ALL
        SELECT r.queue, r.state, -1 AS n FROM old_rows r
    ) d
    GROUP BY d.queue, d.state
    HAVING sum(d.n) <> 0;
    INSERT INTO backwave.job_key_count_delta (queue, concurrency_key, state, n)
    SELECT d.queue, d.concurrency_key, d.state, sum(d.n) FROM (
        SELECT r.queue, r.concurrency_key, r.state, 1 AS n FROM new_rows r WHERE r.concurrency_key IS NOT NULL
        UNION ALL
        SELECT r.queue, r.concurrency_key, r.state, -1 AS n FROM old_rows r WHERE r.concurrency_key IS NOT NULL
    ) d
    GROUP BY d.queue, d.concurrency_key, d.state
    HAVING sum(d.n) <> 0;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION backwave.job_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO backwave.job_count_delta (queue, state, n)
    SELECT r.queue, r.state, -count(*) FROM old_rows r GROUP BY r.queue, r.state;
    INSERT INTO backwave.job_key_count_delta (queue, concurrency_key, state, n)
    SELECT r.queue, r.concurrency_key, r.state, -count(*) FROM old_rows r
    WHERE r.concurrency_key IS NOT NULL GROUP BY r.queue, r.concurrency_key, r.state;
    RETURN NULL;
END
$$;

-- Index steps, built CONCURRENTLY after the transaction commits. Only keyed
-- jobs enter them.
--
-- A keyed Queue's claim finds its keys by skipping through job_key_due one
-- key at a time, and each key's due jobs in due order.
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_key_due ON backwave.job (queue, concurrency_key, scheduled_at, id)
    WHERE state = 'scheduled' AND concurrency_key IS NOT NULL;
-- Running jobs per key: the Key Limit's count.
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_key_running ON backwave.job (queue, concurrency_key)
    WHERE state = 'running' AND concurrency_key IS NOT NULL;
