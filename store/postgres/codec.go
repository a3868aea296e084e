package postgres

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// jobColumns are the columns scanJob reads, in its order, for a job row
// aliased j: the hot row, then the payload and Tags from their side tables
// (the Tags in store.EncodeTags's text form, which json_build_array of
// each key and value builds), the Concurrency Key (NULL: none) and the
// Terminal Cause (NULL: none).
const jobColumns = `j.id, j.queue, j.wire_name, j.state, j.attempt, j.max_attempts,
    j.scheduled_at, j.created_at, j.finalized_at, j.retry_cause, j.cancel_cause,
    j.worker, j.lease_expires_at, j.cancel_requested, j.attempt_base, j.snoozes,
    (SELECT p.payload FROM backwave.job_payload p WHERE p.job_id = j.id),
    (SELECT json_agg(json_build_array(t.key, t.value))::text FROM backwave.job_tag t WHERE t.job_id = j.id),
    (SELECT c.trace_context FROM backwave.job_trace c WHERE c.job_id = j.id),
    ` + progressColumn + `,
    ` + cursorColumn + `, j.concurrency_key, j.terminal_cause`

// jobRow receives one row of jobColumns. Its nullable columns are pgx's
// own types, which pgx scans without the interface value (an allocation
// per column) that sql.Null* costs it; database/sql scans them as
// sql.Scanners.
type jobRow struct {
	j           job.Job
	state       string
	retryCause  string
	cancelCause string
	finalizedAt pgtype.Timestamptz
	worker      pgtype.Text
	leaseExpiry pgtype.Timestamptz
	tags        pgtype.Text
	trace       pgtype.Text
	progress    pgtype.Text
	cursor      pgtype.Text
	key         pgtype.Text
	terminal    pgtype.Text
}

// dest returns the scan destinations of jobColumns, followed by extra. The
// text columns that repeat from row to row (Queue, Wire Name, state, causes,
// worker) go through a sharedText each, so a batch of rows scanned through
// one dest allocates those strings once, not once per row.
func (r *jobRow) dest(extra ...any) []any {
	t := new([6]sharedText)
	t[0].dst, t[1].dst, t[2].dst = &r.j.Queue, &r.j.WireName, &r.state
	t[3].dst, t[4].dst = &r.retryCause, &r.cancelCause
	t[5].dst, t[5].valid = &r.worker.String, &r.worker.Valid
	return append([]any{
		&r.j.ID, &t[0], &t[1], &t[2], &r.j.Attempt, &r.j.MaxAttempts,
		&r.j.ScheduledAt, &r.j.CreatedAt, &r.finalizedAt, &t[3], &t[4],
		&t[5], &r.leaseExpiry, &r.j.CancelRequested, &r.j.AttemptBase, &r.j.Snoozes,
		&r.j.Payload, &r.tags, &r.trace, &r.progress, &r.cursor, &r.key, &r.terminal,
	}, extra...)
}

// sharedText scans a text column into *dst, reusing the string it scanned
// last when the column's bytes are the same, so a value that repeats down
// a batch costs one allocation. valid, if set, records whether the column
// was non-NULL (a NULL into a nil valid is an error, as for a string).
type sharedText struct {
	dst   *string
	valid *bool
	last  string
}

// ScanBytes implements pgtype.BytesScanner: pgx hands over the column's
// bytes in its read buffer, without a copy (nil for NULL). The comparison
// with the last string allocates nothing; only a new value is copied.
func (t *sharedText) ScanBytes(b []byte) error {
	if b == nil {
		return t.null()
	}
	if string(b) != t.last {
		t.last = string(b)
	}
	t.set(t.last)
	return nil
}

// Scan implements sql.Scanner, for the database/sql connection mode.
func (t *sharedText) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		return t.null()
	case []byte:
		return t.ScanBytes(v)
	case string:
		t.set(v)
		return nil
	default:
		return fmt.Errorf("scan %T into a text column", src)
	}
}

// set stores a non-NULL value.
func (t *sharedText) set(v string) {
	*t.dst = v
	if t.valid != nil {
		*t.valid = true
	}
}

func (t *sharedText) null() error {
	if t.valid == nil {
		return errors.New("NULL in a text column that has none")
	}
	*t.dst, *t.valid = "", false
	return nil
}

// job decodes the scanned row. Times come back in UTC.
func (r *jobRow) job() (job.Job, error) {
	j := r.j
	var err error
	if j.State, err = job.ParseState(r.state); err != nil {
		return job.Job{}, fmt.Errorf("job %d: %w", j.ID, err)
	}
	if j.RetryCause, err = job.ParseRetryCause(r.retryCause); err != nil {
		return job.Job{}, fmt.Errorf("job %d: %w", j.ID, err)
	}
	if j.CancelCause, err = job.ParseCancelCause(r.cancelCause); err != nil {
		return job.Job{}, fmt.Errorf("job %d: %w", j.ID, err)
	}
	if j.TerminalCause, err = job.ParseTerminalCause(r.terminal.String); err != nil {
		return job.Job{}, fmt.Errorf("job %d: %w", j.ID, err)
	}
	j.ConcurrencyKey = r.key.String
	j.ScheduledAt = j.ScheduledAt.UTC()
	j.CreatedAt = j.CreatedAt.UTC()
	if r.finalizedAt.Valid {
		j.FinalizedAt = r.finalizedAt.Time.UTC()
	}
	if r.worker.Valid {
		j.Worker = job.WorkerID(r.worker.String)
	}
	if r.leaseExpiry.Valid {
		j.LeaseExpiresAt = r.leaseExpiry.Time.UTC()
	}
	if r.tags.Valid {
		if j.Tags, err = store.DecodeTags(r.tags.String); err != nil {
			return job.Job{}, fmt.Errorf("job %d: %w", j.ID, err)
		}
	}
	if r.trace.Valid {
		if j.TraceContext, err = store.DecodeTraceContext(r.trace.String); err != nil {
			return job.Job{}, fmt.Errorf("job %d: %w", j.ID, err)
		}
	}
	if r.progress.Valid {
		if j.Progress, err = decodeProgress(r.progress.String); err != nil {
			return job.Job{}, fmt.Errorf("job %d: %w", j.ID, err)
		}
	}
	if r.cursor.Valid {
		if j.Cursor, err = decodeCursor(r.cursor.String); err != nil {
			return job.Job{}, fmt.Errorf("job %d: %w", j.ID, err)
		}
	}
	return j, nil
}

// pgText returns s as PostgreSQL text can hold it: invalid UTF-8 and NUL
// bytes become U+FFFD. It is applied to free text a worker reports (Failure
// Detail, Tag deltas), so that one odd byte never fails a whole batch.
func pgText(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, "\x00") {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// checkTagText rejects Tags PostgreSQL text cannot hold (invalid UTF-8).
func checkTagText(tags []job.Tag) error {
	for _, t := range tags {
		if !utf8.ValidString(t.Key) || !utf8.ValidString(t.Value) {
			return fmt.Errorf("%w: tag %q is not valid UTF-8", store.ErrInvalidParams, t.String())
		}
	}
	return nil
}

// micros converts a duration to whole microseconds, the precision of a
// PostgreSQL timestamp; statements add it as $n * interval '1 microsecond'.
func micros(d time.Duration) int64 { return d.Microseconds() }

// tagArrays flattens the Tags of many items into parallel arrays: the
// item's 1-based ordinal, the key and the value. Each item's Tags go in as
// a set.
func tagArrays(n int, tagsOf func(i int) []job.Tag) (ords []int32, keys, values []string) {
	for i := range n {
		for _, t := range job.NormalizeTags(tagsOf(i)) {
			ords = append(ords, int32(i+1))
			keys = append(keys, t.Key)
			values = append(values, t.Value)
		}
	}
	return ords, keys, values
}

// pgArray is a slice argument for an array parameter that pgx encodes
// without an allocation per element, given an element type from below
// (int8Elem, int4Elem, textElem): pgx's own path for a []int64 or a
// []string hands each element over as an interface value, and boxing an
// int64 of 256 or more, or a non-empty string, allocates; so does its path
// for a pointer to a plain int64 or string, which dereferences it through
// reflection. Index hands over a pointer into the slice, and the element
// types' valuer methods on that pointer give pgx the value without either.
// database/sql passes the argument through to pgx unchanged.
type pgArray[T any] []T

// int8Elem is an int64 element of a pgArray (bigint[]).
type int8Elem int64

// Int64Value implements pgtype.Int64Valuer.
func (v *int8Elem) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*v), Valid: true}, nil
}

// int4Elem is an int32 element of a pgArray (int[]).
type int4Elem int32

// Int64Value implements pgtype.Int64Valuer.
func (v *int4Elem) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*v), Valid: true}, nil
}

// textElem is a string element of a pgArray (text[]).
type textElem string

// TextValue implements pgtype.TextValuer.
func (v *textElem) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*v), Valid: true}, nil
}

// int8Array copies ids into a pgArray of int8Elem.
func int8Array(ids []int64) pgArray[int8Elem] {
	out := make(pgArray[int8Elem], len(ids))
	for i, id := range ids {
		out[i] = int8Elem(id)
	}
	return out
}

// Dimensions implements pgtype.ArrayGetter.
func (a pgArray[T]) Dimensions() []pgtype.ArrayDimension {
	if a == nil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(len(a)), LowerBound: 1}}
}

// Index implements pgtype.ArrayGetter.
func (a pgArray[T]) Index(i int) any { return &a[i] }

// IndexType implements pgtype.ArrayGetter.
func (a pgArray[T]) IndexType() any { return new(T) }
