-- compat: n-1
-- Recurring Schedules and retention. Additive: new tables and indexes only.

-- One row per Recurring Schedule: its definition (the job template
-- included, Tags as a JSON array of [key, value] pairs) and its minting
-- state. Every change bumps revision; a mint plan applies only to the
-- revision it was made from.
CREATE TABLE backwave.schedule (
    name         text PRIMARY KEY,
    spec         text NOT NULL,
    zone         text NOT NULL DEFAULT '',
    wire_name    text NOT NULL,
    queue        text NOT NULL,
    payload      bytea,
    max_attempts integer NOT NULL CHECK (max_attempts >= 1),
    tags         text NOT NULL DEFAULT '[]',
    catch_up     text NOT NULL DEFAULT 'skip' CHECK (catch_up IN ('skip', 'coalesce')),
    no_overlap   boolean NOT NULL DEFAULT false,
    paused       boolean NOT NULL DEFAULT false,
    revision     bigint NOT NULL,
    cursor_at    timestamptz NOT NULL,
    last_job_id  bigint,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

-- What became of each occurrence: minted, made up, skipped (visibly, with
-- a reason), or an operator's trigger.
CREATE TABLE backwave.schedule_occurrence (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    schedule    text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('minted', 'made_up', 'skipped', 'triggered')),
    at          timestamptz NOT NULL,
    first_at    timestamptz NOT NULL,
    reason      text NOT NULL DEFAULT '' CHECK (reason IN ('', 'overlap', 'missed')),
    job_id      bigint,
    actor       text NOT NULL DEFAULT '',
    recorded_at timestamptz NOT NULL
);

-- The unique key of minting: one record per (schedule, occurrence
-- instant), so no interleaving of nodes mints an occurrence twice.
CREATE UNIQUE INDEX schedule_occurrence_at ON backwave.schedule_occurrence (schedule, at) WHERE kind <> 'triggered';

CREATE INDEX schedule_occurrence_seq ON backwave.schedule_occurrence (schedule, seq);

-- Purging a job deletes its occurrence record.
CREATE INDEX schedule_occurrence_job ON backwave.schedule_occurrence (job_id) WHERE job_id IS NOT NULL;

-- Terminal jobs by when they became terminal: the retention sweeps. An
-- index step (see 002_monitor_operator.sql).
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_finalized ON backwave.job (state, finalized_at) WHERE finalized_at IS NOT NULL;
