-- compat: n-1
-- Additive: a node one release behind inserts no Dependencies and its jobs
-- get pending_parents 0.
-- Dependencies: the countdown latch of a job inserted with parents.
--
-- Codes (fixed by the adapter, never by Go enum order):
--   mode: 0 on_success, 1 on_any_terminal

-- pending_parents is the latch of an Awaiting-Parent job (state 2): how many
-- of its parent edges are not counted yet. It moves only while the job
-- waits; the job leaves state 2 when it reaches zero (released to
-- Scheduled) or when an on-success parent fails (Cancelled).
ALTER TABLE backwave_job ADD COLUMN pending_parents INTEGER NOT NULL DEFAULT 0;

-- One row per (dependent, parent) edge. Edges are static: written at the
-- dependent's insert, never changed but for counted, which turns 1 once,
-- when the parent first reaches a terminal state (or at the insert, for a
-- parent terminal already). mode is the dependent's mode, the same on every
-- edge of one dependent. A parent's id is always below its dependent's.
CREATE TABLE backwave_job_dependency (
	job_id    INTEGER NOT NULL,
	parent_id INTEGER NOT NULL,
	mode      INTEGER NOT NULL,
	counted   INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (job_id, parent_id),
	CHECK (parent_id < job_id)
) WITHOUT ROWID;

-- A parent's dependents: the latch release after its outcome, and the
-- graph view.
CREATE INDEX backwave_job_dependency_parent ON backwave_job_dependency (parent_id, job_id);
