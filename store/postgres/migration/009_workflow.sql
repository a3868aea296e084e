-- compat: n-1
-- Workflows: the grouping and identity over jobs connected by Dependency
-- edges. Additive: new tables, a nullable column on the job table (adding
-- it rewrites no row), two row triggers that fire only for Workflow
-- members, and one index step. Code one release behind never sets
-- workflow_id, so every job it inserts is a member of no Workflow and the
-- triggers skip it at their WHEN test; when it claims or reports a member a
-- newer node inserted, the triggers keep that Workflow's counts for it.
--
-- A Workflow's row holds only identity and config; its status is derived
-- from its members by state. New code counts a member's first state into
-- workflow_count in its inserting transaction; every later state change,
-- by any node of either release, appends its delta to workflow_count_delta
-- (insert-only, so concurrent claimers and reporters of one Workflow never
-- wait on a shared counter row); the store folds the deltas into
-- workflow_count now and then, beside the job counts. A status read sums
-- both for one Workflow in one snapshot: exact, and bounded by the moves
-- since the last fold, not by the Workflow's size.
CREATE TABLE backwave.workflow (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL,
    created_at timestamptz NOT NULL,
    restart_of bigint
);

CREATE INDEX workflow_name ON backwave.workflow (name, id);

CREATE TABLE backwave.workflow_count (
    workflow_id bigint NOT NULL,
    state       text NOT NULL,
    n           bigint NOT NULL,
    PRIMARY KEY (workflow_id, state)
);

CREATE TABLE backwave.workflow_count_delta (
    workflow_id bigint NOT NULL,
    state       text NOT NULL,
    n           bigint NOT NULL
);

CREATE INDEX workflow_count_delta_workflow ON backwave.workflow_count_delta (workflow_id);

CREATE FUNCTION backwave.job_workflow_count_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO backwave.workflow_count_delta (workflow_id, state, n)
    VALUES (NEW.workflow_id, OLD.state, -1), (NEW.workflow_id, NEW.state, 1);
    RETURN NULL;
END
$$;

CREATE FUNCTION backwave.job_workflow_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO backwave.workflow_count_delta (workflow_id, state, n) VALUES (OLD.workflow_id, OLD.state, -1);
    RETURN NULL;
END
$$;

ALTER TABLE backwave.job ADD COLUMN workflow_id bigint;

CREATE TRIGGER job_workflow_count_update AFTER UPDATE OF state ON backwave.job
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state AND NEW.workflow_id IS NOT NULL)
    EXECUTE FUNCTION backwave.job_workflow_count_update();

CREATE TRIGGER job_workflow_count_delete AFTER DELETE ON backwave.job
    FOR EACH ROW WHEN (OLD.workflow_id IS NOT NULL)
    EXECUTE FUNCTION backwave.job_workflow_count_delete();

-- Index step: a Workflow's members, built CONCURRENTLY after the
-- transaction commits, so claims and reports never wait for it.
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_workflow ON backwave.job (workflow_id, id) WHERE workflow_id IS NOT NULL;
