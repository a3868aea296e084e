package sqlite

// The statements of the Monitor reads, the Operator Actions and the
// Transition Log bound, renamed like the others (queries.go).
const (
	// sqlTrim keeps, beyond the cap, every entry past the lowest cursor of
	// a Transition Observer registration seen since ?3: the walk has not
	// passed it yet.
	sqlTrim = `DELETE FROM backwave_job_transition WHERE job_id = ?1 AND id <= (
		SELECT t.id FROM backwave_job_transition t WHERE t.job_id = ?1 ORDER BY t.id DESC LIMIT 1 OFFSET ?2)
		AND id <= COALESCE((SELECT MIN(cursor_seq) FROM backwave_observer WHERE seen_at > ?3), id)`
	sqlKnowTag   = `INSERT OR IGNORE INTO backwave_tag (key, value, folded, display) VALUES (?, ?, ?, ?)`
	sqlAudit     = `INSERT INTO backwave_audit (at, actor, action, job_id, queue, detail) VALUES (?, ?, ?, ?, ?, ?)`
	sqlAuditList = `SELECT id, at, actor, action, COALESCE(job_id, 0), queue, detail FROM backwave_audit
	WHERE (?1 = 0 OR job_id = ?1) AND (?2 = '' OR queue = ?2) AND (?3 = 0 OR id < ?3)
	ORDER BY id DESC LIMIT ?4`
	sqlJobHead = `SELECT state, attempt, queue FROM backwave_job WHERE id = ?`
	// sqlRequeue starts the job's next life (core.RetryCauseAfter clears
	// the Retry Cause on a requeue, core.TerminalCauseAfter the Terminal
	// Cause; job.Job.Ceiling moves up by the base).
	// JobRequeue asks core.Requeueable first; the state condition restates
	// its states (dead-lettered 5, quarantined 7) so the row cannot move
	// from any other.
	sqlRequeue = `UPDATE backwave_job
	SET state = 1, attempt_base = attempt, scheduled_at = ?1, finalized_at = NULL,
		retry_cause = 0, cancel_cause = 0, cancel_requested = 0, terminal_cause = NULL
	WHERE id = ?2 AND state IN (5, 7)`
	// sqlReschedule moves a due time; its state condition restates
	// core.Reschedulable (scheduled 1, awaiting parent 2), which
	// JobReschedule asks first.
	sqlReschedule  = `UPDATE backwave_job SET scheduled_at = ?1 WHERE id = ?2 AND state IN (1, 2)`
	sqlCountQueues = `SELECT queue, state, n FROM backwave_job_count WHERE n > 0 ORDER BY queue, state`
	sqlSuggest     = `SELECT key, value FROM backwave_tag WHERE folded >= ?1 ORDER BY folded, display, key, value LIMIT ?2`
)

// monitorQueries holds those statements renamed to one store's Schema Name.
type monitorQueries struct {
	trim, knowTag, audit, auditList, jobHead, requeue, reschedule, countQueues, suggest string
}

func newMonitorQueries(n schemaName) *monitorQueries {
	r := n.Rename
	return &monitorQueries{
		trim: r(sqlTrim), knowTag: r(sqlKnowTag), audit: r(sqlAudit), auditList: r(sqlAuditList),
		jobHead: r(sqlJobHead), requeue: r(sqlRequeue), reschedule: r(sqlReschedule),
		countQueues: r(sqlCountQueues), suggest: r(sqlSuggest),
	}
}
