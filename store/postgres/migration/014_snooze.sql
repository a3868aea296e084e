-- compat: n-1
-- Snooze: a job row counts the snoozes applied to it (Transition Log via
-- 'snooze'), so the Driver can hold a handler to its snooze cap. A snooze
-- also moves attempt_base up by one, so the Attempt it used is not charged;
-- that needs no column of its own. Additive: a column with a constant
-- default (no row is rewritten); code one release behind never snoozes
-- and never reads it.

ALTER TABLE backwave.job ADD COLUMN snoozes integer NOT NULL DEFAULT 0 CHECK (snoozes >= 0);
