-- compat: n-1
-- BackWave Embedded Adapter schema, version 4: Recurring Schedules and
-- retention. Additive: new tables and indexes only.
--
-- Codes:
--   catch_up: 0 skip, 1 coalesce
--   kind:     1 minted, 2 made_up, 3 skipped, 4 triggered
--   reason:   0 none, 1 overlap, 2 missed

-- One row per Recurring Schedule: its definition (the job template
-- included: Tags as a JSON array of [key, value] pairs) and its minting
-- state. Every change bumps revision; a mint plan applies only to the
-- revision it was made from.
CREATE TABLE backwave_schedule (
	name         TEXT    PRIMARY KEY,
	spec         TEXT    NOT NULL,
	zone         TEXT    NOT NULL DEFAULT '',
	wire_name    TEXT    NOT NULL,
	queue        TEXT    NOT NULL,
	payload      BLOB,
	max_attempts INTEGER NOT NULL,
	tags         TEXT    NOT NULL DEFAULT '[]',
	catch_up     INTEGER NOT NULL DEFAULT 0,
	no_overlap   INTEGER NOT NULL DEFAULT 0,
	paused       INTEGER NOT NULL DEFAULT 0,
	revision     INTEGER NOT NULL,
	cursor_at    INTEGER NOT NULL,
	last_job_id  INTEGER,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
) WITHOUT ROWID;

-- What became of each occurrence: minted, made up, skipped (visibly, with
-- a reason), or an operator's trigger.
CREATE TABLE backwave_schedule_occurrence (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	schedule    TEXT    NOT NULL,
	kind        INTEGER NOT NULL,
	at          INTEGER NOT NULL,
	first_at    INTEGER NOT NULL,
	reason      INTEGER NOT NULL DEFAULT 0,
	job_id      INTEGER,
	actor       TEXT    NOT NULL DEFAULT '',
	recorded_at INTEGER NOT NULL
);

-- The unique key of minting: one record per (schedule, occurrence
-- instant), so no interleaving of nodes mints an occurrence twice.
CREATE UNIQUE INDEX backwave_schedule_occurrence_at ON backwave_schedule_occurrence (schedule, at) WHERE kind <> 4;

CREATE INDEX backwave_schedule_occurrence_seq ON backwave_schedule_occurrence (schedule, seq);

-- Purging a job deletes its occurrence record.
CREATE INDEX backwave_schedule_occurrence_job ON backwave_schedule_occurrence (job_id) WHERE job_id IS NOT NULL;

-- Terminal jobs by when they became terminal: the retention sweeps.
CREATE INDEX backwave_job_finalized ON backwave_job (state, finalized_at) WHERE finalized_at IS NOT NULL;
