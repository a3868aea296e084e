package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/backwave/backwave/job"
)

// Channel names one of the opaque user-data channels a store keeps: the
// bytes it moves without reading (glossary, Encryption at Rest).
type Channel uint8

const (
	// ChannelPayload is a job's payload, one value per job.
	ChannelPayload Channel = iota + 1
	// ChannelOutput is a job's Job Output, one value per job that stored
	// one.
	ChannelOutput
	// ChannelFailureDetail is the Failure Detail of a Transition Log
	// entry, one value per entry that carries one.
	ChannelFailureDetail
	// ChannelTemplate is the payload of a Recurring Schedule's job
	// template, one value per schedule that has one.
	ChannelTemplate
	// ChannelCursor is a job's Cursor, one value per job that saved one.
	// A Rewrite does not walk it: every save replaces the whole value, so
	// a job's next save seals it under the current key.
	ChannelCursor
)

// String names the channel.
func (c Channel) String() string {
	switch c {
	case ChannelPayload:
		return "payload"
	case ChannelOutput:
		return "output"
	case ChannelFailureDetail:
		return "failure_detail"
	case ChannelTemplate:
		return "template_payload"
	case ChannelCursor:
		return "cursor"
	}
	return fmt.Sprintf("channel(%d)", uint8(c))
}

// Valid reports whether c is one of the four channels a Rewrite walks
// (ChannelCursor is not one).
func (c Channel) Valid() bool { return c >= ChannelPayload && c <= ChannelTemplate }

// RawKey names one stored value of a channel. Keys are ordered by Job,
// then Entry, for the job channels, and by Schedule for ChannelTemplate.
type RawKey struct {
	// Job owns the value (ChannelPayload, ChannelOutput,
	// ChannelFailureDetail).
	Job job.ID
	// Entry is the store's own key of the Transition Log entry within the
	// job (ChannelFailureDetail only): increasing with the entry's age.
	Entry int64
	// Schedule names the schedule (ChannelTemplate only).
	Schedule string
}

// Less reports whether k orders before o.
func (k RawKey) Less(o RawKey) bool {
	if k.Job != o.Job {
		return k.Job < o.Job
	}
	if k.Entry != o.Entry {
		return k.Entry < o.Entry
	}
	return strings.Compare(k.Schedule, o.Schedule) < 0
}

// RawValue is one stored value of a channel, exactly as the store holds it.
type RawValue struct {
	Key   RawKey
	Value []byte
}

// RawScanParams are the params of Rewriter.RawScan.
type RawScanParams struct {
	Channel Channel
	// After is the keyset cursor: only values with a key ordered after it
	// are read. The zero RawKey starts at the beginning.
	After RawKey
	// Limit bounds the page; at least 1.
	Limit int
}

// Validate checks the params of RawScan.
func (p RawScanParams) Validate() error {
	if !p.Channel.Valid() {
		return fmt.Errorf("%w: raw scan of %s", ErrInvalidParams, p.Channel)
	}
	if p.Limit < 1 {
		return fmt.Errorf("%w: raw scan limit %d is below 1", ErrInvalidParams, p.Limit)
	}
	return nil
}

// RawSwap replaces one stored value: Old is what the caller read, New what
// it writes.
type RawSwap struct {
	Key RawKey
	Old []byte
	New []byte
}

// RawRewriteParams are the params of Rewriter.RawRewrite.
type RawRewriteParams struct {
	Channel Channel
	Swaps   []RawSwap
}

// Validate checks the params of RawRewrite.
func (p RawRewriteParams) Validate() error {
	if !p.Channel.Valid() {
		return fmt.Errorf("%w: raw rewrite of %s", ErrInvalidParams, p.Channel)
	}
	for i, sw := range p.Swaps {
		if len(sw.New) == 0 {
			return fmt.Errorf("%w: raw rewrite %d of %s writes an empty value", ErrInvalidParams, i, p.Channel)
		}
	}
	return nil
}

// Rewriter is the raw rewrite capability of a store: reading and replacing
// the stored bytes of the opaque user-data channels without going through
// any state change, for a re-encryption that runs while jobs run (package
// encrypt). It is no Operator Action and writes no audit record or
// Transition Log entry: the values it swaps carry the same data in another
// form.
type Rewriter interface {
	// RawScan reads up to Limit stored values of the channel whose key
	// orders after p.After, in key order, each exactly as stored (a
	// Failure Detail as its text's bytes). Absent values (no payload, no
	// output, an entry without detail) are not listed.
	RawScan(ctx context.Context, p RawScanParams) ([]RawValue, error)

	// RawRewrite applies each swap, independently and each atomically, as
	// a compare-and-swap on the value itself: the value named by Key is
	// replaced by New only if it still equals Old byte for byte, so a
	// concurrent change — a schedule's template replaced, an entry trimmed,
	// a job purged — is never clobbered. It answers per swap, in input
	// order, whether it was written. The whole batch is one round trip.
	RawRewrite(ctx context.Context, p RawRewriteParams) ([]bool, error)
}
