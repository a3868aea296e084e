-- compat: n-1
-- BackWave Embedded Adapter schema, version 14: a job row counts the
-- snoozes applied to it (core.ViaSnooze, stored as via code 14 in the
-- Transition Log), so the Driver can hold a handler to its snooze cap. A
-- snooze also moves attempt_base up by one, so the Attempt it used is not
-- charged; that needs no column of its own. Additive: a column with a
-- constant default (no row is rewritten); code one release behind never
-- snoozes and never reads it.

ALTER TABLE backwave_job ADD COLUMN snoozes INTEGER NOT NULL DEFAULT 0;
