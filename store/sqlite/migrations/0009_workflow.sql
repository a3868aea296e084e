-- compat: n-1
-- Workflows: the grouping and identity over jobs connected by Dependency
-- edges. Additive: two new tables, a nullable column on the job table (no
-- default to write, so no row is rewritten), a partial index and two
-- triggers. Code one release behind never sets workflow_id, so every job it
-- inserts is a member of no Workflow, and it ignores the new tables; when it
-- claims or reports a member a newer node inserted, the triggers below keep
-- the member counts right for it.
--
-- A Workflow's row holds only identity and config; its status is derived
-- from backwave_workflow_count, the members by state. The inserting
-- statement of new code counts a member's first state itself (an insert
-- trigger would also fire for every job of no Workflow); every later state
-- change, by any node of either release, is counted by the update trigger,
-- and a purge by the delete trigger. Reading a Workflow's status reads at
-- most seven count rows, whatever its size.
CREATE TABLE backwave_workflow (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	name       TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	restart_of INTEGER
);

CREATE INDEX backwave_workflow_name ON backwave_workflow (name, id);

CREATE TABLE backwave_workflow_count (
	workflow_id INTEGER NOT NULL,
	state       INTEGER NOT NULL,
	n           INTEGER NOT NULL,
	PRIMARY KEY (workflow_id, state)
) WITHOUT ROWID;

ALTER TABLE backwave_job ADD COLUMN workflow_id INTEGER;

CREATE INDEX backwave_job_workflow ON backwave_job (workflow_id, id) WHERE workflow_id IS NOT NULL;

CREATE TRIGGER backwave_job_workflow_count_update AFTER UPDATE OF state ON backwave_job
WHEN OLD.state <> NEW.state AND NEW.workflow_id IS NOT NULL
BEGIN
	UPDATE backwave_workflow_count SET n = n - 1 WHERE workflow_id = NEW.workflow_id AND state = OLD.state;
	INSERT INTO backwave_workflow_count (workflow_id, state, n) VALUES (NEW.workflow_id, NEW.state, 1)
	ON CONFLICT (workflow_id, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER backwave_job_workflow_count_delete AFTER DELETE ON backwave_job
WHEN OLD.workflow_id IS NOT NULL
BEGIN
	UPDATE backwave_workflow_count SET n = n - 1 WHERE workflow_id = OLD.workflow_id AND state = OLD.state;
END;
