"""The Python client of the SQL enqueue tests (sqlenqueue_client_test.go).

/usr/bin/python3 client.py URL SCHEMA NOTE KEY HOLD commit|rollback
prints "<job id> <inserted>"; an empty KEY enqueues without a unique key.
Needs Debian's python3-psycopg2.
"""
import json
import sys
import time

import psycopg2
from psycopg2 import sql

url, schema, note, key, hold, action = sys.argv[1:7]
conn = psycopg2.connect(url)
try:
    with conn.cursor() as cur:  # psycopg2 opens the transaction
        cur.execute(sql.SQL("INSERT INTO {}.app_row (lang, note) VALUES ('python', %s)").format(sql.Identifier(schema)), (note,))
        cur.execute(
            sql.SQL("SELECT job_id, inserted FROM {}.enqueue(%s, %s, unique_key => %s)").format(sql.Identifier(schema)),
            ("sqlenqueue.greet", json.dumps({"to": note, "lang": "python", "n": 1}), key or None),
        )
        job_id, inserted = cur.fetchone()
        time.sleep(float(hold))
    if action == "commit":
        conn.commit()
    else:
        conn.rollback()
    print(job_id, "true" if inserted else "false")
finally:
    conn.close()
