-- compat: n-1
-- Concurrency Keys: a job's key, a Queue's Key Limit, Key Rate and Fair
-- Claim, the per-key window counts and the per-key job counts. Additive: a
-- nullable column on the job table and constant defaults on the Queue
-- settings table (adding them rewrites no row), new tables, the count
-- triggers' functions replaced by ones that also count keyed jobs, and two
-- index steps. Code one release behind never sets a key and never reads the
-- key settings: its inserts get no key, and its claims take from a keyed
-- Queue as from any other (a fleet mid-upgrade enforces the Key Limit, Key
-- Rate and Fair Claim only on its newer nodes' claims).
--
-- concurrency_key is the job's Concurrency Key; NULL is none (an empty key
-- is refused at insert). Jobs without a key are in no new index, so they
-- cost what they cost before (testdata/ledger.txt).
ALTER TABLE backwave.job ADD COLUMN concurrency_key text;

-- key_limit: at most that many Running jobs per key (0: none); key_rate_limit
-- per key_rate_period µs: at most that many starts per key per window (0 and
-- 0: none); fair_claim: a claim batch takes round-robin across keys, and
-- fair_turn is the Queue's last Fair Claim turn (store.KeyPolicy.Pick). A
-- claim of a Queue with any of them holds the Queue's row locked
-- (claimLockSQL), as for a Concurrency Limit, so the per-key counts are
-- exact under concurrent claimers (store/postgres/key.go).
ALTER TABLE backwave.queue
    ADD COLUMN key_limit integer NOT NULL DEFAULT 0,
    ADD COLUMN key_rate_limit integer NOT NULL DEFAULT 0,
    ADD COLUMN key_rate_period bigint NOT NULL DEFAULT 0,
    ADD COLUMN fair_claim boolean NOT NULL DEFAULT false,
    ADD COLUMN fair_turn bigint NOT NULL DEFAULT 0;

-- What a claim keeps per key (store.KeyStanding, less the Running count):
-- the start (µs since the Unix epoch) of the Key Rate window rate_count
-- counted claims in (NULL: none), and the Fair Claim turn of the last claim
-- that took one of the key's jobs. concurrency_key '' is the jobs without a
-- key (one key of their own for Fair Claim). Written only by claims holding
-- the Queue's row lock.
CREATE TABLE backwave.queue_key (
    queue           text NOT NULL,
    concurrency_key text NOT NULL,
    rate_window     bigint,
    rate_count      integer NOT NULL DEFAULT 0,
    turn            bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, concurrency_key)
);

-- Counts of keyed jobs by Queue, key and state, kept like job_count: the
-- statement triggers append deltas (only keyed rows make any), the store
-- folds them now and then, and a read sums both. The Monitor's top keys
-- read these, never the job table.
CREATE TABLE backwave.job_key_count (
    queue           text NOT NULL,
    concurrency_key text NOT NULL,
    state           text NOT NULL,
    n               bigint NOT NULL,
    PRIMARY KEY (queue, concurrency_key, state)
);

CREATE TABLE backwave.job_key_count_delta (
    queue           text NOT NULL,
    concurrency_key text NOT NULL,
    state           text NOT NULL,
    n               bigint NOT NULL
);

CREATE INDEX job_key_count_delta_queue ON backwave.job_key_count_delta (queue);

-- The count triggers' functions, now counting keyed rows per key too. The
-- triggers stay as they were (statement-level, one call per statement), so
-- a statement of jobs without keys makes no extra call and inserts no extra
-- row.
CREATE OR REPLACE FUNCTION backwave.job_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO backwave.job_count_delta (queue, state, n)
    SELECT r.queue, r.state, count(*) FROM new_rows r GROUP BY r.queue, r.state;
    INSERT INTO backwave.job_key_count_delta (queue, concurrency_key, state, n)
    SELECT r.queue, r.concurrency_key, r.state, count(*) FROM new_rows r
    WHERE r.concurrency_key IS NOT NULL GROUP BY r.queue, r.concurrency_key, r.state;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION backwave.job_count_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO backwave.job_count_delta (queue, state, n)
    SELECT d.queue, d.state, sum(d.n) FROM (
        SELECT r.queue, r.state, 1 AS n FROM new_rows r
        UNION ALL
        SELECT r.queue, r.state, -1 AS n FROM old_rows r
    ) d
    GROUP BY d.queue, d.state
    HAVING sum(d.n) <> 0;
    INSERT INTO backwave.job_key_count_delta (queue, concurrency_key, state, n)
    SELECT d.queue, d.concurrency_key, d.state, sum(d.n) FROM (
        SELECT r.queue, r.concurrency_key, r.state, 1 AS n FROM new_rows r WHERE r.concurrency_key IS NOT NULL
        UNION ALL
        SELECT r.queue, r.concurrency_key, r.state, -1 AS n FROM old_rows r WHERE r.concurrency_key IS NOT NULL
    ) d
    GROUP BY d.queue, d.concurrency_key, d.state
    HAVING sum(d.n) <> 0;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION backwave.job_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO backwave.job_count_delta (queue, state, n)
    SELECT r.queue, r.state, -count(*) FROM old_rows r GROUP BY r.queue, r.state;
    INSERT INTO backwave.job_key_count_delta (queue, concurrency_key, state, n)
    SELECT r.queue, r.concurrency_key, r.state, -count(*) FROM old_rows r
    WHERE r.concurrency_key IS NOT NULL GROUP BY r.queue, r.concurrency_key, r.state;
    RETURN NULL;
END
$$;

-- The SQL enqueue API (migration 012) takes a Concurrency Key: the
-- composite type gains the attribute, enqueue_jobs checks it as
-- store.ValidateConcurrencyKey does (NULL is none; an empty key, one over
-- 128 bytes or with a control character is an error naming the job and the
-- field, and inserts nothing) and writes it on the job row, and
-- enqueue_many reads the field concurrency_key. enqueue keeps its
-- signature: a new argument would need the function dropped and made
-- again, which an n-1 migration does not do, and an overload beside it
-- would make every call that omits the key ambiguous; a keyed job goes
-- through enqueue_many (docs/other-languages.md).
ALTER TYPE backwave.enqueue_job ADD ATTRIBUTE concurrency_key text;

CREATE OR REPLACE FUNCTION backwave.enqueue_jobs(jobs backwave.enqueue_job[], history text DEFAULT 'transitions+detail',
                                      notify boolean DEFAULT true)
RETURNS TABLE (ord integer, job_id bigint, inserted boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    n          integer := coalesce(cardinality(jobs), 0);
    j          backwave.enqueue_job;
    at         text;
    txt        text;
    fld        text;
    val        jsonb;
    one        jsonb;
    tag_ords   integer[] := '{}';
    tag_keys   text[] := '{}';
    tag_values text[] := '{}';
BEGIN
    IF history IS NULL OR history NOT IN ('off', 'transitions', 'transitions+detail') THEN
        RAISE EXCEPTION 'enqueue: history %: want off, transitions or transitions+detail', coalesce(quote_literal(history), 'NULL')
            USING ERRCODE = CASE WHEN history IS NULL THEN '22004' ELSE '22023' END, COLUMN = 'history';
    END IF;
    IF notify IS NULL THEN
        RAISE EXCEPTION 'enqueue: notify is NULL' USING ERRCODE = '22004', COLUMN = 'notify';
    END IF;
    FOR i IN 1 .. n LOOP
        j := jobs[i];
        at := format('enqueue: jobs[%s]', i - 1);
        IF j IS NULL THEN
            RAISE EXCEPTION '%: the job is NULL', at USING ERRCODE = '22004';
        END IF;
        -- Queue name and Wire Name: store.ValidateName.
        FOR w IN 1 .. 2 LOOP
            txt := CASE w WHEN 1 THEN j.wire_name ELSE j.queue END;
            fld := CASE w WHEN 1 THEN 'wire_name' ELSE 'queue' END;
            IF txt IS NULL THEN
                RAISE EXCEPTION '%: % is NULL', at, fld USING ERRCODE = '22004', COLUMN = fld;
            ELSIF txt = '' THEN
                RAISE EXCEPTION '%: % is empty', at, fld USING ERRCODE = '22023', COLUMN = fld;
            ELSIF octet_length(txt) > 128 THEN
                RAISE EXCEPTION '%: % %… is longer than 128 bytes', at, fld, quote_literal(left(txt, 32)) USING ERRCODE = '22023', COLUMN = fld;
            ELSIF txt ~ '[\x01-\x1f\x7f]' THEN
                RAISE EXCEPTION '%: % % contains a control character', at, fld, quote_literal(txt) USING ERRCODE = '22023', COLUMN = fld;
            ELSIF left(txt, 1) = ' ' OR right(txt, 1) = ' ' THEN
                RAISE EXCEPTION '%: % % has leading or trailing spaces', at, fld, quote_literal(txt) USING ERRCODE = '22023', COLUMN = fld;
            END IF;
        END LOOP;
        at := format('%s (wire_name %s)', at, quote_literal(j.wire_name));
        -- The payload: a JSON object (what a Go args struct encodes to)
        -- within store.MaxPayloadBytes.
        IF j.payload IS NULL THEN
            RAISE EXCEPTION '%: payload is NULL (an args type without fields takes {})', at USING ERRCODE = '22004', COLUMN = 'payload';
        ELSIF json_typeof(j.payload) <> 'object' THEN
            RAISE EXCEPTION '%: payload is a JSON %, want an object', at, json_typeof(j.payload) USING ERRCODE = '22023', COLUMN = 'payload';
        ELSIF octet_length(j.payload::text) > 1048576 THEN
            RAISE EXCEPTION '%: payload of % bytes is over the 1048576-byte limit', at, octet_length(j.payload::text)
                USING ERRCODE = '22023', COLUMN = 'payload';
        END IF;
        IF j.max_attempts IS NULL THEN
            RAISE EXCEPTION '%: max_attempts is NULL', at USING ERRCODE = '22004', COLUMN = 'max_attempts';
        ELSIF j.max_attempts < 1 THEN
            RAISE EXCEPTION '%: max_attempts % is below 1', at, j.max_attempts USING ERRCODE = '22023', COLUMN = 'max_attempts';
        END IF;
        -- The due time: store.ValidateTime, years 1 to 9999 in UTC.
        IF j.run_at IS NOT NULL AND NOT (j.run_at >= '0001-01-01 00:00:00+00' AND j.run_at < '10000-01-01 00:00:00+00') THEN
            RAISE EXCEPTION '%: run_at % is outside years 1 to 9999 (UTC)', at, j.run_at USING ERRCODE = '22023', COLUMN = 'run_at';
        END IF;
        -- Tags: job.Tag.Validate. Labels, then Keyed Tags whose value is a
        -- string or an array of strings (one Keyed Tag per value).
        FOREACH txt IN ARRAY coalesce(j.labels, '{}') LOOP
            PERFORM backwave.enqueue_check_tag(at, 'labels', '', txt);
            tag_ords := tag_ords || i; tag_keys := tag_keys || ''::text; tag_values := tag_values || txt;
        END LOOP;
        IF j.keyed_tags IS NOT NULL THEN
            IF jsonb_typeof(j.keyed_tags) <> 'object' THEN
                RAISE EXCEPTION '%: keyed_tags is a JSON %, want an object of key to value', at, jsonb_typeof(j.keyed_tags)
                    USING ERRCODE = '22023', COLUMN = 'keyed_tags';
            END IF;
            FOR fld, val IN SELECT e.key, e.value FROM jsonb_each(j.keyed_tags) e LOOP
                IF jsonb_typeof(val) = 'array' THEN
                    FOR one IN SELECT e FROM jsonb_array_elements(val) e LOOP
                        IF jsonb_typeof(one) <> 'string' THEN
                            RAISE EXCEPTION '%: keyed_tags key %: a value is a JSON %, want a string', at, quote_literal(fld), jsonb_typeof(one)
                                USING ERRCODE = '22023', COLUMN = 'keyed_tags';
                        END IF;
                        PERFORM backwave.enqueue_check_tag(at, 'keyed_tags', fld, one #>> '{}');
                        tag_ords := tag_ords || i; tag_keys := tag_keys || fld; tag_values := tag_values || (one #>> '{}');
                    END LOOP;
                ELSIF jsonb_typeof(val) = 'string' THEN
                    PERFORM backwave.enqueue_check_tag(at, 'keyed_tags', fld, val #>> '{}');
                    tag_ords := tag_ords || i; tag_keys := tag_keys || fld; tag_values := tag_values || (val #>> '{}');
                ELSE
                    RAISE EXCEPTION '%: keyed_tags key %: the value is a JSON %, want a string or an array of strings', at, quote_literal(fld), jsonb_typeof(val)
                        USING ERRCODE = '22023', COLUMN = 'keyed_tags';
                END IF;
            END LOOP;
        END IF;
        -- The unique key: store.Unique.Validate.
        IF j.unique_key IS NULL THEN
            IF j.unique_period IS NOT NULL THEN
                RAISE EXCEPTION '%: unique_period without a unique_key', at USING ERRCODE = '22023', COLUMN = 'unique_period';
            END IF;
        ELSIF j.unique_key = '' THEN
            RAISE EXCEPTION '%: unique_key is empty (NULL for none)', at USING ERRCODE = '22023', COLUMN = 'unique_key';
        ELSIF octet_length(j.unique_key) > 256 THEN
            RAISE EXCEPTION '%: unique_key %… is longer than 256 bytes', at, quote_literal(left(j.unique_key, 32)) USING ERRCODE = '22023', COLUMN = 'unique_key';
        ELSIF j.unique_key ~ '[\x01-\x1f\x7f]' THEN
            RAISE EXCEPTION '%: unique_key % contains a control character', at, quote_literal(j.unique_key) USING ERRCODE = '22023', COLUMN = 'unique_key';
        ELSIF j.unique_period IS NOT NULL AND j.unique_period <= interval '0' THEN
            RAISE EXCEPTION '%: unique_period % is not positive (NULL holds the key while the job lives)', at, j.unique_period
                USING ERRCODE = '22023', COLUMN = 'unique_period';
        END IF;
        -- The Concurrency Key: store.ValidateConcurrencyKey (NULL is none).
        IF j.concurrency_key IS NOT NULL THEN
            IF j.concurrency_key = '' THEN
                RAISE EXCEPTION '%: concurrency_key is empty (NULL for none)', at USING ERRCODE = '22023', COLUMN = 'concurrency_key';
            ELSIF octet_length(j.concurrency_key) > 128 THEN
                RAISE EXCEPTION '%: concurrency_key %… is longer than 128 bytes', at, quote_literal(left(j.concurrency_key, 32))
                    USING ERRCODE = '22023', COLUMN = 'concurrency_key';
            ELSIF j.concurrency_key ~ '[\x01-\x1f\x7f-\x9f]' THEN
                RAISE EXCEPTION '%: concurrency_key % contains a control character', at, quote_literal(j.concurrency_key)
                    USING ERRCODE = '22023', COLUMN = 'concurrency_key';
            END IF;
        END IF;
        -- The optional known Wire Names of the Queue.
        IF EXISTS (SELECT 1 FROM backwave.queue_wire_name w WHERE w.queue = j.queue)
           AND NOT EXISTS (SELECT 1 FROM backwave.queue_wire_name w WHERE w.queue = j.queue AND w.wire_name = j.wire_name) THEN
            RAISE EXCEPTION '%: queue % accepts only its known wire names (table queue_wire_name), and % is not one', at, quote_literal(j.queue), quote_literal(j.wire_name)
                USING ERRCODE = '22023', COLUMN = 'wire_name';
        END IF;
    END LOOP;
    IF n = 0 THEN
        RETURN;
    END IF;

    -- The insert: the statement of store/postgres/insert.go (insertSQL), on
    -- the transaction's now().
    RETURN QUERY
    WITH now AS (SELECT now() AS t),
    candidate AS (
        SELECT nextval('backwave.job_id_seq') AS id, u.ord AS rank, u.*
        FROM (SELECT u.wire_name, u.queue, convert_to(u.payload::text, 'UTF8') AS payload, u.run_at AS scheduled_at,
                     u.max_attempts, u.unique_key,
                     coalesce((extract(epoch FROM u.unique_period) * 1000000)::bigint, 0) AS unique_period, u.concurrency_key, u.ord
              FROM unnest(jobs) WITH ORDINALITY AS u(wire_name, payload, queue, run_at, max_attempts, labels, keyed_tags,
                                                     unique_key, unique_period, concurrency_key, ord)
              ORDER BY u.ord) u
    ),
    held AS (
        INSERT INTO backwave.job_unique AS k (key, job_id, expires_at)
        SELECT DISTINCT ON (c.unique_key) c.unique_key, c.id,
               CASE WHEN c.unique_period > 0 THEN now.t + c.unique_period * interval '1 microsecond' END
        FROM candidate c, now
        WHERE c.unique_key IS NOT NULL
        ORDER BY c.unique_key, c.rank
        ON CONFLICT (key) DO UPDATE SET
            job_id = CASE WHEN k.expires_at <= now() THEN EXCLUDED.job_id ELSE k.job_id END,
            expires_at = CASE WHEN k.expires_at <= now() THEN EXCLUDED.expires_at ELSE k.expires_at END
        RETURNING k.key, k.job_id
    ),
    input AS (
        SELECT c.* FROM candidate c
        WHERE c.unique_key IS NULL OR c.id IN (SELECT h.job_id FROM held h)
    ),
    new_queue AS (
        INSERT INTO backwave.queue (name)
        SELECT DISTINCT i.queue FROM input i
        WHERE NOT EXISTS (SELECT 1 FROM backwave.queue q WHERE q.name = i.queue)
        ON CONFLICT DO NOTHING
    ),
    new_payload AS (
        INSERT INTO backwave.job_payload (job_id, payload)
        SELECT i.id, i.payload FROM input i
    ),
    new_tag AS (
        INSERT INTO backwave.job_tag (job_id, key, value)
        SELECT i.id, t.key, t.value
        FROM unnest(tag_ords, tag_keys, tag_values) AS t(ord, key, value)
        JOIN input i ON i.ord = t.ord
        ON CONFLICT DO NOTHING
    ),
    new_job AS (
        INSERT INTO backwave.job (id, queue, wire_name, state, max_attempts, scheduled_at, created_at, concurrency_key)
        SELECT i.id, i.queue, i.wire_name, 'scheduled', i.max_attempts, coalesce(i.scheduled_at, now.t), now.t, i.concurrency_key
        FROM input i, now
    ),
    known_tag AS (
        INSERT INTO backwave.tag (key, value, folded, display)
        SELECT DISTINCT ON (t.key, t.value) t.key, t.value, lower(t.display), t.display
        FROM (SELECT t.ord, t.key, t.value, CASE WHEN t.key = '' THEN t.value ELSE t.key || '=' || t.value END AS display
              FROM unnest(tag_ords, tag_keys, tag_values) AS t(ord, key, value)) t
        WHERE t.ord IN (SELECT i.ord FROM input i)
          AND NOT EXISTS (SELECT 1 FROM backwave.tag d WHERE d.key = t.key AND d.value = t.value)
        ON CONFLICT DO NOTHING
    ),
    logged AS (
        INSERT INTO backwave.job_transition (job_id, at, from_state, state, via, attempt)
        SELECT i.id, now.t, 'unknown', 'scheduled', 'insert', 0 FROM input i, now WHERE history <> 'off'
    ),
    hint AS (
        SELECT pg_notify('backwave.hint', d.queue)
        FROM (SELECT DISTINCT i.queue FROM input i, now
              WHERE notify AND coalesce(i.scheduled_at, now.t) <= now.t) d
    )
    SELECT r.ord, r.job_id, r.inserted FROM (
        SELECT i.ord::integer AS ord, i.id AS job_id, true AS inserted, (SELECT count(*) FROM hint) AS hints FROM input i
        UNION ALL
        SELECT c.ord::integer, h.job_id, false, 0::bigint
        FROM candidate c JOIN held h ON h.key = c.unique_key
        WHERE h.job_id <> c.id
    ) r
    WHERE r.hints >= 0 -- makes the hint CTE run
    ORDER BY r.ord;
END
$$;

CREATE OR REPLACE FUNCTION backwave.enqueue_many(jobs json, history text DEFAULT 'transitions+detail', notify boolean DEFAULT true)
RETURNS TABLE (ord integer, job_id bigint, inserted boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    batch backwave.enqueue_job[] := '{}';
    j     backwave.enqueue_job;
    e     json;
    i     integer := 0;
    at    text;
    f     text;
    bad   text;
BEGIN
    IF jobs IS NULL THEN
        RAISE EXCEPTION 'enqueue_many: jobs is NULL' USING ERRCODE = '22004', COLUMN = 'jobs';
    ELSIF json_typeof(jobs) <> 'array' THEN
        RAISE EXCEPTION 'enqueue_many: jobs is a JSON %, want an array of job objects', json_typeof(jobs) USING ERRCODE = '22023', COLUMN = 'jobs';
    END IF;
    FOR e IN SELECT x FROM json_array_elements(jobs) x LOOP
        at := format('enqueue: jobs[%s]', i);
        i := i + 1;
        IF json_typeof(e) <> 'object' THEN
            RAISE EXCEPTION '%: the job is a JSON %, want an object', at, json_typeof(e) USING ERRCODE = '22023';
        END IF;
        SELECT min(k) INTO bad FROM json_object_keys(e) k
        WHERE k NOT IN ('wire_name', 'payload', 'queue', 'run_at', 'max_attempts', 'labels', 'keyed_tags', 'unique_key', 'unique_period',
                        'concurrency_key');
        IF bad IS NOT NULL THEN
            RAISE EXCEPTION '%: unknown field % (want wire_name, payload, queue, run_at, max_attempts, labels, keyed_tags, unique_key, unique_period, concurrency_key)',
                at, quote_literal(bad) USING ERRCODE = '22023', COLUMN = bad;
        END IF;
        BEGIN
            f := 'wire_name';
            j.wire_name := backwave.enqueue_json_text(e, f);
            f := 'payload';
            j.payload := CASE WHEN (e::jsonb) ? f THEN e -> f ELSE '{}'::json END;
            IF json_typeof(j.payload) = 'null' THEN
                j.payload := NULL;
            END IF;
            f := 'queue';
            j.queue := CASE WHEN (e::jsonb) ? f THEN backwave.enqueue_json_text(e, f) ELSE 'default' END;
            f := 'run_at';
            j.run_at := backwave.enqueue_json_text(e, f)::timestamptz;
            f := 'max_attempts';
            IF (e::jsonb) ? f AND json_typeof(e -> f) NOT IN ('number', 'null') THEN
                RAISE EXCEPTION 'is a JSON %, want a number', json_typeof(e -> f);
            END IF;
            j.max_attempts := CASE WHEN (e::jsonb) ? f THEN (e ->> f)::integer ELSE 25 END;
            f := 'labels';
            IF (e::jsonb) ? f AND json_typeof(e -> f) NOT IN ('array', 'null') THEN
                RAISE EXCEPTION 'is a JSON %, want an array of strings', json_typeof(e -> f);
            END IF;
            SELECT min(json_typeof(l)) INTO bad FROM json_array_elements(CASE json_typeof(e -> f) WHEN 'array' THEN e -> f END) l
            WHERE json_typeof(l) NOT IN ('string', 'null');
            IF bad IS NOT NULL THEN
                RAISE EXCEPTION 'holds a JSON %, want strings', bad;
            END IF;
            j.labels := (SELECT array_agg(l #>> '{}') FROM json_array_elements(CASE json_typeof(e -> f) WHEN 'array' THEN e -> f END) l);
            f := 'keyed_tags';
            j.keyed_tags := CASE WHEN json_typeof(e -> f) <> 'null' THEN (e -> f)::jsonb END;
            f := 'unique_key';
            j.unique_key := backwave.enqueue_json_text(e, f);
            f := 'unique_period';
            IF (e::jsonb) ? f AND json_typeof(e -> f) NOT IN ('string', 'number', 'null') THEN
                RAISE EXCEPTION 'is a JSON %, want an interval such as "1 hour" or a number of seconds', json_typeof(e -> f);
            END IF;
            j.unique_period := (e ->> f)::interval;
            f := 'concurrency_key';
            j.concurrency_key := backwave.enqueue_json_text(e, f);
        EXCEPTION WHEN data_exception OR raise_exception THEN
            RAISE EXCEPTION '%: field %: %', at, f, SQLERRM USING ERRCODE = '22023', COLUMN = f;
        END;
        batch := batch || j;
    END LOOP;
    RETURN QUERY SELECT r.ord, r.job_id, r.inserted FROM backwave.enqueue_jobs(batch, history, notify) r;
END
$$;

-- enqueue, as in 012, building the composite with no key.
CREATE OR REPLACE FUNCTION backwave.enqueue(
    wire_name     text,
    payload       json DEFAULT '{}',
    queue         text DEFAULT 'default',
    run_at        timestamptz DEFAULT NULL,
    max_attempts  integer DEFAULT 25,
    labels        text[] DEFAULT NULL,
    keyed_tags    jsonb DEFAULT NULL,
    unique_key    text DEFAULT NULL,
    unique_period interval DEFAULT NULL,
    history       text DEFAULT 'transitions+detail',
    notify        boolean DEFAULT true)
RETURNS TABLE (job_id bigint, inserted boolean)
LANGUAGE sql AS $$
    SELECT e.job_id, e.inserted
    FROM backwave.enqueue_jobs(
        ARRAY[ROW(wire_name, payload, queue, run_at, max_attempts, labels, keyed_tags, unique_key, unique_period, NULL)::backwave.enqueue_job],
        history, notify) e
$$;

-- Index steps, built CONCURRENTLY after the transaction commits. Only keyed
-- jobs enter them.
--
-- A keyed Queue's claim finds its keys by skipping through job_key_due one
-- key at a time, and each key's due jobs in due order.
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_key_due ON backwave.job (queue, concurrency_key, scheduled_at, id)
    WHERE state = 'scheduled' AND concurrency_key IS NOT NULL;
-- Running jobs per key: the Key Limit's count.
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_key_running ON backwave.job (queue, concurrency_key)
    WHERE state = 'running' AND concurrency_key IS NOT NULL;
