-- compat: n-1
-- The SQL enqueue API (migrations 012 and 016) takes the rewrite modes of a
-- unique key, Replace and Debounce (store.UniqueReplace,
-- store.UniqueDebounce; the root package's UniqueScope.Replace and
-- .Debounce). Additive: three attributes on the composite type, the
-- functions of 012 and 016 replaced with their signatures and result types
-- unchanged, and three new functions; code one release behind never calls
-- them, and the rows they write are the rows the Go insert and its rewrite
-- (store/postgres/insert.go, replace.go) write.
--
-- unique_mode is what an insert whose unique key is held does: NULL or
-- 'skip' leaves the holder alone (store.UniqueKeep, as before), 'replace'
-- rewrites a Scheduled holder with the job's payload, Tags and due time
-- (core.ReplaceDue: run_at, or now), 'debounce' does the same with the due
-- time core.DebounceDue gives (now + debounce_wait, never past the holder's
-- created_at + debounce_max_wait, never before now), and a debounced job
-- that takes a free key is due debounce_wait after its insert
-- (store.Unique.InsertDue). A holder in any other state — Running, Awaiting
-- Parent, ended or purged (a unique_period key outlives its job) — refuses
-- the insert with SQLSTATE 55000 (object_not_in_prerequisite_state; Go's
-- store.ErrHolderNotPending), and nothing of the call is stored. Each
-- rewrite writes the audit entry the Go path writes (actor system, action
-- unique_replace or unique_debounce, the holder, its Queue, and
-- store.RewriteDetail), and a rewrite that leaves the holder due now sends
-- the Wake-Up Hint of its Queue. Within one call the jobs go in input
-- order, so a later job with the same key rewrites the job an earlier one
-- inserted or rewrote, as in Go.
ALTER TYPE backwave.enqueue_job
    ADD ATTRIBUTE unique_mode text,
    ADD ATTRIBUTE debounce_wait interval,
    ADD ATTRIBUTE debounce_max_wait interval;

-- enqueue_go_quote is Go's strconv.Quote of a unique key, for the audit
-- entry's detail: double quotes around it, a backslash before each
-- backslash and double quote, and the assigned characters Go does not
-- print — C1 controls, the separators other than U+0020, the format
-- characters (Unicode 15's Cf: soft hyphen, bidirectional marks,
-- zero-width characters, the byte order mark, …), private use and
-- noncharacters — as \uXXXX or \UXXXXXXXX. (A unique key holds no C0
-- control and no DEL; the checks refuse them.) Other unassigned code
-- points, which Go escapes by its own Unicode tables, are written as they
-- are; sqlenqueue_modes_test.go holds the function to strconv.Quote for
-- every assigned one.
CREATE FUNCTION backwave.enqueue_go_quote(s text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    out text := '"';
    c   text;
    cp  integer;
BEGIN
    IF s !~ '[^ -~]' AND strpos(s, '\') = 0 AND strpos(s, '"') = 0 THEN
        RETURN '"' || s || '"';
    END IF;
    FOREACH c IN ARRAY regexp_split_to_array(s, '') LOOP
        cp := ascii(c);
        IF c = '\' OR c = '"' THEN
            out := out || '\' || c;
        ELSIF cp BETWEEN 128 AND 160 OR cp IN (173, 1564, 1757, 1807, 2192, 2193, 2274, 5760, 6158, 8239, 8287, 12288, 65279, 69821, 69837)
              OR cp BETWEEN 1536 AND 1541 OR cp BETWEEN 8192 AND 8207 OR cp BETWEEN 8232 AND 8238 OR cp BETWEEN 8288 AND 8303
              OR cp BETWEEN 57344 AND 63743 OR cp BETWEEN 64976 AND 65007 OR cp BETWEEN 65529 AND 65531
              OR cp BETWEEN 78896 AND 78911 OR cp BETWEEN 113824 AND 113827 OR cp BETWEEN 119155 AND 119162
              OR cp BETWEEN 917504 AND 917631 OR cp >= 983040 OR cp & 65534 = 65534 THEN
            out := out || CASE WHEN cp < 65536 THEN '\u' || lpad(to_hex(cp), 4, '0') ELSE '\U' || lpad(to_hex(cp), 8, '0') END;
        ELSE
            out := out || c;
        END IF;
    END LOOP;
    RETURN out || '"';
END
$$;

-- enqueue_rfc3339 is Go's time.RFC3339Nano of t in UTC (trailing zeros of
-- the fraction dropped, and the dot with them), as store.RescheduleDetail
-- writes a due time.
CREATE FUNCTION backwave.enqueue_rfc3339(t timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
           || rtrim(rtrim('.' || to_char(t AT TIME ZONE 'UTC', 'US'), '0'), '.') || 'Z'
$$;

-- enqueue_rewrite rewrites holder, the job holding the unique key of job j
-- (named by at in errors), as store/postgres/replace.go does: it locks the
-- holder, refuses one that is not Scheduled (SQLSTATE 55000), and gives it
-- j's payload, the Tags keys/values (Tag Suggest's dictionary dropping each
-- old Tag no other job carries), the due time of j's mode (wait_us and
-- max_wait_us the Debounce wait in microseconds, or NULL), the audit entry
-- and, if it is due now and notify is true, the Wake-Up Hint. Called by
-- enqueue_jobs for a job whose key was held; not for direct use.
CREATE FUNCTION backwave.enqueue_rewrite(at text, j backwave.enqueue_job, holder bigint, keys text[], vals text[],
                                         wait_us bigint, max_wait_us bigint, notify boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    st     text;
    q      text;
    due_at timestamptz;
    is_due boolean;
BEGIN
    SELECT h.state, h.queue INTO st, q FROM backwave.job h WHERE h.id = holder FOR UPDATE;
    IF NOT FOUND OR st <> 'scheduled' THEN
        RAISE EXCEPTION '%: unique_mode %: unique_key % is held by job %, which is %; only a scheduled holder is rewritten',
            at, j.unique_mode, quote_literal(j.unique_key), holder, coalesce(st, 'purged')
            USING ERRCODE = '55000', COLUMN = 'unique_key',
                  HINT = 'enqueue again once the holder has ended, or without unique_mode';
    END IF;
    -- Tag Suggest's dictionary entries of the old Tags, locked in key
    -- order as a purge locks them (purgeTagLockSQL).
    PERFORM 1 FROM backwave.tag d
    WHERE (d.key, d.value) IN (SELECT t.key, t.value FROM backwave.job_tag t WHERE t.job_id = holder)
    ORDER BY d.key, d.value
    FOR UPDATE OF d;
    -- rewriteHolderSQL.
    WITH now AS (SELECT now() AS t),
    new_payload AS (
        INSERT INTO backwave.job_payload (job_id, payload) VALUES (holder, convert_to(j.payload::text, 'UTF8'))
        ON CONFLICT (job_id) DO UPDATE SET payload = EXCLUDED.payload
    ),
    dropped_tag AS (DELETE FROM backwave.job_tag WHERE job_id = holder),
    pruned_tag AS (
        DELETE FROM backwave.tag d
        WHERE (d.key, d.value) IN (SELECT t.key, t.value FROM backwave.job_tag t WHERE t.job_id = holder)
          AND (d.key, d.value) NOT IN (SELECT * FROM unnest(keys, vals))
          AND NOT EXISTS (SELECT 1 FROM backwave.job_tag t WHERE t.key = d.key AND t.value = d.value AND t.job_id <> holder)
    ),
    known_tag AS (
        INSERT INTO backwave.tag (key, value, folded, display)
        SELECT DISTINCT ON (t.key, t.value) t.key, t.value, lower(t.display), t.display
        FROM (SELECT t.key, t.value, CASE WHEN t.key = '' THEN t.value ELSE t.key || '=' || t.value END AS display
              FROM unnest(keys, vals) AS t(key, value)) t
        WHERE NOT EXISTS (SELECT 1 FROM backwave.tag d WHERE d.key = t.key AND d.value = t.value)
        ON CONFLICT DO NOTHING
    ),
    job AS (
        UPDATE backwave.job h SET scheduled_at = CASE
            WHEN wait_us IS NOT NULL THEN least(now.t + wait_us * interval '1 microsecond',
                                                greatest(h.created_at + max_wait_us * interval '1 microsecond', now.t))
            ELSE coalesce(j.run_at, now.t) END
        FROM now WHERE h.id = holder
        RETURNING h.scheduled_at, h.scheduled_at <= now.t AS due
    )
    SELECT job.scheduled_at, job.due INTO due_at, is_due FROM job;
    -- rewriteTagSQL: the new Tags, once the old ones are gone.
    INSERT INTO backwave.job_tag (job_id, key, value)
    SELECT holder, t.key, t.value FROM unnest(keys, vals) AS t(key, value)
    ON CONFLICT DO NOTHING;
    INSERT INTO backwave.audit (at, actor, action, job_id, queue, detail)
    VALUES (now(), 'system', CASE WHEN wait_us IS NOT NULL THEN 'unique_debounce' ELSE 'unique_replace' END, holder, q,
            'key ' || backwave.enqueue_go_quote(j.unique_key) || ' scheduled_at ' || backwave.enqueue_rfc3339(due_at));
    IF notify AND is_due THEN
        PERFORM pg_notify('backwave.hint', q);
    END IF;
END
$$;

-- enqueue_jobs, as in 016, with the rewrite modes: the checks of
-- unique_mode, debounce_wait and debounce_max_wait, a debounced job's
-- first wait written at its insert, and after the insert the rewrites of
-- the holders (enqueue_rewrite).
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
    wait_us    bigint[] := '{}';
    max_us     bigint[] := '{}';
    iv         interval;
    res_ids    bigint[];
    res_ins    boolean[];
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
        -- The mode: store.Unique.validateMode and the root package's
        -- uniqueKey(). NULL is 'skip'; the Debounce waits are given with
        -- 'debounce' and only then, and bounded by Go's longest
        -- time.Duration (9223372036854775 µs, about 292 years).
        IF j.unique_mode IS NOT NULL AND j.unique_mode NOT IN ('skip', 'replace', 'debounce') THEN
            RAISE EXCEPTION '%: unique_mode %: want skip, replace or debounce', at, quote_literal(j.unique_mode)
                USING ERRCODE = '22023', COLUMN = 'unique_mode';
        ELSIF j.unique_mode IS NOT NULL AND j.unique_key IS NULL THEN
            RAISE EXCEPTION '%: unique_mode % without a unique_key', at, j.unique_mode USING ERRCODE = '22023', COLUMN = 'unique_mode';
        END IF;
        wait_us := wait_us || NULL::bigint;
        max_us := max_us || NULL::bigint;
        FOR w IN 1 .. 2 LOOP
            fld := CASE w WHEN 1 THEN 'debounce_wait' ELSE 'debounce_max_wait' END;
            iv := CASE w WHEN 1 THEN j.debounce_wait ELSE j.debounce_max_wait END;
            IF j.unique_mode IS DISTINCT FROM 'debounce' THEN
                IF iv IS NOT NULL THEN
                    RAISE EXCEPTION '%: % without unique_mode debounce', at, fld USING ERRCODE = '22023', COLUMN = fld;
                END IF;
            ELSIF iv IS NULL THEN
                RAISE EXCEPTION '%: % is NULL (unique_mode debounce needs debounce_wait and debounce_max_wait)', at, fld
                    USING ERRCODE = '22004', COLUMN = fld;
            ELSIF iv <= interval '0' THEN
                RAISE EXCEPTION '%: % % is not positive', at, fld, iv USING ERRCODE = '22023', COLUMN = fld;
            ELSIF extract(epoch FROM iv) * 1000000 > 9223372036854775 THEN
                RAISE EXCEPTION '%: % % is longer than the longest Go time.Duration (about 292 years)', at, fld, iv
                    USING ERRCODE = '22023', COLUMN = fld;
            END IF;
        END LOOP;
        IF j.unique_mode = 'debounce' THEN
            wait_us[i] := (extract(epoch FROM j.debounce_wait) * 1000000)::bigint;
            max_us[i] := (extract(epoch FROM j.debounce_max_wait) * 1000000)::bigint;
            IF max_us[i] < wait_us[i] THEN
                RAISE EXCEPTION '%: debounce_max_wait % is shorter than debounce_wait %, want at least the wait', at, j.debounce_max_wait, j.debounce_wait
                    USING ERRCODE = '22023', COLUMN = 'debounce_max_wait';
            ELSIF j.run_at IS NOT NULL THEN
                RAISE EXCEPTION '%: run_at given with unique_mode debounce, which decides the due time; drop run_at', at
                    USING ERRCODE = '22023', COLUMN = 'run_at';
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
    -- the transaction's now(). A debounced job is due its wait after the
    -- insert (store/postgres/replace.go's debounceFirstSQL, written here
    -- into the insert).
    WITH now AS (SELECT now() AS t),
    candidate AS (
        SELECT nextval('backwave.job_id_seq') AS id, u.ord AS rank, u.*
        FROM (SELECT u.wire_name, u.queue, convert_to(u.payload::text, 'UTF8') AS payload,
                     coalesce(now() + wait_us[u.ord::integer] * interval '1 microsecond', u.run_at) AS scheduled_at,
                     u.max_attempts, u.unique_key,
                     coalesce((extract(epoch FROM u.unique_period) * 1000000)::bigint, 0) AS unique_period, u.concurrency_key, u.ord
              FROM unnest(jobs) WITH ORDINALITY AS u(wire_name, payload, queue, run_at, max_attempts, labels, keyed_tags,
                                                     unique_key, unique_period, concurrency_key, unique_mode, debounce_wait,
                                                     debounce_max_wait, ord)
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
    SELECT array_agg(r.job_id ORDER BY r.ord), array_agg(r.inserted ORDER BY r.ord) INTO res_ids, res_ins FROM (
        SELECT i.ord::integer AS ord, i.id AS job_id, true AS inserted, (SELECT count(*) FROM hint) AS hints FROM input i
        UNION ALL
        SELECT c.ord::integer, h.job_id, false, 0::bigint
        FROM candidate c JOIN held h ON h.key = c.unique_key
        WHERE h.job_id <> c.id
    ) r
    WHERE r.hints >= 0; -- makes the hint CTE run
    IF cardinality(res_ids) IS DISTINCT FROM n THEN
        RAISE EXCEPTION 'enqueue: the insert answered % of % jobs', coalesce(cardinality(res_ids), 0), n;
    END IF;

    -- The rewrites, in input order (store/postgres/replace.go's
    -- rewriteHeld): each job in mode replace or debounce whose key was held
    -- rewrites the holder, which may be a job an earlier one of this call
    -- inserted.
    FOR i IN 1 .. n LOOP
        j := jobs[i];
        CONTINUE WHEN res_ins[i] OR coalesce(j.unique_mode, 'skip') = 'skip';
        PERFORM backwave.enqueue_rewrite(format('enqueue: jobs[%s] (wire_name %s)', i - 1, quote_literal(j.wire_name)), j, res_ids[i],
            (SELECT coalesce(array_agg(t.key ORDER BY t.n), '{}') FROM unnest(tag_ords, tag_keys) WITH ORDINALITY AS t(ord, key, n) WHERE t.ord = i),
            (SELECT coalesce(array_agg(t.value ORDER BY t.n), '{}') FROM unnest(tag_ords, tag_values) WITH ORDINALITY AS t(ord, value, n) WHERE t.ord = i),
            wait_us[i], max_us[i], notify);
    END LOOP;
    RETURN QUERY SELECT u.ord::integer, u.id, u.ins FROM unnest(res_ids, res_ins) WITH ORDINALITY AS u(id, ins, ord) ORDER BY u.ord;
END
$$;

-- enqueue_json_jobs reads the JSON array of job objects enqueue_many and
-- enqueue_many_results take into the composites enqueue_jobs checks and
-- inserts: wire_name required, a missing field enqueue's default, an
-- unknown field or a field of the wrong JSON type an error naming it.
-- unique_period, debounce_wait and debounce_max_wait are an interval
-- string or a number of seconds.
CREATE FUNCTION backwave.enqueue_json_jobs(jobs json) RETURNS backwave.enqueue_job[]
LANGUAGE plpgsql AS $$
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
                        'concurrency_key', 'unique_mode', 'debounce_wait', 'debounce_max_wait');
        IF bad IS NOT NULL THEN
            RAISE EXCEPTION '%: unknown field % (want wire_name, payload, queue, run_at, max_attempts, labels, keyed_tags, unique_key, unique_period, concurrency_key, unique_mode, debounce_wait, debounce_max_wait)',
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
            j.unique_period := backwave.enqueue_json_interval(e, f);
            f := 'concurrency_key';
            j.concurrency_key := backwave.enqueue_json_text(e, f);
            f := 'unique_mode';
            j.unique_mode := backwave.enqueue_json_text(e, f);
            f := 'debounce_wait';
            j.debounce_wait := backwave.enqueue_json_interval(e, f);
            f := 'debounce_max_wait';
            j.debounce_max_wait := backwave.enqueue_json_interval(e, f);
        EXCEPTION WHEN data_exception OR raise_exception THEN
            RAISE EXCEPTION '%: field %: %', at, f, SQLERRM USING ERRCODE = '22023', COLUMN = f;
        END;
        batch := batch || j;
    END LOOP;
    RETURN batch;
END
$$;

-- enqueue_json_interval returns e's field f as an interval when it is an
-- interval string or a number of seconds (NULL when absent or null) and
-- raises otherwise.
CREATE FUNCTION backwave.enqueue_json_interval(e json, f text) RETURNS interval
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF json_typeof(e -> f) NOT IN ('string', 'number', 'null') THEN
        RAISE EXCEPTION 'is a JSON %, want an interval such as "1 hour" or a number of seconds', json_typeof(e -> f);
    END IF;
    RETURN (e ->> f)::interval;
END
$$;

-- enqueue_many, as in 016, reading the new fields (enqueue_json_jobs).
CREATE OR REPLACE FUNCTION backwave.enqueue_many(jobs json, history text DEFAULT 'transitions+detail', notify boolean DEFAULT true)
RETURNS TABLE (ord integer, job_id bigint, inserted boolean)
LANGUAGE sql AS $$
    SELECT r.ord, r.job_id, r.inserted FROM backwave.enqueue_jobs(backwave.enqueue_json_jobs(jobs), history, notify) r ORDER BY r.ord
$$;

-- enqueue_many_results is enqueue_many that also answers whether each job
-- rewrote its key's holder: replaced is true for a job in unique_mode
-- replace or debounce whose key was held (inserted false, job_id the
-- holder), since enqueue_jobs rewrites every such holder or raises.
CREATE FUNCTION backwave.enqueue_many_results(jobs json, history text DEFAULT 'transitions+detail', notify boolean DEFAULT true)
RETURNS TABLE (ord integer, job_id bigint, inserted boolean, replaced boolean)
LANGUAGE sql AS $$
    WITH b AS (SELECT backwave.enqueue_json_jobs(jobs) AS jobs)
    SELECT r.ord, r.job_id, r.inserted, NOT r.inserted AND coalesce((b.jobs[r.ord]).unique_mode IN ('replace', 'debounce'), false)
    FROM b, LATERAL backwave.enqueue_jobs(b.jobs, history, notify) r
    ORDER BY r.ord
$$;


-- enqueue, as in 016, building the composite without a mode: its
-- signature stays the one migration 012 made (see 016 on why), so a job in
-- unique_mode replace or debounce goes through enqueue_many or
-- enqueue_many_results.
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
        ARRAY[ROW(wire_name, payload, queue, run_at, max_attempts, labels, keyed_tags, unique_key, unique_period, NULL, NULL, NULL,
                  NULL)::backwave.enqueue_job],
        history, notify) e
$$;
