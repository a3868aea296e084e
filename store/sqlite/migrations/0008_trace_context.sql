-- compat: n-1
-- BackWave Embedded Adapter schema, version 8: each job's trace context.
-- Additive: one new table and one trigger; old code never writes the
-- table, and the trigger removes a row with its job whoever deletes it.
--
-- A row holds the trace context a job was enqueued with (a JSON object of
-- text propagation fields, store.EncodeTraceContext), written once at
-- insert and only for jobs that have one. It lives beside the hot row, as
-- the payload does, so claims and outcomes never rewrite it.
CREATE TABLE backwave_job_trace (
	job_id        INTEGER PRIMARY KEY,
	trace_context TEXT    NOT NULL
);

CREATE TRIGGER backwave_job_trace_purge AFTER DELETE ON backwave_job
BEGIN
	DELETE FROM backwave_job_trace WHERE job_id = OLD.id;
END;
