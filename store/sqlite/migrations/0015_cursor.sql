-- compat: n-1
-- BackWave Embedded Adapter schema, version 15: each job's Cursor, the one
-- value a resumable job's handler saves so that its next Attempt resumes
-- from it. Additive: a new table and a trigger; old code never writes the
-- table, and the trigger removes a job's row with the job whoever deletes
-- it.
--
-- A cursor row is written by the lease renewal or the outcome that carried
-- it, under that call's (worker, Attempt) fence, and read with the job. It
-- lives beside the hot row, as the payload and the progress do, so claims
-- and outcomes that carry no Cursor never rewrite it.
CREATE TABLE backwave_job_cursor (
	job_id  INTEGER PRIMARY KEY,
	attempt INTEGER NOT NULL,
	value   BLOB    NOT NULL,
	at      INTEGER NOT NULL
);

CREATE TRIGGER backwave_job_cursor_purge AFTER DELETE ON backwave_job
BEGIN
	DELETE FROM backwave_job_cursor WHERE job_id = OLD.id;
END;
