-- compat: n-1
-- BackWave MariaDB adapter schema, version 8: a Queue's Retrying count
-- (QueueBacklog: the Overview, the Queues page, /metrics) reads that
-- Queue's Retrying jobs from an index alone. Before it the count walked
-- the Queue's whole Scheduled range of backwave_job_due and read each row
-- for its Retry Cause, as the other adapters' did before their own
-- Retrying-by-Queue index (docs/dashboard.md, the 10⁷-job timings). MySQL
-- has no partial index, so the Retry Cause is a key column. Additive: code
-- one release behind never reads the index.
--
-- One ALTER guarded by IF NOT EXISTS: MariaDB commits each DDL statement
-- on its own, so a migration cut short is run again and finds done what
-- was done. InnoDB builds the index online (ALGORITHM=INPLACE, writes
-- allowed), in one scan of the job table.
ALTER TABLE backwave_job
	ADD KEY IF NOT EXISTS backwave_job_retrying (queue, state, retry_cause);
