-- compat: n-1
-- BackWave Networked Adapter schema, version 7: each job's trace context
-- and its handler's last progress. Additive: two new tables and one
-- trigger; old code never writes the tables, and the trigger removes their
-- rows with the job whoever deletes it.
--
-- A trace row holds the trace context a job was enqueued with (a JSON
-- object of text propagation fields, store.EncodeTraceContext), written
-- once by the insert statement and only for jobs that have one. A progress
-- row holds the last progress a handler reported, written by the lease
-- renewal that carried it, under the renewal's (worker, Attempt) fence.
-- Both live beside the hot row, as the payload does, so claims and
-- outcomes never rewrite them.
CREATE TABLE backwave.job_trace (
    job_id        bigint PRIMARY KEY,
    trace_context text   NOT NULL
);

CREATE TABLE backwave.job_progress (
    job_id   bigint           PRIMARY KEY,
    attempt  integer          NOT NULL,
    fraction double precision NOT NULL,
    note     text             NOT NULL,
    at       timestamptz      NOT NULL
);

CREATE FUNCTION backwave.job_side_purge() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM backwave.job_trace t USING old_rows o WHERE t.job_id = o.id;
    DELETE FROM backwave.job_progress p USING old_rows o WHERE p.job_id = o.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER job_side_purge AFTER DELETE ON backwave.job
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION backwave.job_side_purge();
