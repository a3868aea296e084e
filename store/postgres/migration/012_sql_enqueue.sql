-- compat: n-1
-- The SQL enqueue API: functions that insert jobs inside the caller's own
-- transaction, for applications written in other languages
-- (docs/other-languages.md). Additive: one composite type, one table and
-- three functions; code one release behind never calls them, and the rows
-- they write are the rows the Go insert statement writes
-- (store/postgres/insert.go), so it claims and runs those jobs as its own.
--
-- One rule, in one place: enqueue and enqueue_many both hand their jobs to
-- enqueue_jobs, which checks them and inserts them in one statement. The
-- checks are those of the Go insert path (store.InsertManyParams.Validate
-- and the root package's newJob), and the defaults are the library's
-- (backwave.DefaultQueue, backwave.DefaultMaxAttempts);
-- store/postgres/sqlenqueue_test.go holds the two to the same rows. A
-- rejected job raises an error naming the job's index and the field
-- (SQLSTATE 22004 for a NULL where a value is required, 22023 for a bad
-- value; the field is also in the error's COLUMN field) and inserts
-- nothing.

-- One job to enqueue. A NULL queue, payload or max_attempts is an error,
-- never the default in disguise; NULL run_at is due at once, NULL labels,
-- keyed_tags and unique_key add none, NULL unique_period holds the key
-- while the job lives.
CREATE TYPE backwave.enqueue_job AS (
    wire_name     text,
    payload       json,
    queue         text,
    run_at        timestamptz,
    max_attempts  integer,
    labels        text[],
    keyed_tags    jsonb,
    unique_key    text,
    unique_period interval
);

-- The known Wire Names of a Queue, for the optional check of SQL enqueue:
-- a Queue with rows here accepts through enqueue and enqueue_many only the
-- Wire Names listed for it; a Queue with none (every Queue, by default)
-- accepts any, and a job whose Wire Name no handler serves ends Quarantined
-- at its claim, as it does from Go.
CREATE TABLE backwave.queue_wire_name (
    queue     text NOT NULL,
    wire_name text NOT NULL,
    PRIMARY KEY (queue, wire_name)
);

-- enqueue_jobs checks every job of jobs and inserts them in one statement,
-- answering per job (ord, from 1, in input order) the job's id and whether
-- it was inserted: a job whose unique key is held is not, and answers the
-- holder's id. history is the deployment's Job History Policy (off,
-- transitions or transitions+detail), which decides whether the insert
-- entry goes in the Transition Log; notify sends the Wake-Up Hint (one
-- NOTIFY per Queue that got a job due now, delivered at commit).
CREATE FUNCTION backwave.enqueue_jobs(jobs backwave.enqueue_job[], history text DEFAULT 'transitions+detail',
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
                     coalesce((extract(epoch FROM u.unique_period) * 1000000)::bigint, 0) AS unique_period, u.ord
              FROM unnest(jobs) WITH ORDINALITY AS u(wire_name, payload, queue, run_at, max_attempts, labels, keyed_tags,
                                                     unique_key, unique_period, ord)
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
        INSERT INTO backwave.job (id, queue, wire_name, state, max_attempts, scheduled_at, created_at)
        SELECT i.id, i.queue, i.wire_name, 'scheduled', i.max_attempts, coalesce(i.scheduled_at, now.t), now.t
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

-- enqueue_check_tag raises the error of a Tag job.Tag.Validate refuses; at
-- names the job, field the argument.
CREATE FUNCTION backwave.enqueue_check_tag(at text, field text, key text, value text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF value IS NULL THEN
        RAISE EXCEPTION '%: % holds a NULL value (key %)', at, field, quote_literal(key) USING ERRCODE = '22004', COLUMN = field;
    ELSIF value = '' THEN
        RAISE EXCEPTION '%: % holds an empty value (key %)', at, field, quote_literal(key) USING ERRCODE = '22023', COLUMN = field;
    ELSIF octet_length(key) > 255 OR octet_length(value) > 255 THEN
        RAISE EXCEPTION '%: % holds a tag longer than 255 bytes (key %…)', at, field, quote_literal(left(key, 32)) USING ERRCODE = '22023', COLUMN = field;
    ELSIF key ~ '[\x01-\x1f\x7f]' OR value ~ '[\x01-\x1f\x7f]' THEN
        RAISE EXCEPTION '%: % holds a tag with a control character (key %, value %)', at, field, quote_literal(key), quote_literal(value)
            USING ERRCODE = '22023', COLUMN = field;
    END IF;
END
$$;

-- enqueue inserts one job and answers its id and whether it was inserted
-- (false: its unique key is held, and job_id is the holder's). See
-- enqueue_job for what each argument means and enqueue_jobs for history
-- and notify.
CREATE FUNCTION backwave.enqueue(
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
        ARRAY[ROW(wire_name, payload, queue, run_at, max_attempts, labels, keyed_tags, unique_key, unique_period)::backwave.enqueue_job],
        history, notify) e
$$;

-- enqueue_many inserts a batch of jobs given as a JSON array of objects
-- with the fields of enqueue_job (wire_name required; a missing field takes
-- enqueue's default; an unknown field is an error), atomically, and
-- answers per job, in input order, ord (from 1), the id and whether it was
-- inserted.
CREATE FUNCTION backwave.enqueue_many(jobs json, history text DEFAULT 'transitions+detail', notify boolean DEFAULT true)
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
        WHERE k NOT IN ('wire_name', 'payload', 'queue', 'run_at', 'max_attempts', 'labels', 'keyed_tags', 'unique_key', 'unique_period');
        IF bad IS NOT NULL THEN
            RAISE EXCEPTION '%: unknown field % (want wire_name, payload, queue, run_at, max_attempts, labels, keyed_tags, unique_key, unique_period)',
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
        EXCEPTION WHEN data_exception OR raise_exception THEN
            RAISE EXCEPTION '%: field %: %', at, f, SQLERRM USING ERRCODE = '22023', COLUMN = f;
        END;
        batch := batch || j;
    END LOOP;
    RETURN QUERY SELECT r.ord, r.job_id, r.inserted FROM backwave.enqueue_jobs(batch, history, notify) r;
END
$$;

-- enqueue_json_text returns e's field f as text when it is a JSON string
-- (NULL when absent or null) and raises otherwise.
CREATE FUNCTION backwave.enqueue_json_text(e json, f text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF json_typeof(e -> f) NOT IN ('string', 'null') THEN
        RAISE EXCEPTION 'is a JSON %, want a string', json_typeof(e -> f);
    END IF;
    RETURN e ->> f;
END
$$;
