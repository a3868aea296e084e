-- compat: breaking
-- (The first schema: no earlier build runs on it.)
-- BackWave MariaDB / MySQL adapter schema, version 1.
--
-- Every name starts with the literal prefix backwave_; the adapter renames
-- it to the configured Schema Name (a table prefix) at one choke point.
--
-- Codes (fixed by the adapter, never by Go enum order), as the Embedded
-- Adapter's:
--   state:        1 scheduled, 2 awaiting_parent, 3 running, 4 succeeded,
--                 5 dead_lettered, 6 cancelled, 7 quarantined; 0 only as
--                 the from_state of an insert in the Transition Log
--   retry_cause:  0 none, 1 handler_failed, 2 lease_expired
--   cancel_cause: 0 none, 1 operator, 2 parent_failure
--   via:          1 insert, 2 claim, 3 succeed, 4 retry, 5 dead_letter,
--                 6 expire, 7 relinquish, 8 quarantine, 9 cancel,
--                 10 requeue, 11 release, 12 parent_failure, 13 workflow_retry
-- Times are BIGINT microseconds since the Unix epoch from the store's
-- clock; 0 stands for "none" where a time is optional.
-- Names, keys and Tags are VARBINARY: compared and ordered byte for byte,
-- as Go compares strings, whatever the server's default collation.

-- The writer row: every writing transaction locks it first (SELECT … FOR
-- UPDATE) and holds it to its commit, so writes commit one at a time, in
-- the order they took it. seq numbers the Transition Log in that order.
CREATE TABLE IF NOT EXISTS backwave_writer (
	id      TINYINT NOT NULL PRIMARY KEY,
	seq     BIGINT  NOT NULL,
	-- job_seq is the last job id handed out: ids too are allocated under
	-- the writer row, so a rolled-back insert hands its ids out again.
	job_seq BIGINT  NOT NULL,
	-- occ_seq is the last schedule occurrence record's Seq.
	occ_seq BIGINT  NOT NULL,
	-- workflow_seq is the last Workflow id handed out.
	workflow_seq BIGINT NOT NULL
) ENGINE=InnoDB;
INSERT IGNORE INTO backwave_writer (id, seq, job_seq, occ_seq, workflow_seq) VALUES (1, 0, 0, 0, 0);

CREATE TABLE IF NOT EXISTS backwave_job (
	id               BIGINT          NOT NULL PRIMARY KEY,
	queue            VARBINARY(128)  NOT NULL,
	wire_name        VARBINARY(128)  NOT NULL,
	state            TINYINT         NOT NULL,
	attempt          INT             NOT NULL DEFAULT 0,
	attempt_base     INT             NOT NULL DEFAULT 0,
	max_attempts     INT             NOT NULL,
	scheduled_at     BIGINT          NOT NULL,
	created_at       BIGINT          NOT NULL,
	finalized_at     BIGINT          NOT NULL DEFAULT 0,
	retry_cause      TINYINT         NOT NULL DEFAULT 0,
	cancel_cause     TINYINT         NOT NULL DEFAULT 0,
	worker           VARBINARY(512)  NOT NULL DEFAULT '',
	lease_expires_at BIGINT          NOT NULL DEFAULT 0,
	cancel_requested TINYINT         NOT NULL DEFAULT 0,
	payload          LONGBLOB        NULL,
	output           LONGBLOB        NULL,
	trace_context    TEXT            NULL,
	progress_attempt INT             NULL,
	progress_fraction DOUBLE         NULL,
	progress_note    VARBINARY(1024) NULL,
	progress_at      BIGINT          NULL,
	-- unique_key is the while-live key the job holds until it first ends
	-- terminal; '' if none.
	unique_key       VARBINARY(512)  NOT NULL DEFAULT '',
	-- dep_mode is the Dependency Mode code of a job with parents (0 none);
	-- dep_pending the parents its latch has not counted yet.
	dep_mode         TINYINT         NOT NULL DEFAULT 0,
	dep_pending      INT             NOT NULL DEFAULT 0,
	workflow_id      BIGINT          NOT NULL DEFAULT 0,
	schedule_name    VARBINARY(512)  NOT NULL DEFAULT '',
	KEY backwave_job_due (queue, state, scheduled_at, id),
	KEY backwave_job_running (state, queue, lease_expires_at),
	KEY backwave_job_finalized (state, finalized_at),
	KEY backwave_job_workflow (workflow_id, state)
) ENGINE=InnoDB;

-- Dependency edges: child waits on parent; counted once ever.
CREATE TABLE IF NOT EXISTS backwave_job_edge (
	child   BIGINT  NOT NULL,
	parent  BIGINT  NOT NULL,
	counted TINYINT NOT NULL DEFAULT 0,
	PRIMARY KEY (child, parent),
	KEY backwave_job_edge_parent (parent, child)
) ENGINE=InnoDB;

-- Tags as a set: k '' is a Label, any other k a Keyed Tag.
CREATE TABLE IF NOT EXISTS backwave_job_tag (
	job_id BIGINT         NOT NULL,
	k      VARBINARY(255) NOT NULL,
	v      VARBINARY(255) NOT NULL,
	PRIMARY KEY (job_id, k, v),
	KEY backwave_job_tag_kv (k, v)
) ENGINE=InnoDB;

-- The Transition Log. seq is allocated from backwave_writer.seq inside the
-- writing transaction, so seq order is commit order (doc.go).
CREATE TABLE IF NOT EXISTS backwave_transition (
	seq            BIGINT   NOT NULL PRIMARY KEY,
	job_id         BIGINT   NOT NULL,
	at             BIGINT   NOT NULL,
	from_state     TINYINT  NOT NULL,
	state          TINYINT  NOT NULL,
	via            TINYINT  NOT NULL,
	attempt        INT      NOT NULL,
	failure_detail TEXT     NULL,
	KEY backwave_transition_job (job_id, seq)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS backwave_queue (
	name              VARBINARY(128) NOT NULL PRIMARY KEY,
	paused            TINYINT        NOT NULL DEFAULT 0,
	concurrency_limit INT            NOT NULL DEFAULT 0,
	running           INT            NOT NULL DEFAULT 0,
	rate_limit        INT            NOT NULL DEFAULT 0,
	rate_period       BIGINT         NOT NULL DEFAULT 0,
	rate_window       BIGINT         NOT NULL DEFAULT 0,
	rate_count        INT            NOT NULL DEFAULT 0
) ENGINE=InnoDB;

-- The Monitor's counts, kept as jobs move.
CREATE TABLE IF NOT EXISTS backwave_job_count (
	queue VARBINARY(128) NOT NULL,
	state TINYINT        NOT NULL,
	n     BIGINT         NOT NULL,
	PRIMARY KEY (queue, state)
) ENGINE=InnoDB;

-- Unique keys held. until_at 0: held while live.
CREATE TABLE IF NOT EXISTS backwave_unique (
	ukey     VARBINARY(512) NOT NULL PRIMARY KEY,
	job_id   BIGINT         NOT NULL,
	until_at BIGINT         NOT NULL
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS backwave_audit (
	id      BIGINT         NOT NULL AUTO_INCREMENT PRIMARY KEY,
	at      BIGINT         NOT NULL,
	actor   VARBINARY(512) NOT NULL,
	action  VARBINARY(64)  NOT NULL,
	job_id  BIGINT         NOT NULL,
	queue   VARBINARY(128) NOT NULL,
	detail  TEXT           NOT NULL
) ENGINE=InnoDB;

-- Transition Observer registrations.
CREATE TABLE IF NOT EXISTS backwave_observer (
	name       VARBINARY(200) NOT NULL PRIMARY KEY,
	cursor_seq BIGINT         NOT NULL DEFAULT 0,
	holder     VARBINARY(255) NOT NULL DEFAULT '',
	token      BIGINT         NOT NULL DEFAULT 0,
	lease_until BIGINT        NOT NULL DEFAULT 0,
	seen_at    BIGINT         NOT NULL
) ENGINE=InnoDB;

-- The fleet registry: each Worker's Wire Names with their stamps.
CREATE TABLE IF NOT EXISTS backwave_fleet (
	worker    VARBINARY(255) NOT NULL,
	wire_name VARBINARY(128) NOT NULL,
	at        BIGINT         NOT NULL,
	PRIMARY KEY (worker, wire_name)
) ENGINE=InnoDB;

-- Recurring Schedules: def is the normalized ScheduleDef as JSON.
CREATE TABLE IF NOT EXISTS backwave_schedule (
	name       VARBINARY(512) NOT NULL PRIMARY KEY,
	def        LONGTEXT       NOT NULL,
	paused     TINYINT        NOT NULL DEFAULT 0,
	revision   BIGINT         NOT NULL,
	cursor_at  BIGINT         NOT NULL,
	last_job   BIGINT         NOT NULL DEFAULT 0,
	created_at BIGINT         NOT NULL,
	updated_at BIGINT         NOT NULL
) ENGINE=InnoDB;

-- Occurrence records. at_key is the occurrence instant of a minted,
-- made-up or skipped record (one per instant: minting is idempotent) and
-- NULL for a trigger.
CREATE TABLE IF NOT EXISTS backwave_occurrence (
	seq         BIGINT         NOT NULL PRIMARY KEY,
	schedule    VARBINARY(512) NOT NULL,
	kind        TINYINT        NOT NULL,
	at          BIGINT         NOT NULL,
	first       BIGINT         NOT NULL,
	reason      TINYINT        NOT NULL,
	job_id      BIGINT         NOT NULL,
	actor       VARBINARY(512) NOT NULL,
	recorded_at BIGINT         NOT NULL,
	at_key      BIGINT         NULL,
	UNIQUE KEY backwave_occurrence_at (schedule, at_key),
	KEY backwave_occurrence_job (job_id)
) ENGINE=InnoDB;

-- Workflows; their member counts by state are backwave_workflow_count.
CREATE TABLE IF NOT EXISTS backwave_workflow (
	id         BIGINT          NOT NULL PRIMARY KEY,
	name       VARBINARY(1024) NOT NULL,
	restart_of BIGINT          NOT NULL DEFAULT 0,
	created_at BIGINT          NOT NULL
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS backwave_workflow_count (
	workflow_id BIGINT  NOT NULL,
	state       TINYINT NOT NULL,
	n           BIGINT  NOT NULL,
	PRIMARY KEY (workflow_id, state)
) ENGINE=InnoDB;
