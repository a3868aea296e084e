-- compat: breaking
-- (The first schema: no earlier build runs on it.)
-- BackWave Embedded Adapter schema, version 1.
--
-- Every name starts with the literal prefix backwave_; the adapter renames
-- it to the configured Schema Name at one choke point, so a store opened
-- with the default prefix runs exactly this text.
--
-- Codes (fixed by the adapter, never by Go enum order):
--   state:        1 scheduled, 2 awaiting_parent, 3 running, 4 succeeded,
--                 5 dead_lettered, 6 cancelled, 7 quarantined; 0 only as
--                 the from_state of an insert in the Transition Log
--   retry_cause:  0 none, 1 handler_failed, 2 lease_expired
--   cancel_cause: 0 none, 1 operator, 2 parent_failure
--   via:          1 insert, 2 claim, 3 succeed, 4 retry, 5 dead_letter,
--                 6 expire, 7 relinquish, 8 quarantine, 9 cancel,
--                 10 requeue, 11 release, 12 parent_failure
-- Times are integers: microseconds since the Unix epoch, from the store's
-- clock.

-- The hot row: rewritten on every claim, renewal and outcome, so it holds
-- only what scheduling reads. The payload, Job Output, Tags and Transition
-- Log live beside it.
CREATE TABLE backwave_job (
	id               INTEGER PRIMARY KEY AUTOINCREMENT,
	queue            TEXT    NOT NULL,
	wire_name        TEXT    NOT NULL,
	state            INTEGER NOT NULL,
	attempt          INTEGER NOT NULL DEFAULT 0,
	max_attempts     INTEGER NOT NULL,
	scheduled_at     INTEGER NOT NULL,
	created_at       INTEGER NOT NULL,
	finalized_at     INTEGER,
	retry_cause      INTEGER NOT NULL DEFAULT 0,
	cancel_cause     INTEGER NOT NULL DEFAULT 0,
	worker           TEXT,
	lease_expires_at INTEGER,
	cancel_requested INTEGER NOT NULL DEFAULT 0
);

-- The claimable set: due Scheduled jobs per Queue, in claim order.
CREATE INDEX backwave_job_due ON backwave_job (queue, scheduled_at, id) WHERE state = 1;

-- Running jobs per Queue: the Concurrency-Limit count and the lease-expiry
-- sweep.
CREATE INDEX backwave_job_running ON backwave_job (queue, lease_expires_at) WHERE state = 3;

-- The payload, written once at insert and never updated.
CREATE TABLE backwave_job_payload (
	job_id  INTEGER PRIMARY KEY,
	payload BLOB NOT NULL
);

-- Job Output, written atomically with the Succeeded transition.
CREATE TABLE backwave_job_output (
	job_id INTEGER PRIMARY KEY,
	output BLOB NOT NULL
);

-- Tags as a set: key '' is a Label, any other key a Keyed Tag.
CREATE TABLE backwave_job_tag (
	job_id INTEGER NOT NULL,
	key    TEXT    NOT NULL,
	value  TEXT    NOT NULL,
	PRIMARY KEY (job_id, key, value)
) WITHOUT ROWID;

CREATE INDEX backwave_job_tag_key_value ON backwave_job_tag (key, value);

-- The Transition Log: one row per state change, in the order applied.
CREATE TABLE backwave_job_transition (
	id             INTEGER PRIMARY KEY,
	job_id         INTEGER NOT NULL,
	at             INTEGER NOT NULL,
	from_state     INTEGER NOT NULL,
	state          INTEGER NOT NULL,
	via            INTEGER NOT NULL,
	attempt        INTEGER NOT NULL,
	failure_detail TEXT
);

CREATE INDEX backwave_job_transition_job ON backwave_job_transition (job_id, id);

-- Queue settings. A Queue is known once a job names it or a setting is
-- written for it.
CREATE TABLE backwave_queue (
	name              TEXT    PRIMARY KEY,
	paused            INTEGER NOT NULL DEFAULT 0,
	concurrency_limit INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
