-- compat: n-1
-- BackWave Embedded Adapter schema, version 6: unique keys. Additive: one
-- new table, its index and one trigger; old code never writes the table,
-- and the trigger keeps it right whoever ends a job.
--
-- A key row is the job holding one unique key. expires_at is NULL while
-- the key is held until its job first ends terminal (scope while-live), or
-- the microsecond at which it becomes free (scope period). The primary key
-- is what enforces the rule: an insert takes a key with an upsert that
-- replaces an expired row and leaves a held one alone, in the transaction
-- that inserts the job (store/sqlite/unique.go).
CREATE TABLE backwave_job_unique (
	key        TEXT    PRIMARY KEY,
	job_id     INTEGER NOT NULL,
	expires_at INTEGER
) WITHOUT ROWID;

-- The while-live keys by holder, for the trigger below.
CREATE INDEX backwave_job_unique_live ON backwave_job_unique (job_id) WHERE expires_at IS NULL;

-- A job that ends terminal (states 4 to 7) frees the while-live key it
-- holds, in the statement that ends it, whichever statement that is.
CREATE TRIGGER backwave_job_unique_release AFTER UPDATE OF state ON backwave_job
WHEN NEW.state IN (4, 5, 6, 7) AND OLD.state IN (1, 2, 3)
BEGIN
	DELETE FROM backwave_job_unique WHERE job_id = NEW.id AND expires_at IS NULL;
END;
