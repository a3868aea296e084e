-- compat: n-1
-- Unique keys. Additive: one new table, its index, and a trigger on the job
-- table; old code never writes the table, and the trigger keeps it right
-- whoever ends a job.
--
-- A key row is the job holding one unique key. expires_at is NULL while the
-- key is held until its job first ends terminal (scope while-live), or the
-- instant it becomes free (scope period). The primary key is what enforces
-- the rule: an insert takes its keys with one INSERT … ON CONFLICT (key) DO
-- UPDATE that keeps a held row's holder and replaces an expired one, in the
-- statement that inserts the jobs (store/postgres/unique.go).
CREATE TABLE backwave.job_unique (
    key        text PRIMARY KEY,
    job_id     bigint NOT NULL,
    expires_at timestamptz
);

-- The while-live keys by holder, for the release trigger.
CREATE INDEX job_unique_live ON backwave.job_unique (job_id) WHERE expires_at IS NULL;

-- A job that ends terminal frees the while-live key it holds, in the
-- statement that ends it, whichever statement that is: one DELETE per
-- statement over its changed rows, like the count triggers, skipped at
-- once when no while-live key is held at all. A key row names a live job
-- only (a job gives its key up for good when it ends), so the new state
-- alone tells which rows to free. The rows are locked in key order, the
-- order an insert takes its keys in, so an outcome batch and an insert
-- batch that share keys queue on each other instead of deadlocking.
CREATE FUNCTION backwave.job_unique_release() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM backwave.job_unique WHERE expires_at IS NULL) THEN
        DELETE FROM backwave.job_unique u
        WHERE u.key IN (
            SELECT k.key FROM backwave.job_unique k JOIN new_rows n ON n.id = k.job_id
            WHERE k.expires_at IS NULL
              AND n.state IN ('succeeded', 'dead_lettered', 'cancelled', 'quarantined')
            ORDER BY k.key
            FOR UPDATE OF k);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER job_unique_release AFTER UPDATE ON backwave.job
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION backwave.job_unique_release();
