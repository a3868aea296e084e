-- compat: n-1
-- BackWave Embedded Adapter schema, version 7: each job's trace context and
-- its handler's last progress. Additive: two new tables and one trigger;
-- old code never writes the tables, and the trigger removes their rows
-- with the job whoever deletes it.
--
-- A trace row holds the trace context a job was enqueued with (a JSON
-- object of text propagation fields, store.EncodeTraceContext), written
-- once at insert and only for jobs that have one. A progress row holds the
-- last progress a handler reported, written by the lease renewal that
-- carried it, under the renewal's (worker, Attempt) fence. Both live beside
-- the hot row, as the payload does, so claims and outcomes never rewrite
-- them.
CREATE TABLE backwave_job_trace (
	job_id        INTEGER PRIMARY KEY,
	trace_context TEXT    NOT NULL
);

CREATE TABLE backwave_job_progress (
	job_id   INTEGER PRIMARY KEY,
	attempt  INTEGER NOT NULL,
	fraction REAL    NOT NULL,
	note     TEXT    NOT NULL,
	at       INTEGER NOT NULL
);

CREATE TRIGGER backwave_job_side_purge AFTER DELETE ON backwave_job
BEGIN
	DELETE FROM backwave_job_trace WHERE job_id = OLD.id;
	DELETE FROM backwave_job_progress WHERE job_id = OLD.id;
END;
