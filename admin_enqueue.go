package backwave

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/backwave/backwave/store"
)

// OperatorEnqueue is a job an operator enqueues by hand (Admin.Enqueue):
// what the dashboard's enqueue form sends. An operator has no args type,
// so the job is given as its stored parts.
type OperatorEnqueue struct {
	// WireName names the handler that will run the job; required. A Wire
	// Name no handler serves is stored like any other and ends Quarantined
	// at its claim, as from any enqueue.
	WireName string
	// Queue is the Queue to enqueue on; DefaultQueue if empty.
	Queue string
	// Payload is the job's arguments as the handler's args type decodes
	// them: a JSON object of at most store.MaxPayloadBytes bytes. Empty
	// means {}.
	Payload []byte
	// RunAt is the due time; zero means now.
	RunAt time.Time
	// MaxAttempts is the attempt budget; DefaultMaxAttempts if 0. The
	// handler's own default (its args type's JobOptions, the Client's
	// Config.MaxAttempts) is not known to an operator surface: set it where
	// it differs.
	MaxAttempts int
}

// Enqueue enqueues one job by hand as the Admin's Actor, an Operator
// Action recorded in the audit trail (AuditEnqueue, its Detail the Wire
// Name) in the insert's atomic step. It returns the job stored. Bad input —
// an empty or invalid Wire Name or Queue, a payload that is not a JSON
// object or is too large, a due time outside the years 1 to 9999, a
// negative MaxAttempts — is an error wrapping ErrInvalidParams, and nothing
// is stored.
func (a *Admin) Enqueue(ctx context.Context, p OperatorEnqueue) (JobInfo, error) {
	nj, err := p.newJob()
	if err != nil {
		return JobInfo{}, fmt.Errorf("backwave: enqueue %q: %w", p.WireName, err)
	}
	res, err := a.store.JobInsertManyResults(ctx, store.InsertManyParams{Actor: store.Actor(a.actor), Jobs: []store.NewJob{nj}})
	if err != nil {
		return JobInfo{}, fmt.Errorf("backwave: enqueue %q: %w", p.WireName, err)
	}
	j, err := a.store.JobGet(ctx, res[0].ID)
	if err != nil {
		return JobInfo{}, fmt.Errorf("backwave: enqueue %q: read job %d back: %w", p.WireName, res[0].ID, err)
	}
	return jobInfoOf(j), nil
}

// newJob checks p and turns it into the row to insert.
func (p OperatorEnqueue) newJob() (store.NewJob, error) {
	nj := store.NewJob{WireName: p.WireName, Queue: p.Queue, MaxAttempts: p.MaxAttempts, ScheduledAt: p.RunAt, Payload: p.Payload}
	if nj.Queue == "" {
		nj.Queue = DefaultQueue
	}
	if nj.MaxAttempts == 0 {
		nj.MaxAttempts = DefaultMaxAttempts
	}
	if len(bytes.TrimSpace(nj.Payload)) == 0 {
		nj.Payload = []byte("{}")
	}
	switch {
	case p.MaxAttempts < 0:
		return nj, fmt.Errorf("%w: MaxAttempts %d is negative (0 is the default, %d)", ErrInvalidParams, p.MaxAttempts, DefaultMaxAttempts)
	case len(nj.Payload) > store.MaxPayloadBytes:
		return nj, fmt.Errorf("%w: payload of %d bytes is over the %d-byte limit", ErrInvalidParams, len(nj.Payload), store.MaxPayloadBytes)
	case !json.Valid(nj.Payload):
		return nj, fmt.Errorf("%w: payload is not valid JSON", ErrInvalidParams)
	case bytes.TrimSpace(nj.Payload)[0] != '{':
		return nj, fmt.Errorf("%w: payload is not a JSON object (a handler's args decode from one)", ErrInvalidParams)
	}
	for _, check := range []error{
		store.ValidateName("wire name", nj.WireName),
		store.ValidateName("queue", nj.Queue),
		store.ValidateTime("due time", nj.ScheduledAt),
	} {
		if check != nil {
			return nj, check
		}
	}
	return nj, nil
}
