-- compat: n-1
-- Additive: a node one release behind inserts no Dependencies and its jobs
-- get pending_parents 0.
-- Dependencies: the countdown latch of a job inserted with parents.

-- pending_parents is the latch of an Awaiting-Parent job: how many of its
-- parent edges are not counted yet. It moves only while the job waits; the
-- job leaves awaiting_parent when it reaches zero (released to scheduled) or
-- when an on-success parent fails (cancelled). Adding a column with a
-- constant default rewrites no row, so the migration is safe in place.
ALTER TABLE backwave.job ADD COLUMN pending_parents integer NOT NULL DEFAULT 0;

-- One row per (dependent, parent) edge. Edges are static: written at the
-- dependent's insert, never changed but for counted, which turns true once,
-- when the parent first reaches a terminal state (or at the insert, for a
-- parent terminal already). mode is the dependent's mode, the same on every
-- edge of one dependent. A parent's id is always below its dependent's.
CREATE TABLE backwave.job_dependency (
    job_id    bigint NOT NULL,
    parent_id bigint NOT NULL CHECK (parent_id < job_id),
    mode      text NOT NULL CHECK (mode IN ('on_success', 'on_any_terminal')),
    counted   boolean NOT NULL DEFAULT false,
    PRIMARY KEY (job_id, parent_id)
);

-- A parent's dependents: the latch release after its outcome, and the graph
-- view.
CREATE INDEX job_dependency_parent ON backwave.job_dependency (parent_id, job_id);
