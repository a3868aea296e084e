-- compat: n-1
-- Additive: a node one release behind keeps working (its inserts get
-- attempt_base 0 and are counted by the triggers; only Tag Suggest misses
-- the Tags of the jobs it inserts).
-- Monitor reads, audited Operator Actions and the Job History Policy.
--
-- Codes as in 0001. Audit actions are stored by name (store.AuditAction).
--
-- Each "-- step" line ends a step, committed on its own (migrate_step.go),
-- so the file's write lock is held for one backfill or one index build at a
-- time, not for all of them: the count backfill with the triggers that keep
-- it (they must see the same rows), the Tag backfill, then each index on the
-- job table.

-- The Attempt an operator requeue left the job at: the current life's
-- attempt budget counts Attempts above it (job.Job.Ceiling). Attempt
-- numbers themselves are never reused.
ALTER TABLE backwave_job ADD COLUMN attempt_base INTEGER NOT NULL DEFAULT 0;

-- Counts by Queue and state, kept by triggers in the same transaction as
-- every insert, state change and delete of a job row, so the Monitor's
-- counts read a handful of rows instead of counting the job table. Zero
-- rows stay (n = 0) and are skipped by the reads.
CREATE TABLE backwave_job_count (
	queue TEXT    NOT NULL,
	state INTEGER NOT NULL,
	n     INTEGER NOT NULL,
	PRIMARY KEY (queue, state)
) WITHOUT ROWID;

INSERT INTO backwave_job_count (queue, state, n)
SELECT queue, state, COUNT(*) FROM backwave_job GROUP BY queue, state;

CREATE TRIGGER backwave_job_count_insert AFTER INSERT ON backwave_job
BEGIN
	INSERT INTO backwave_job_count (queue, state, n) VALUES (NEW.queue, NEW.state, 1)
	ON CONFLICT (queue, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER backwave_job_count_update AFTER UPDATE OF state ON backwave_job
WHEN OLD.state <> NEW.state
BEGIN
	UPDATE backwave_job_count SET n = n - 1 WHERE queue = OLD.queue AND state = OLD.state;
	INSERT INTO backwave_job_count (queue, state, n) VALUES (NEW.queue, NEW.state, 1)
	ON CONFLICT (queue, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER backwave_job_count_delete AFTER DELETE ON backwave_job
BEGIN
	UPDATE backwave_job_count SET n = n - 1 WHERE queue = OLD.queue AND state = OLD.state;
END;

-- Tag Suggest's dictionary: every distinct Tag a job ever carried, with its
-- case-folded display form (store.FoldTag, computed by the store) for the
-- prefix range scan.
CREATE TABLE backwave_tag (
	key     TEXT NOT NULL,
	value   TEXT NOT NULL,
	folded  TEXT NOT NULL,
	display TEXT NOT NULL,
	PRIMARY KEY (key, value)
) WITHOUT ROWID;

CREATE INDEX backwave_tag_folded ON backwave_tag (folded, display, key, value);

-- step
-- Existing Tags, folded by SQLite's lower() (ASCII only).
INSERT OR IGNORE INTO backwave_tag (key, value, folded, display)
SELECT DISTINCT key, value,
	lower(CASE WHEN key = '' THEN value ELSE key || '=' || value END),
	CASE WHEN key = '' THEN value ELSE key || '=' || value END
FROM backwave_job_tag;

-- step
-- Job lists by a settled state and the Retrying view, newest first: rows
-- enter these indexes once, so claims and outcomes do not pay for them.
CREATE INDEX backwave_job_dead_lettered ON backwave_job (id) WHERE state = 5;
-- step
CREATE INDEX backwave_job_cancelled ON backwave_job (id) WHERE state = 6;
-- step
CREATE INDEX backwave_job_quarantined ON backwave_job (id) WHERE state = 7;
-- step
CREATE INDEX backwave_job_retrying ON backwave_job (id) WHERE state = 1 AND retry_cause <> 0;

-- step
-- The audit trail of Operator Actions: who, what, when, which job, Queue or
-- schedule.
CREATE TABLE backwave_audit (
	id       INTEGER PRIMARY KEY AUTOINCREMENT,
	at       INTEGER NOT NULL,
	actor    TEXT    NOT NULL,
	action   TEXT    NOT NULL,
	job_id   INTEGER,
	queue    TEXT    NOT NULL DEFAULT '',
	schedule TEXT    NOT NULL DEFAULT '',
	detail   TEXT    NOT NULL DEFAULT ''
);

CREATE INDEX backwave_audit_job ON backwave_audit (job_id, id) WHERE job_id IS NOT NULL;
CREATE INDEX backwave_audit_queue ON backwave_audit (queue, id);
