-- compat: n-1
-- BackWave MariaDB adapter schema, version 6: Terminal Causes, why a
-- Dead-Lettered or Quarantined job ended so. Additive: a nullable column on
-- the job table and no index. Code one release behind never writes it, so a
-- job it finalizes carries none, and its requeue leaves a stale cause on the
-- Scheduled row, which this release reads but never acts on; this release
-- writes the column with every state change it makes.
--
-- terminal_cause is job.TerminalCause's stored name: ceiling_reached or
-- permanent_failure on a Dead-Lettered job, no_handler or
-- undecodable_payload on a Quarantined one, NULL on every other.
ALTER TABLE backwave_job
	ADD COLUMN IF NOT EXISTS terminal_cause VARCHAR(32) NULL;
