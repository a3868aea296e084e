-- compat: breaking
-- (The first schema: no earlier build runs on it.)
-- The first schema of the Networked Adapter. Every name is qualified with the
-- literal schema backwave, which the store renames to its Schema Name.

CREATE TABLE backwave.queue (
    name              text PRIMARY KEY,
    paused            boolean NOT NULL DEFAULT false,
    concurrency_limit integer NOT NULL DEFAULT 0 CHECK (concurrency_limit >= 0)
);

CREATE SEQUENCE backwave.job_id_seq AS bigint;

-- The hot row: small, rewritten once per state change. The payload lives in
-- job_payload, written once; Tags live in job_tag.
CREATE TABLE backwave.job (
    id               bigint PRIMARY KEY DEFAULT nextval('backwave.job_id_seq'),
    queue            text NOT NULL,
    wire_name        text NOT NULL,
    state            text NOT NULL CHECK (state IN ('scheduled', 'awaiting_parent', 'running',
                         'succeeded', 'dead_lettered', 'cancelled', 'quarantined')),
    attempt          integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL CHECK (max_attempts >= 1),
    scheduled_at     timestamptz NOT NULL,
    created_at       timestamptz NOT NULL,
    finalized_at     timestamptz,
    retry_cause      text NOT NULL DEFAULT '' CHECK (retry_cause IN ('', 'handler_failed', 'lease_expired')),
    cancel_cause     text NOT NULL DEFAULT '' CHECK (cancel_cause IN ('', 'operator', 'parent_failure')),
    worker           text,
    lease_expires_at timestamptz,
    cancel_requested boolean NOT NULL DEFAULT false,
    output           bytea,
    CHECK ((state = 'running') = (worker IS NOT NULL AND lease_expires_at IS NOT NULL))
);

ALTER SEQUENCE backwave.job_id_seq OWNED BY backwave.job.id;

-- The claimable index: due Scheduled jobs per Queue, in claim order.
CREATE INDEX job_scheduled ON backwave.job (queue, scheduled_at, id) WHERE state = 'scheduled';

-- Running jobs per Queue: Concurrency-Limit counts and lease-expiry sweeps.
CREATE INDEX job_running ON backwave.job (queue, lease_expires_at) WHERE state = 'running';

CREATE TABLE backwave.job_payload (
    job_id  bigint PRIMARY KEY,
    payload bytea NOT NULL
);

-- A Label has the empty key; a Keyed Tag a non-empty one.
CREATE TABLE backwave.job_tag (
    job_id bigint NOT NULL,
    key    text NOT NULL,
    value  text NOT NULL CHECK (value <> ''),
    PRIMARY KEY (job_id, key, value)
);

-- The Transition Log: one entry per state change, in seq order per job.
CREATE TABLE backwave.job_transition (
    job_id         bigint NOT NULL,
    seq            bigint GENERATED ALWAYS AS IDENTITY,
    at             timestamptz NOT NULL,
    from_state     text NOT NULL,
    state          text NOT NULL,
    via            text NOT NULL,
    attempt        integer NOT NULL,
    failure_detail text,
    PRIMARY KEY (job_id, seq)
);
