package mcp

import (
	"encoding/base64"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/backwave/backwave"
)

// The result types: what a tool's structured content holds. Their JSON
// names and jsonschema descriptions are the output schema an agent reads.

// The names of the sensitive fields, as results list them under
// "withheld".
const (
	fieldPayload       = "payload"
	fieldOutput        = "output"
	fieldFailureDetail = "failure_detail"
	fieldCursor        = "cursor"
)

// tagValue is a Tag.
type tagValue struct {
	Key   string `json:"key,omitempty" jsonschema:"the key of a Keyed Tag; absent for a Label"`
	Value string `json:"value" jsonschema:"the Label, or the Keyed Tag's value"`
}

func tagValues(tags []backwave.Tag) []tagValue {
	out := make([]tagValue, len(tags))
	for i, t := range tags {
		out[i] = tagValue{Key: t.Key, Value: t.Value}
	}
	return out
}

func tagsOf(in []tagValue) []backwave.Tag {
	if len(in) == 0 {
		return nil
	}
	out := make([]backwave.Tag, len(in))
	for i, t := range in {
		out[i] = backwave.Tag{Key: t.Key, Value: t.Value}
	}
	return out
}

// blob is raw stored bytes (a payload, Job Output) in the form that keeps
// them readable.
type blob struct {
	Encoding string `json:"encoding" jsonschema:"how value holds the bytes: json (value is the decoded JSON), text (value is the UTF-8 text) or base64 (value is the bytes in standard base64)"`
	Value    any    `json:"value" jsonschema:"the bytes, in the form encoding names"`
	Bytes    int    `json:"bytes" jsonschema:"the length of the stored bytes"`
}

func blobOf(b []byte) *blob {
	var v any
	switch {
	case json.Valid(b) && json.Unmarshal(b, &v) == nil:
		return &blob{Encoding: "json", Value: v, Bytes: len(b)}
	case utf8.Valid(b):
		return &blob{Encoding: "text", Value: string(b), Bytes: len(b)}
	}
	return &blob{Encoding: "base64", Value: base64.StdEncoding.EncodeToString(b), Bytes: len(b)}
}

// jobView is a stored job as the Monitor shows it.
type jobView struct {
	ID              jobID      `json:"id" jsonschema:"the job's id"`
	WireName        string     `json:"wire_name" jsonschema:"the job type's Wire Name"`
	Queue           string     `json:"queue" jsonschema:"the Queue the job is on"`
	State           stateName  `json:"state" jsonschema:"the job's state"`
	Retrying        bool       `json:"retrying" jsonschema:"true when the job is Scheduled again because an Attempt went wrong (the Retrying view)"`
	Attempt         int32      `json:"attempt" jsonschema:"the last Attempt charged; 0 if the job was never claimed. Attempt numbers are never reused"`
	MaxAttempts     int        `json:"max_attempts" jsonschema:"how many Attempts the job gets from its enqueue, and again from each requeue"`
	Ceiling         int        `json:"ceiling" jsonschema:"the Attempt number from which a failing Attempt dead-letters the job (max_attempts past its enqueue or its last requeue)"`
	Snoozes         int        `json:"snoozes,omitempty" jsonschema:"how many times the handler snoozed the job without its Attempt being charged, over the job's whole existence"`
	ScheduledAt     time.Time  `json:"scheduled_at" jsonschema:"the due time: a Scheduled job is claimable once the store's clock reaches it"`
	CreatedAt       time.Time  `json:"created_at" jsonschema:"when the job was enqueued"`
	FinalizedAt     time.Time  `json:"finalized_at,omitzero" jsonschema:"when the job reached its terminal state; absent while it is live"`
	RetryCause      string     `json:"retry_cause,omitempty" jsonschema:"why the job last went back to Scheduled after an Attempt went wrong: handler_failed or lease_expired"`
	CancelCause     string     `json:"cancel_cause,omitempty" jsonschema:"why a Cancelled job was cancelled: operator or parent_failure"`
	TerminalCause   string     `json:"terminal_cause,omitempty" jsonschema:"why a Dead-Lettered or Quarantined job ended so: ceiling_reached or permanent_failure (Dead-Lettered), no_handler or undecodable_payload (Quarantined)"`
	EndedBecause    string     `json:"ended_because,omitempty" jsonschema:"the terminal cause in plain words, as the dashboard shows it"`
	Worker          string     `json:"worker,omitempty" jsonschema:"the worker holding the Lease of a Running job"`
	LeaseExpiresAt  time.Time  `json:"lease_expires_at,omitzero" jsonschema:"when a Running job's Lease lapses unless renewed"`
	CancelRequested bool       `json:"cancel_requested,omitempty" jsonschema:"an operator asked the Running job to stop"`
	Tags            []tagValue `json:"tags" jsonschema:"the job's Tags"`
	Payload         *blob      `json:"payload,omitempty" jsonschema:"the job's arguments as stored; only for a caller holding ViewSensitiveData"`
	Cursor          *cursorOf  `json:"cursor,omitempty" jsonschema:"the Cursor an Attempt of a resumable job last saved; only for a caller holding ViewSensitiveData"`
}

// cursorOf is a job's Cursor.
type cursorOf struct {
	Attempt int32     `json:"attempt" jsonschema:"the Attempt that saved it"`
	At      time.Time `json:"at" jsonschema:"when the store recorded it"`
	Value   *blob     `json:"value" jsonschema:"the saved value, as the handler encoded it (JSON)"`
}

func jobViewOf(j backwave.JobInfo, sensitive bool) jobView {
	v := jobView{
		ID:              jobID(j.ID),
		WireName:        j.WireName,
		Queue:           j.Queue,
		State:           stateName(j.State.String()),
		Retrying:        j.Retrying(),
		Attempt:         int32(j.Attempt),
		MaxAttempts:     j.MaxAttempts,
		Ceiling:         j.Ceiling,
		Snoozes:         j.Snoozes,
		ScheduledAt:     j.ScheduledAt,
		CreatedAt:       j.CreatedAt,
		FinalizedAt:     j.FinalizedAt,
		RetryCause:      j.RetryCause.String(),
		CancelCause:     j.CancelCause.String(),
		TerminalCause:   j.TerminalCause.String(),
		EndedBecause:    j.EndedBecause(),
		Worker:          j.Worker,
		LeaseExpiresAt:  j.LeaseExpiresAt,
		CancelRequested: j.CancelRequested,
		Tags:            tagValues(j.Tags),
	}
	if sensitive {
		v.Payload = blobOf(j.Payload)
		if c := j.Cursor; c != nil {
			v.Cursor = &cursorOf{Attempt: int32(c.Attempt), At: c.At, Value: blobOf(c.Value)}
		}
	}
	return v
}

func jobViews(js []backwave.JobInfo, sensitive bool) []jobView {
	out := make([]jobView, len(js))
	for i, j := range js {
		out[i] = jobViewOf(j, sensitive)
	}
	return out
}

// withheld lists fields when the caller may not see them.
func withheld(sensitive bool, fields ...string) []string {
	if sensitive {
		return nil
	}
	return fields
}
