-- compat: n-1
-- Monitor reads, audited Operator Actions and the Job History Policy.
-- Additive: a node one release behind keeps working (its inserts get
-- attempt_base 0 and are counted by the triggers; only Tag Suggest misses
-- the Tags of the jobs it inserts).
--
-- The statements on the job table come last: ALTER TABLE takes its
-- exclusive lock, held to commit, so everything that can run without it —
-- the new tables and the Tag backfill from job_tag — runs first, and claims
-- and reports wait only for the count backfill. The indexes on the job
-- tables are index steps, at the end.

-- Counts by Queue and state without counting the job table. Statement-level
-- triggers append one row per (Queue, state) a statement changed to
-- job_count_delta — an insert-only table, so concurrent claimers and
-- reporters never wait on a shared counter row — and the store folds the
-- deltas into job_count now and then (LeaseExpire). A read sums both tables
-- in one snapshot, so it is exact whether or not a fold has run.
CREATE TABLE backwave.job_count (
    queue text NOT NULL,
    state text NOT NULL,
    n     bigint NOT NULL,
    PRIMARY KEY (queue, state)
);

CREATE TABLE backwave.job_count_delta (
    queue text NOT NULL,
    state text NOT NULL,
    n     bigint NOT NULL
);

CREATE FUNCTION backwave.job_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO backwave.job_count_delta (queue, state, n)
    SELECT r.queue, r.state, count(*) FROM new_rows r GROUP BY r.queue, r.state;
    RETURN NULL;
END
$$;

CREATE FUNCTION backwave.job_count_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO backwave.job_count_delta (queue, state, n)
    SELECT d.queue, d.state, sum(d.n) FROM (
        SELECT r.queue, r.state, 1 AS n FROM new_rows r
        UNION ALL
        SELECT r.queue, r.state, -1 AS n FROM old_rows r
    ) d
    GROUP BY d.queue, d.state
    HAVING sum(d.n) <> 0;
    RETURN NULL;
END
$$;

CREATE FUNCTION backwave.job_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO backwave.job_count_delta (queue, state, n)
    SELECT r.queue, r.state, -count(*) FROM old_rows r GROUP BY r.queue, r.state;
    RETURN NULL;
END
$$;

-- Tag Suggest's dictionary: every distinct Tag a job ever carried, with its
-- case-folded display form (store.FoldTag, computed by the store), scanned
-- by prefix in byte order.
CREATE TABLE backwave.tag (
    key     text NOT NULL,
    value   text NOT NULL,
    folded  text NOT NULL,
    display text NOT NULL,
    PRIMARY KEY (key, value)
);

CREATE INDEX tag_folded ON backwave.tag (folded COLLATE "C", display COLLATE "C", key COLLATE "C", value COLLATE "C");

-- Existing Tags, folded by lower().
INSERT INTO backwave.tag (key, value, folded, display)
SELECT DISTINCT t.key, t.value,
    lower(CASE WHEN t.key = '' THEN t.value ELSE t.key || '=' || t.value END),
    CASE WHEN t.key = '' THEN t.value ELSE t.key || '=' || t.value END
FROM backwave.job_tag t
ON CONFLICT DO NOTHING;

-- The audit trail of Operator Actions: who, what, when, which job, Queue or
-- schedule.
CREATE TABLE backwave.audit (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at       timestamptz NOT NULL,
    actor    text NOT NULL,
    action   text NOT NULL,
    job_id   bigint,
    queue    text NOT NULL DEFAULT '',
    schedule text NOT NULL DEFAULT '',
    detail   text NOT NULL DEFAULT ''
);

CREATE INDEX audit_job ON backwave.audit (job_id, id) WHERE job_id IS NOT NULL;
CREATE INDEX audit_queue ON backwave.audit (queue, id);

-- The Attempt an operator requeue left the job at: the current life's
-- attempt budget counts Attempts above it (job.Job.Ceiling). Attempt numbers
-- themselves are never reused. From here to commit the job table is locked,
-- so the count backfill and the triggers see the same rows.
ALTER TABLE backwave.job ADD COLUMN attempt_base integer NOT NULL DEFAULT 0;

INSERT INTO backwave.job_count (queue, state, n)
SELECT queue, state, count(*) FROM backwave.job GROUP BY queue, state;

CREATE TRIGGER job_count_insert AFTER INSERT ON backwave.job
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION backwave.job_count_insert();

CREATE TRIGGER job_count_update AFTER UPDATE ON backwave.job
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION backwave.job_count_update();

CREATE TRIGGER job_count_delete AFTER DELETE ON backwave.job
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION backwave.job_count_delete();

-- Index steps: built after the transaction commits, CONCURRENTLY, so claims
-- and reports never wait for them. A schema migrated before they were index
-- steps already has them, built inside the transaction; it never runs this
-- file again, and IF NOT EXISTS would leave them alone if it did.

-- The Tag filter of job lists and the Tag Facet look jobs up by Tag.
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_tag_key_value ON backwave.job_tag (key, value, job_id);

-- Job lists by a settled state and the Retrying view, newest first: rows
-- enter these indexes once, so claims and outcomes do not pay for them.
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_dead_lettered ON backwave.job (id) WHERE state = 'dead_lettered';
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_cancelled ON backwave.job (id) WHERE state = 'cancelled';
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_quarantined ON backwave.job (id) WHERE state = 'quarantined';
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_retrying ON backwave.job (id) WHERE state = 'scheduled' AND retry_cause <> '';
