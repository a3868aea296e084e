-- compat: n-1
-- BackWave Networked Adapter schema, version 8: each job's trace context.
-- Additive: one new table and one trigger; old code never writes the
-- table, and the trigger removes a row with its job whoever deletes it.
--
-- A row holds the trace context a job was enqueued with (a JSON object of
-- text propagation fields, store.EncodeTraceContext), written once by the
-- insert statement and only for jobs that have one. It lives beside the
-- hot row, as the payload does, so claims and outcomes never rewrite it.
CREATE TABLE backwave.job_trace (
    job_id        bigint PRIMARY KEY,
    trace_context text   NOT NULL
);

CREATE FUNCTION backwave.job_trace_purge() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM backwave.job_trace t USING old_rows o WHERE t.job_id = o.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER job_trace_purge AFTER DELETE ON backwave.job
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION backwave.job_trace_purge();
