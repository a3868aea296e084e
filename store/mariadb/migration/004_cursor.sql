-- compat: n-1
-- BackWave MariaDB / MySQL adapter schema, version 4: each job's Cursor,
-- the one value a resumable job's handler saves so that its next Attempt
-- resumes from it. Additive: three nullable columns that code one release
-- behind never reads nor writes.
--
-- The Cursor is written by the lease renewal or the outcome that carried
-- it, under that call's (worker, Attempt) fence, by an UPDATE of its own:
-- the rewrite of a job's mutable columns leaves it alone.
ALTER TABLE backwave_job
	ADD COLUMN cursor_attempt INT        NULL,
	ADD COLUMN cursor_value   MEDIUMBLOB NULL,
	ADD COLUMN cursor_at      BIGINT     NULL;
