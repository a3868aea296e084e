-- compat: n-1
-- BackWave Embedded Adapter schema, version 12: a job row says whether it
-- holds a while-live unique key, so the trigger that frees such keys runs
-- its DELETE only for those jobs instead of for every job that ends (the
-- per-row DELETE cost an outcome about a third of its time). Additive: a
-- column with a constant default (no row is rewritten), two triggers on the
-- key table and the release trigger replaced by one that reads the column.
-- Code one release behind takes and binds keys as it always did; the key
-- table's triggers mark its jobs too, so its keys are freed as before.
--
-- One step: the marks of the keys held now are written together with the
-- triggers that keep them from then on, so no key is bound between the two.

ALTER TABLE backwave_job ADD COLUMN unique_live INTEGER NOT NULL DEFAULT 0;

-- A key row names its holder when it is bound (unique.go: take with the
-- placeholder 0, insert the job, bind); a while-live key (expires_at NULL)
-- marks the job that holds it.
CREATE TRIGGER backwave_job_unique_mark_insert AFTER INSERT ON backwave_job_unique
WHEN NEW.expires_at IS NULL AND NEW.job_id <> 0
BEGIN
	UPDATE backwave_job SET unique_live = 1 WHERE id = NEW.job_id AND unique_live = 0;
END;

CREATE TRIGGER backwave_job_unique_mark_bind AFTER UPDATE OF job_id ON backwave_job_unique
WHEN NEW.expires_at IS NULL AND NEW.job_id <> 0
BEGIN
	UPDATE backwave_job SET unique_live = 1 WHERE id = NEW.job_id AND unique_live = 0;
END;

UPDATE backwave_job SET unique_live = 1
WHERE id IN (SELECT job_id FROM backwave_job_unique WHERE expires_at IS NULL);

DROP TRIGGER backwave_job_unique_release;

-- A job that ends terminal (states 4 to 7) frees the while-live key it
-- holds, in the statement that ends it, whichever statement that is; a job
-- that holds none skips the DELETE.
CREATE TRIGGER backwave_job_unique_release AFTER UPDATE OF state ON backwave_job
WHEN NEW.unique_live = 1 AND NEW.state IN (4, 5, 6, 7) AND OLD.state IN (1, 2, 3)
BEGIN
	DELETE FROM backwave_job_unique WHERE job_id = NEW.id AND expires_at IS NULL;
END;
