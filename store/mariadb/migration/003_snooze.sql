-- compat: n-1
-- BackWave MariaDB / MySQL adapter schema, version 3: a job row counts the
-- snoozes applied to it, so the Driver can hold a handler to its snooze
-- cap. A snooze is recorded in the Transition Log with via code 14
-- (snooze); it also moves attempt_base up by one, so the Attempt it used is
-- not charged, which needs no column of its own. Additive: a column with a
-- constant default; code one release behind never snoozes and never reads
-- it.

ALTER TABLE backwave_job ADD COLUMN snoozes INT NOT NULL DEFAULT 0;
