package sqlite

// The statements the store runs, written against the literal prefix
// backwave_ and renamed once, at Open, by schemaName.Rename. State codes
// that a partial index's WHERE clause must match are literals (1 scheduled,
// 3 running; see codec.go).

// jobColumns are the hot-row columns every job read selects, in scanJob's
// order.
const jobColumns = `id, queue, wire_name, state, attempt, max_attempts, scheduled_at, created_at,
	finalized_at, retry_cause, cancel_cause, worker, lease_expires_at, cancel_requested, attempt_base, snoozes, concurrency_key,
	terminal_cause`

const (
	sqlInsertJob = `INSERT INTO backwave_job (queue, wire_name, state, max_attempts, scheduled_at, created_at)
	VALUES (?, ?, 1, ?, ?, ?)`
	// sqlInsertKeyedJob is sqlInsertJob for a job with a Concurrency Key.
	sqlInsertKeyedJob = `INSERT INTO backwave_job (queue, wire_name, state, max_attempts, scheduled_at, created_at, concurrency_key)
	VALUES (?, ?, 1, ?, ?, ?, ?)`
	// sqlInsertUniform inserts one Scheduled job per element of the JSON
	// array ?1, each in Queue ?2 with Wire Name ?3, attempt budget ?4, due
	// at ?5 and created at ?6, flipping count_flip (the caller counts
	// them), each with Concurrency Key ?7 (NULL: none), and returns their
	// ids. The rows are alike, so their order needs no ORDER BY: the ids
	// ascend in the order they go in.
	sqlInsertUniform = `INSERT INTO backwave_job (queue, wire_name, state, max_attempts, scheduled_at, created_at, count_flip, concurrency_key)
	SELECT ?2, ?3, 1, ?4, ?5, ?6, 1, ?7 FROM json_each(?1)
	RETURNING id`
	// sqlInsertRows is sqlInsertUniform for jsonRows ?1: [Queue, Wire Name,
	// attempt budget, due time, Concurrency Key or null], created at ?2.
	sqlInsertRows = `INSERT INTO backwave_job (queue, wire_name, state, max_attempts, scheduled_at, created_at, count_flip, concurrency_key)
	SELECT value ->> 0, value ->> 1, 1, value ->> 2, value ->> 3, ?2, 1, value ->> 4 FROM jsonb_each(?1) ORDER BY key
	RETURNING id`
	// sqlPayloadsIn stores payloads from ?1: job id → payload as hex (a
	// jsonObject).
	sqlPayloadsIn = `INSERT INTO backwave_job_payload (job_id, payload)
	SELECT CAST(key AS INTEGER), unhex(value) FROM json_each(?1)`
	sqlInsertPayload = `INSERT INTO backwave_job_payload (job_id, payload) VALUES (?, ?)`
	sqlInsertTag     = `INSERT OR IGNORE INTO backwave_job_tag (job_id, key, value) VALUES (?, ?, ?)`
	sqlKnowQueue     = `INSERT INTO backwave_queue (name) VALUES (?) ON CONFLICT (name) DO NOTHING`
	sqlTransition    = `INSERT INTO backwave_job_transition (job_id, at, from_state, state, via, attempt, failure_detail)
	VALUES (?, ?, ?, ?, ?, ?, ?)`

	// sqlClaimSelect reads claimable jobs with their payloads, trace,
	// progress and Cursor, in the columns scanClaimed reads; sqlClaimDue
	// and sqlClaimByID add which jobs.
	sqlClaimSelect = `SELECT j.id, j.wire_name, j.attempt, j.max_attempts, j.scheduled_at, j.created_at, j.finalized_at,
		j.retry_cause, j.cancel_cause, j.cancel_requested, j.attempt_base, j.snoozes, p.payload, t.trace_context,
		g.attempt, g.fraction, g.note, g.at, c.attempt, c.value, c.at, j.concurrency_key, j.terminal_cause
	FROM backwave_job j LEFT JOIN backwave_job_payload p ON p.job_id = j.id
		LEFT JOIN backwave_job_trace t ON t.job_id = j.id
		LEFT JOIN backwave_job_progress g ON g.job_id = j.id
		LEFT JOIN backwave_job_cursor c ON c.job_id = j.id`

	sqlQueueSettings = `SELECT paused, concurrency_limit, rate_limit, rate_period, rate_window, rate_count,
		key_limit, key_rate_limit, key_rate_period, fair_claim, fair_turn FROM backwave_queue WHERE name = ?`
	sqlCountRunning = `SELECT COUNT(*) FROM backwave_job WHERE queue = ? AND state = 3`
	// sqlClaimDue reads, in claim order, up to ?3 jobs of Queue ?1 due at
	// ?2 (the partial index's order) with their payloads; the claim then
	// leases exactly those with sqlClaim, in the same write transaction.
	// scanClaimed reads the rows.
	sqlClaimDue = sqlClaimSelect + `
	WHERE j.queue = ?1 AND j.state = 1 AND j.scheduled_at <= ?2
	ORDER BY j.scheduled_at, j.id
	LIMIT ?3`
	// sqlClaim leases the Scheduled jobs ?3 (a JSON array of ids) to worker
	// ?1 until ?2, charging each its next Attempt. It flips count_flip: the
	// caller adds the counts' delta (migrations/0005_count_flip.sql).
	sqlClaim = `UPDATE backwave_job
	SET state = 3, attempt = attempt + 1, worker = ?1, lease_expires_at = ?2, count_flip = 1 - count_flip
	WHERE id IN (SELECT value FROM json_each(?3)) AND state = 1`
	// sqlTagsIn tells whether any job with an id from ?1 to ?2 has a Tag.
	sqlTagsIn = `SELECT EXISTS (SELECT 1 FROM backwave_job_tag WHERE job_id BETWEEN ?1 AND ?2)`

	sqlRenew = `UPDATE backwave_job SET lease_expires_at = ?1
	WHERE id = ?2 AND state = 3 AND worker = ?3 AND attempt = ?4
	RETURNING cancel_requested`

	// sqlApplyOutcomes is the fenced outcome write of a batch of one kind
	// (outcomeKind) other than a retry: ?1 maps job id to Attempt
	// (jsonObject), and a row changes only if its job is still Running
	// under worker ?2 at that Attempt. It sets state ?6, the Retry Cause ?7
	// and cancel cause ?8 (null keeps the column), finalized_at ?9 and the
	// Terminal Cause ?10 (null: none). A
	// recorded cancel request wins (core.UnderCancel): the job becomes
	// Cancelled (?3) with cancel cause operator (?4), finalized at now
	// (?5), no Terminal Cause, its due time and Retry Cause kept. It flips count_flip and
	// returns each row's new state: the caller adds the counts' delta.
	sqlApplyOutcomes = `UPDATE backwave_job AS j
	SET state = CASE WHEN j.cancel_requested THEN ?3 ELSE ?6 END,
		retry_cause = CASE WHEN j.cancel_requested THEN j.retry_cause ELSE COALESCE(?7, j.retry_cause) END,
		cancel_cause = CASE WHEN j.cancel_requested THEN ?4 ELSE COALESCE(?8, j.cancel_cause) END,
		finalized_at = CASE WHEN j.cancel_requested THEN ?5 ELSE ?9 END,
		terminal_cause = CASE WHEN j.cancel_requested THEN NULL ELSE ?10 END,
		worker = NULL,
		lease_expires_at = NULL,
		count_flip = 1 - j.count_flip
	FROM (SELECT CAST(key AS INTEGER) AS id, value AS attempt FROM json_each(?1)) AS o
	WHERE j.id = o.id AND j.state = 3 AND j.worker = ?2 AND j.attempt = o.attempt
	RETURNING id, attempt, queue, cancel_requested, state`
	// sqlApplyRetries is sqlApplyOutcomes for retries and snoozes: ?1 maps
	// job id to [Attempt, due time], and the job is due again then. ?10 is
	// 1 for a snooze, 0 for a retry: a snooze counts itself in snoozes and
	// moves attempt_base up by one, so its Attempt is not charged.
	sqlApplyRetries = `UPDATE backwave_job AS j
	SET state = CASE WHEN j.cancel_requested THEN ?3 ELSE ?6 END,
		scheduled_at = CASE WHEN j.cancel_requested THEN j.scheduled_at ELSE o.due END,
		attempt_base = CASE WHEN j.cancel_requested THEN j.attempt_base ELSE j.attempt_base + ?10 END,
		snoozes = CASE WHEN j.cancel_requested THEN j.snoozes ELSE j.snoozes + ?10 END,
		retry_cause = CASE WHEN j.cancel_requested THEN j.retry_cause ELSE COALESCE(?7, j.retry_cause) END,
		cancel_cause = CASE WHEN j.cancel_requested THEN ?4 ELSE COALESCE(?8, j.cancel_cause) END,
		finalized_at = CASE WHEN j.cancel_requested THEN ?5 ELSE ?9 END,
		terminal_cause = NULL,
		worker = NULL,
		lease_expires_at = NULL,
		count_flip = 1 - j.count_flip
	FROM (SELECT CAST(key AS INTEGER) AS id, value ->> 0 AS attempt, value ->> 1 AS due FROM json_each(?1)) AS o
	WHERE j.id = o.id AND j.state = 3 AND j.worker = ?2 AND j.attempt = o.attempt
	RETURNING id, attempt, queue, cancel_requested, state`
	// sqlCountDeltas adds deltas to the Monitor's counts, from jsonRows
	// ?1: [Queue, state, delta].
	sqlCountDeltas = `INSERT INTO backwave_job_count (queue, state, n)
	SELECT value ->> 0, value ->> 1, value ->> 2 FROM jsonb_each(?1) WHERE true
	ON CONFLICT (queue, state) DO UPDATE SET n = n + excluded.n`
	// sqlTransitionsOf records at ?2 one Transition Log entry from state ?3
	// to ?4 by ?5, without a Failure Detail, for every job of ?1 (job id →
	// Attempt, a jsonObject).
	sqlTransitionsOf = `INSERT INTO backwave_job_transition (job_id, at, from_state, state, via, attempt)
	SELECT CAST(key AS INTEGER), ?2, ?3, ?4, ?5, value FROM json_each(?1)`
	// sqlTransitionRows records Transition Log entries at ?2 from jsonRows
	// ?1: [job id, from state, state, via, attempt, Failure Detail as hex
	// or null]. The entries of one job keep their order; the batch holds
	// one entry per job.
	sqlTransitionRows = `INSERT INTO backwave_job_transition (job_id, at, from_state, state, via, attempt, failure_detail)
	SELECT value ->> 0, ?2, value ->> 1, value ->> 2, value ->> 3, value ->> 4, CAST(unhex(value ->> 5) AS TEXT)
	FROM jsonb_each(?1)`
	// sqlOutputsOf upserts Job Outputs from ?1: job id → output as hex (a
	// jsonObject).
	sqlOutputsOf = `INSERT INTO backwave_job_output (job_id, output)
	SELECT CAST(key AS INTEGER), unhex(value) FROM json_each(?1) WHERE true
	ON CONFLICT (job_id) DO UPDATE SET output = excluded.output`
	// sqlTagRows adds Tags from jsonRows ?1: [job id, key, value].
	sqlTagRows = `INSERT OR IGNORE INTO backwave_job_tag (job_id, key, value)
	SELECT value ->> 0, value ->> 1, value ->> 2 FROM jsonb_each(?1)`
	// sqlKnowTagRows adds Tags to Tag Suggest's dictionary from jsonRows
	// ?1: [key, value, folded, display].
	sqlKnowTagRows = `INSERT OR IGNORE INTO backwave_tag (key, value, folded, display)
	SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM jsonb_each(?1)`

	sqlLapsed = `SELECT id, queue, attempt, max_attempts + attempt_base, cancel_requested FROM backwave_job
	WHERE state = 3 AND queue IN (SELECT value FROM json_each(?1)) AND lease_expires_at <= ?2
	ORDER BY id LIMIT ?3`
	sqlHeld = `SELECT queue, max_attempts + attempt_base, cancel_requested FROM backwave_job
	WHERE id = ?1 AND state = 3 AND worker = ?2 AND attempt = ?3`
	// sqlEndLease ends a Lease without an outcome (expiry or Relinquish),
	// fenced by the Attempt the caller read in the same transaction; ?8 is
	// the Terminal Cause (core.TerminalCauseAfter; null: none).
	sqlEndLease = `UPDATE backwave_job
	SET state = ?1,
		scheduled_at = COALESCE(?2, scheduled_at),
		retry_cause = COALESCE(?3, retry_cause),
		finalized_at = ?4,
		cancel_cause = COALESCE(?7, cancel_cause),
		terminal_cause = ?8,
		worker = NULL,
		lease_expires_at = NULL
	WHERE id = ?5 AND state = 3 AND attempt = ?6`

	sqlPause = `INSERT INTO backwave_queue (name, paused) VALUES (?1, ?2)
	ON CONFLICT (name) DO UPDATE SET paused = excluded.paused`
	sqlSetLimit = `INSERT INTO backwave_queue (name, concurrency_limit) VALUES (?1, ?2)
	ON CONFLICT (name) DO UPDATE SET concurrency_limit = excluded.concurrency_limit`
	sqlQueueList = `SELECT q.name, q.paused, q.concurrency_limit, q.rate_limit, q.rate_period, q.rate_window, q.rate_count,
		(SELECT COUNT(*) FROM backwave_job j WHERE j.queue = q.name AND j.state = 3),
		q.key_limit, q.key_rate_limit, q.key_rate_period, q.fair_claim
	FROM backwave_queue q ORDER BY q.name`

	sqlJobGet       = `SELECT ` + jobColumns + ` FROM backwave_job WHERE id = ?`
	sqlPayloadsOf   = `SELECT job_id, payload FROM backwave_job_payload WHERE job_id IN (SELECT value FROM json_each(?))`
	sqlTagsOf       = `SELECT job_id, key, value FROM backwave_job_tag WHERE job_id IN (SELECT value FROM json_each(?)) ORDER BY job_id, key, value`
	sqlCountByState = `SELECT state, SUM(n) FROM backwave_job_count WHERE n > 0 GROUP BY state`
	sqlCountInQueue = `SELECT state, n FROM backwave_job_count WHERE queue = ? AND n > 0`
	sqlTransitions  = `SELECT at, from_state, state, via, attempt, COALESCE(failure_detail, ''), id
	FROM backwave_job_transition WHERE job_id = ? ORDER BY id`
	sqlOutput = `SELECT output FROM backwave_job_output WHERE job_id = ?`

	sqlJobState         = `SELECT state, attempt FROM backwave_job WHERE id = ?`
	sqlCancelNow        = `UPDATE backwave_job SET state = ?1, cancel_cause = ?2, finalized_at = ?3 WHERE id = ?4`
	sqlRequestCancel    = `UPDATE backwave_job SET cancel_requested = 1 WHERE id = ?`
	sqlJobListPrefix    = `SELECT ` + jobColumns + ` FROM backwave_job WHERE 1 = 1`
	sqlJobListStates    = ` AND state IN (SELECT value FROM json_each(?))`
	sqlJobListQueue     = ` AND queue = ?`
	sqlJobListWireName  = ` AND wire_name = ?`
	sqlJobListBefore    = ` AND id < ?`
	sqlJobListOrderPage = ` ORDER BY id DESC LIMIT ?`
)

// queries holds every statement renamed to one store's Schema Name.
type queries struct {
	insertJob, insertPayload, insertTag, knowQueue, transition                                                                                      string
	queueSettings, countRunning, claimDue, claim, tagsIn                                                                                            string
	renew, lapsed, held, endLease                                                                                                                   string
	insertUniform, insertRows, payloadsIn, countDeltas, applyOutcomes, applyRetries, transitionsOf, transitionRows, outputsOf, tagRows, knowTagRows string
	pause, setLimit, queueList                                                                                                                      string
	jobGet, payloadsOf, tagsOf, countByState, countInQueue, transitions, output                                                                     string
	jobState, cancelNow, requestCancel                                                                                                              string
	jobListPrefix, jobListStates, jobListQueue, jobListWireName, jobListBefore                                                                      string
	jobListOrderPage                                                                                                                                string
	dep                                                                                                                                             depQueries
	unique                                                                                                                                          uniqueQueries
	rate                                                                                                                                            rateQueries
	fleet                                                                                                                                           fleetQueries
	node                                                                                                                                            nodeQueries
	key                                                                                                                                             keyQueries
	queueRemove                                                                                                                                     queueRemoveQueries
}

func newQueries(n schemaName) *queries {
	r := n.Rename
	return &queries{
		insertJob: r(sqlInsertJob), insertPayload: r(sqlInsertPayload), insertTag: r(sqlInsertTag),
		knowQueue: r(sqlKnowQueue), transition: r(sqlTransition),
		queueSettings: r(sqlQueueSettings), countRunning: r(sqlCountRunning), claimDue: r(sqlClaimDue), claim: r(sqlClaim),
		tagsIn: r(sqlTagsIn),
		renew:  r(sqlRenew),
		lapsed: r(sqlLapsed), held: r(sqlHeld), endLease: r(sqlEndLease),
		insertUniform: r(sqlInsertUniform), insertRows: r(sqlInsertRows), payloadsIn: r(sqlPayloadsIn),
		countDeltas: r(sqlCountDeltas), applyOutcomes: r(sqlApplyOutcomes), applyRetries: r(sqlApplyRetries), transitionsOf: r(sqlTransitionsOf),
		transitionRows: r(sqlTransitionRows), outputsOf: r(sqlOutputsOf),
		tagRows: r(sqlTagRows), knowTagRows: r(sqlKnowTagRows),
		pause: r(sqlPause), setLimit: r(sqlSetLimit), queueList: r(sqlQueueList),
		jobGet: r(sqlJobGet), payloadsOf: r(sqlPayloadsOf), tagsOf: r(sqlTagsOf),
		countByState: r(sqlCountByState), countInQueue: r(sqlCountInQueue),
		transitions: r(sqlTransitions), output: r(sqlOutput),
		jobState: r(sqlJobState), cancelNow: r(sqlCancelNow), requestCancel: r(sqlRequestCancel),
		jobListPrefix: r(sqlJobListPrefix), jobListStates: r(sqlJobListStates), jobListQueue: r(sqlJobListQueue),
		jobListWireName: r(sqlJobListWireName), jobListBefore: r(sqlJobListBefore),
		jobListOrderPage: r(sqlJobListOrderPage),
		dep:              newDepQueries(n),
		unique:           newUniqueQueries(n),
		rate:             newRateQueries(n),
		fleet:            newFleetQueries(n),
		node:             newNodeQueries(n),
		key:              newKeyQueries(n),
		queueRemove:      newQueueRemoveQueries(n),
	}
}
