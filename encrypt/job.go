package encrypt

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// sealInsert returns p with every payload going through PayloadFor, sealed
// and bound to the id the store assigns, and the record of which ids the
// store asked for. Each job's NewJob.Payload is the unsealed placeholder,
// so a store that ignored PayloadFor would keep no plaintext: the job
// would be Quarantined at its claim.
func (b *base) sealInsert(ctx context.Context, p store.InsertManyParams) (store.InsertManyParams, []job.ID, error) {
	if err := p.Validate(); err != nil {
		return p, nil, err
	}
	if p.PayloadFor != nil {
		return p, nil, fmt.Errorf("%w: the insert names its own PayloadFor, which Encryption at Rest would replace", store.ErrInvalidParams)
	}
	s, err := b.keys.current(ctx)
	if err != nil {
		return p, nil, err
	}
	plain := p.Jobs
	q := p
	q.Jobs = slices.Clone(p.Jobs)
	for i := range q.Jobs {
		q.Jobs[i].Payload = unsealedPlaceholder
	}
	asked := make([]job.ID, len(p.Jobs))
	q.PayloadFor = func(i int, id job.ID) ([]byte, error) {
		if i < 0 || i >= len(plain) || id < 1 {
			return nil, fmt.Errorf("encrypt: the store asked for the payload of job %d under id %d", i, id)
		}
		asked[i] = id
		return s.seal(store.ChannelPayload, jobBound(id), plain[i].Payload)
	}
	return q, asked, nil
}

// checkSealed fails an insert after which some inserted job did not get
// its sealed payload: the store ignored PayloadFor. The job holds the
// placeholder, no plaintext, and is Quarantined at its claim. A job with
// a unique key may answer its holder's id instead, so it is checked only
// where the result says it was inserted.
func checkSealed(res []store.InsertResult, asked []job.ID) error {
	for i, r := range res {
		if i >= len(asked) || asked[i] == r.ID || !r.Inserted {
			continue
		}
		return fmt.Errorf("encrypt: insert: the store did not ask for job %d's sealed payload (id %d): "+
			"it does not honour InsertManyParams.PayloadFor, and Encryption at Rest cannot use it", i, r.ID)
	}
	return nil
}

// JobInsertMany inserts the jobs with their payloads sealed.
func (b *base) JobInsertMany(ctx context.Context, p store.InsertManyParams) ([]job.ID, error) {
	res, err := b.JobInsertManyResults(ctx, p)
	return store.ResultIDs(res), err
}

// JobInsertManyResults inserts the jobs with their payloads sealed, each
// bound to its own id, and answers per job.
func (b *base) JobInsertManyResults(ctx context.Context, p store.InsertManyParams) ([]store.InsertResult, error) {
	q, asked, err := b.sealInsert(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("encrypt: insert: %w", err)
	}
	res, err := b.Store.JobInsertManyResults(ctx, q)
	if err != nil {
		return nil, err
	}
	if err := checkSealed(res, asked); err != nil {
		return nil, err
	}
	return res, nil
}

// JobInsertManyInTx inserts the jobs inside the caller's transaction with
// their payloads sealed.
func (m txInsert) JobInsertManyInTx(ctx context.Context, tx any, p store.InsertManyParams) ([]job.ID, error) {
	res, err := m.JobInsertManyResultsInTx(ctx, tx, p)
	return store.ResultIDs(res), err
}

// JobInsertManyResultsInTx inserts the jobs inside the caller's
// transaction with their payloads sealed, and answers per job.
func (m txInsert) JobInsertManyResultsInTx(ctx context.Context, tx any, p store.InsertManyParams) ([]store.InsertResult, error) {
	ins, ok := m.b.Store.(store.TxInserter)
	if !ok {
		return nil, fmt.Errorf("encrypt: insert: %w", store.ErrTxUnsupported)
	}
	q, asked, err := m.b.sealInsert(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("encrypt: insert: %w", err)
	}
	res, err := ins.JobInsertManyResultsInTx(ctx, tx, q)
	if err != nil {
		return nil, err
	}
	if err := checkSealed(res, asked); err != nil {
		return nil, err
	}
	return res, nil
}

// JobRescheduleInTx is the Operator Action inside the caller's
// transaction; it moves no user data, and the job it returns has its
// payload opened.
func (m txInsert) JobRescheduleInTx(ctx context.Context, tx any, p store.JobRescheduleParams) (job.Job, error) {
	ins, ok := m.b.Store.(store.TxInserter)
	if !ok {
		return job.Job{}, fmt.Errorf("encrypt: reschedule: %w", store.ErrTxUnsupported)
	}
	j, err := ins.JobRescheduleInTx(ctx, tx, p)
	if err == nil {
		m.b.readable(ctx, &j)
	}
	return j, err
}

// payloadBound returns the row a job's stored payload is bound to: the job
// itself, or, for a job minted from a Recurring Schedule whose template was
// sealed, the schedule named by its schedule Tag.
func payloadBound(j *job.Job, env []byte) bound {
	if h, err := parse(env); err == nil && h.binding == bindSchedule {
		for _, t := range j.Tags {
			if t.Key == store.ScheduleTagKey {
				return scheduleBound(t.Value)
			}
		}
	}
	return jobBound(j.ID)
}

// openPayload returns j's payload in plaintext. A payload written before
// encryption was turned on is returned as stored.
func (b *base) openPayload(ctx context.Context, j *job.Job) ([]byte, error) {
	if !Sealed(j.Payload) {
		if b.rejectPlaintext && len(j.Payload) > 0 {
			return nil, fmt.Errorf("%w: the payload is stored without an envelope, and plaintext is rejected", ErrUndecryptable)
		}
		return j.Payload, nil
	}
	pb := payloadBound(j, j.Payload)
	ch := store.ChannelPayload
	if pb.binding == bindSchedule {
		ch = store.ChannelTemplate
	}
	v, _, err := b.keys.open(ctx, j.Payload, ch, pb)
	if err != nil {
		return nil, err
	}
	if len(v) == 0 {
		return nil, nil
	}
	return v, nil
}

// readable opens the payload of a job an operator reads. One that does not
// open is left as stored — an envelope, never plaintext, which Sealed
// recognises — so one unreadable job never hides the rest of a page; its
// claim Quarantines it.
func (b *base) readable(ctx context.Context, j *job.Job) {
	if v, err := b.openPayload(ctx, j); err == nil {
		j.Payload = v
	}
	if c, err := b.openCursor(ctx, j); err == nil {
		j.Cursor = c
	}
}

// openCursor returns j's Cursor with its value in plaintext (nil when j has
// none). A Cursor written before encryption was turned on is returned as
// stored, unless plaintext is rejected.
func (b *base) openCursor(ctx context.Context, j *job.Job) (*job.Cursor, error) {
	if j.Cursor == nil {
		return nil, nil
	}
	c := *j.Cursor
	if !Sealed(c.Value) {
		if b.rejectPlaintext {
			return nil, fmt.Errorf("encrypt: job %d: cursor: %w: stored without an envelope, and plaintext is rejected", j.ID, ErrUndecryptable)
		}
		return &c, nil
	}
	v, _, err := b.keys.open(ctx, c.Value, store.ChannelCursor, jobBound(j.ID))
	if err != nil {
		return nil, fmt.Errorf("encrypt: job %d: cursor: %w", j.ID, err)
	}
	if v == nil {
		v = []byte{}
	}
	c.Value = v
	return &c, nil
}

// LeaseRenew seals the Cursors a renewal carries, each bound to its job,
// and renews.
func (b *base) LeaseRenew(ctx context.Context, p store.RenewParams) ([]store.RenewResult, error) {
	if len(p.Cursors) == 0 {
		return b.Store.LeaseRenew(ctx, p)
	}
	s, err := b.keys.current(ctx)
	if err != nil {
		return nil, fmt.Errorf("encrypt: renew leases: %w", err)
	}
	q := p
	q.Cursors = slices.Clone(p.Cursors)
	for i := range q.Cursors {
		c := &q.Cursors[i]
		if c.Value, err = s.seal(store.ChannelCursor, jobBound(c.Lease.ID), c.Value); err != nil {
			return nil, fmt.Errorf("encrypt: renew leases: %w", err)
		}
	}
	return b.Store.LeaseRenew(ctx, q)
}

// JobClaim claims jobs and opens their payloads. A job whose payload does
// not open — its key purged, the bytes tampered with or moved from another
// row — is not handed on: its claimed Attempt is reported Quarantined at
// once, under the claim's own (worker, Attempt) fence, with a Failure
// Detail saying why, so it is never retried. The Node Driver leases only
// the jobs a claim returns, so it never hears of it.
func (b *base) JobClaim(ctx context.Context, p store.ClaimParams) ([]job.Job, error) {
	jobs, err := b.Store.JobClaim(ctx, p)
	out := jobs[:0]
	var quarantine []store.Outcome
	for _, j := range jobs {
		v, oerr := b.openPayload(ctx, &j)
		if oerr != nil {
			o := core.Decide(core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.Ceiling(), CancelRequested: j.CancelRequested},
				core.ResultUndecodable, core.RetryPolicy{})
			quarantine = append(quarantine, store.Outcome{Outcome: o, FailureDetail: "payload cannot be decrypted: " + oerr.Error()})
			b.log.Error("job payload cannot be decrypted: it will be quarantined",
				"job", int64(j.ID), "queue", j.Queue, "wire_name", j.WireName, "attempt", int(j.Attempt), "error", oerr)
			continue
		}
		j.Payload = v
		if j.Cursor, oerr = b.openCursor(ctx, &j); oerr != nil {
			// The job resumes from its beginning rather than not at all:
			// a Cursor only saves work, and the next save replaces it.
			b.log.Error("job cursor cannot be decrypted: the Attempt runs without it",
				"job", int64(j.ID), "queue", j.Queue, "wire_name", j.WireName, "attempt", int(j.Attempt), "error", oerr)
		}
		out = append(out, j)
	}
	if len(quarantine) > 0 {
		if _, rerr := b.OutcomeReport(ctx, store.ReportParams{Worker: p.Worker, Outcomes: quarantine}); rerr != nil {
			// The Leases lapse and the next claim tries again.
			b.log.Error("recording the quarantine of undecryptable jobs failed: their leases will lapse",
				"jobs", len(quarantine), "error", rerr)
		}
	}
	return out, err
}

// OutcomeReport seals each outcome's Failure Detail, Job Output and
// Cursor, bound to its job, and reports the batch.
func (b *base) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	if !slices.ContainsFunc(p.Outcomes, func(o store.Outcome) bool { return o.FailureDetail != "" || o.Output != nil || o.Cursor != nil }) {
		return b.Store.OutcomeReport(ctx, p)
	}
	s, err := b.keys.current(ctx)
	if err != nil {
		return nil, fmt.Errorf("encrypt: report outcomes: %w", err)
	}
	q := p
	q.Outcomes = slices.Clone(p.Outcomes)
	for i := range q.Outcomes {
		o := &q.Outcomes[i]
		if o.FailureDetail != "" {
			if o.FailureDetail, err = s.sealText(store.ChannelFailureDetail, jobBound(o.Lease.ID), o.FailureDetail); err != nil {
				return nil, fmt.Errorf("encrypt: report outcomes: %w", err)
			}
		}
		if o.Output != nil {
			if o.Output, err = s.seal(store.ChannelOutput, jobBound(o.Lease.ID), o.Output); err != nil {
				return nil, fmt.Errorf("encrypt: report outcomes: %w", err)
			}
		}
		if o.Cursor != nil {
			if o.Cursor, err = s.seal(store.ChannelCursor, jobBound(o.Lease.ID), o.Cursor); err != nil {
				return nil, fmt.Errorf("encrypt: report outcomes: %w", err)
			}
		}
	}
	return b.Store.OutcomeReport(ctx, q)
}

// JobGet reads one job with its payload opened where it opens.
func (b *base) JobGet(ctx context.Context, id job.ID) (job.Job, error) {
	j, err := b.Store.JobGet(ctx, id)
	if err == nil {
		b.readable(ctx, &j)
	}
	return j, err
}

// JobList reads a page of jobs with their payloads opened where they open.
func (b *base) JobList(ctx context.Context, p store.JobListParams) ([]job.Job, error) {
	jobs, err := b.Store.JobList(ctx, p)
	for i := range jobs {
		b.readable(ctx, &jobs[i])
	}
	return jobs, err
}

// JobRequeue is the Operator Action; the job it returns has its payload
// opened where it opens.
func (b *base) JobRequeue(ctx context.Context, p store.JobRequeueParams) (job.Job, error) {
	j, err := b.Store.JobRequeue(ctx, p)
	if err == nil {
		b.readable(ctx, &j)
	}
	return j, err
}

// JobCancel is the Operator Action; the job it returns has its payload
// opened where it opens.
func (b *base) JobCancel(ctx context.Context, p store.JobCancelParams) (job.Job, error) {
	j, err := b.Store.JobCancel(ctx, p)
	if err == nil {
		b.readable(ctx, &j)
	}
	return j, err
}

// JobReschedule is the Operator Action; the job it returns has its payload
// opened where it opens.
func (b *base) JobReschedule(ctx context.Context, p store.JobRescheduleParams) (job.Job, error) {
	j, err := b.Store.JobReschedule(ctx, p)
	if err == nil {
		b.readable(ctx, &j)
	}
	return j, err
}

// JobDelete is the Operator Action; the job it returns, as it was
// removed, has its payload opened where it opens.
func (b *base) JobDelete(ctx context.Context, p store.JobDeleteParams) (job.Job, error) {
	j, err := b.Store.JobDelete(ctx, p)
	if err == nil {
		b.readable(ctx, &j)
	}
	return j, err
}

// JobTransitions reads a job's Transition Log with each Failure Detail
// opened. One that does not open is left as stored (SealedText).
func (b *base) JobTransitions(ctx context.Context, id job.ID) ([]store.Transition, error) {
	log, err := b.Store.JobTransitions(ctx, id)
	for i := range log {
		d := log[i].FailureDetail
		if !SealedText(d) {
			continue
		}
		if v, _, oerr := b.keys.openText(ctx, d, store.ChannelFailureDetail, jobBound(id)); oerr == nil {
			log[i].FailureDetail = v
		}
	}
	return log, err
}

// openOutput opens the Job Output of job id; unlike a payload, an output
// that does not open is an error, because a handler reads it.
func (b *base) openOutput(ctx context.Context, id job.ID, v []byte) ([]byte, error) {
	if !Sealed(v) {
		if b.rejectPlaintext {
			return nil, fmt.Errorf("encrypt: job %d: Job Output: %w: stored without an envelope, and plaintext is rejected", id, ErrUndecryptable)
		}
		return v, nil
	}
	out, _, err := b.keys.open(ctx, v, store.ChannelOutput, jobBound(id))
	if err != nil {
		return nil, fmt.Errorf("encrypt: job %d: Job Output: %w", id, err)
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// JobOutput reads a job's Job Output, opened, for an operator. One that
// does not open is left as stored — an envelope, which Sealed recognises —
// as a payload is (readable), so the job's detail still reads; a handler
// reads an output through JobAncestorOutput, which fails instead.
func (b *base) JobOutput(ctx context.Context, id job.ID) ([]byte, error) {
	v, err := b.Store.JobOutput(ctx, id)
	if err != nil || v == nil {
		return v, err
	}
	if out, oerr := b.openOutput(ctx, id, v); oerr == nil {
		return out, nil
	}
	return v, nil
}

// JobAncestorOutput reads an ancestor's Job Output, opened. One that does
// not open is an error wrapping ErrUndecryptable: the reading handler
// fails rather than run on bytes it cannot trust.
func (b *base) JobAncestorOutput(ctx context.Context, p store.AncestorOutputParams) (store.AncestorOutput, error) {
	a, err := b.Store.JobAncestorOutput(ctx, p)
	if err != nil || !a.Present {
		return a, err
	}
	if a.Output, err = b.openOutput(ctx, p.Ancestor, a.Output); err != nil {
		return store.AncestorOutput{}, err
	}
	return a, nil
}

// isUndecryptable reports whether err says a value did not open.
func isUndecryptable(err error) bool { return errors.Is(err, ErrUndecryptable) }
