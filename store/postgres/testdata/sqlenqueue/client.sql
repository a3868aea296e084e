-- The psql client of the SQL enqueue tests (sqlenqueue_client_test.go), and
-- the worked example of docs/other-languages.md: a row of the
-- application's own and a job, in one transaction.
--   psql -X -q -At -v ON_ERROR_STOP=1 -v schema=S -v lang=psql -v note=N \
--        -v key=K -v hold=0 -v commit=true -f client.sql URL
-- prints "<job id> <inserted>"; an empty key enqueues without one.
BEGIN;
INSERT INTO :"schema".app_row (lang, note) VALUES (:'lang', :'note');
SELECT job_id || ' ' || inserted
FROM :"schema".enqueue('sqlenqueue.greet',
                       json_build_object('to', :'note', 'lang', :'lang', 'n', 1),
                       unique_key => nullif(:'key', ''));
SELECT pg_sleep(:hold) \g /dev/null
\if :commit
COMMIT;
\else
ROLLBACK;
\endif
