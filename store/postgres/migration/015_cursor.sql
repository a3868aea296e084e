-- compat: n-1
-- BackWave Networked Adapter schema, version 15: each job's Cursor, the one
-- value a resumable job's handler saves so that its next Attempt resumes
-- from it. Additive: a new table and a trigger; old code never writes the
-- table, and the trigger removes a job's row with the job whoever deletes
-- it.
--
-- A cursor row is written by the lease renewal or the outcome that carried
-- it, under that statement's (worker, Attempt) fence, and read with the
-- job. It lives beside the hot row, as the payload and the progress do, so
-- claims and outcomes that carry no Cursor never rewrite it.
CREATE TABLE backwave.job_cursor (
    job_id  bigint      PRIMARY KEY,
    attempt integer     NOT NULL,
    value   bytea       NOT NULL,
    at      timestamptz NOT NULL
);

CREATE FUNCTION backwave.job_cursor_purge() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM backwave.job_cursor c USING old_rows o WHERE c.job_id = o.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER job_cursor_purge AFTER DELETE ON backwave.job
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION backwave.job_cursor_purge();
