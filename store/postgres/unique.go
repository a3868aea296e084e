package postgres

import (
	"github.com/backwave/backwave/store"
)

// Unique keys (migration/006_unique.sql). A key row in backwave.job_unique
// names the job holding one key: until the job first ends terminal
// (expires_at NULL; the release trigger deletes the row in the statement
// that ends the job, whichever it is) or until expires_at. The table's
// primary key enforces the rule, inside the one statement that inserts the
// jobs (insertSQL, insertGraphSQL):
//
//  1. candidate draws an id for every job of the batch;
//  2. held upserts one key row per distinct key, for the first candidate of
//     that key in insert order: a new key is inserted with the candidate as
//     holder; on a conflict the row is locked and its holder replaced only
//     if the row has expired at the statement's now, and kept otherwise.
//     Either way RETURNING yields the key's holder after the statement;
//  3. input keeps the candidates without a key and those that came back as
//     holders; only they are inserted. Every other candidate with a key
//     answers its key's holder, not inserted.
//
// Why an upsert that always writes the row, rather than DO NOTHING and a
// read: under READ COMMITTED a statement's snapshot may predate the commit
// of the insert that holds the key (the racing inserter it waited for), so
// a read in the same statement might not see the holder. DO UPDATE locks
// the row's newest version and re-evaluates the CASE on it, so of any
// number of racing inserts of one free key exactly one becomes the holder
// and all the others learn its id. Keys are taken in key order, as the
// release trigger frees them, so batches sharing keys never deadlock.
//
// uniqueSQL holds the CTEs held and input over the CTEs now and candidate,
// whose columns include id, rank (the job's place in the insert order),
// unique_key (NULL for none) and unique_period (the period scope's length
// in microseconds, 0 for while-live). $1 is the statement's clock, as
// everywhere.
const uniqueSQL = `held AS (
    INSERT INTO backwave.job_unique AS k (key, job_id, expires_at)
    SELECT DISTINCT ON (c.unique_key) c.unique_key, c.id,
           CASE WHEN c.unique_period > 0 THEN now.t + c.unique_period * interval '1 microsecond' END
    FROM candidate c, now
    WHERE c.unique_key IS NOT NULL
    ORDER BY c.unique_key, c.rank
    ON CONFLICT (key) DO UPDATE SET
        job_id = CASE WHEN k.expires_at <= coalesce($1::timestamptz, now()) THEN EXCLUDED.job_id ELSE k.job_id END,
        expires_at = CASE WHEN k.expires_at <= coalesce($1::timestamptz, now()) THEN EXCLUDED.expires_at ELSE k.expires_at END
    RETURNING k.key, k.job_id
),
input AS (
    SELECT c.* FROM candidate c
    WHERE c.unique_key IS NULL OR c.id IN (SELECT h.job_id FROM held h)
)`

// heldSQL answers the candidates not inserted: their ordinal, their key's
// holder and inserted false, in the shape of the insert statements' other
// result rows (ordinal, id, inserted, hints).
const heldSQL = `SELECT c.ord, h.job_id, false, 0::bigint
FROM candidate c JOIN held h ON h.key = c.unique_key
WHERE h.job_id <> c.id`

// uniqueArrays returns the unique-key parameters of a batch: each job's key
// (nil for none) and its period in microseconds (0 for while-live or none).
func uniqueArrays(jobs []store.NewJob) (keys []*string, periods []int64) {
	keys, periods = make([]*string, len(jobs)), make([]int64, len(jobs))
	for i, nj := range jobs {
		if nj.Unique.Key == "" {
			continue
		}
		k := nj.Unique.Key
		keys[i] = &k
		if nj.Unique.Scope == store.UniquePeriod {
			periods[i] = micros(nj.Unique.Period)
		}
	}
	return keys, periods
}
