package mcp

import (
	"fmt"
	"maps"
	"reflect"
	"time"

	"github.com/backwave/backwave"
	"github.com/google/jsonschema-go/jsonschema"
)

// The types below name the values a tool's schema constrains beyond its Go
// type (an id is positive, a state is one of the stored names), so every
// schema that uses one says so the same way.

// jobID is a job's id in tool input and output.
type jobID int64

// cursor is a keyset position: a page's "next", passed back as "before".
type cursor int64

// pageLimit is a page size.
type pageLimit int

// topLimit bounds a Tag Facet or a Tag Suggest.
type topLimit int

// bulkLimit bounds one bulk action call.
type bulkLimit int

// nonNegative is a count that may be zero.
type nonNegative int

// nonEmpty is a name that must be given: a Queue's, a schedule's.
type nonEmpty string

// stateName is a job state by its stored name.
type stateName string

// fromName is the state a Transition Log entry starts from: a state, or
// unknown for the insert entry.
type fromName string

// kindName is an occurrence kind by its stored name.
type kindName string

// occurrenceKinds are every OccurrenceKind, in declaration order.
var occurrenceKinds = [...]backwave.OccurrenceKind{
	backwave.OccurrenceMinted,
	backwave.OccurrenceMadeUp,
	backwave.OccurrenceSkipped,
	backwave.OccurrenceTriggered,
}

func typeSchemas() map[reflect.Type]*jsonschema.Schema {
	states := make([]any, 0, len(backwave.JobStates()))
	for _, s := range backwave.JobStates() {
		states = append(states, s.String())
	}
	kinds := make([]any, 0, len(occurrenceKinds))
	for _, k := range occurrenceKinds {
		kinds = append(kinds, k.String())
	}
	m := map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[jobID]():       {Type: "integer", Minimum: new(1.0)},
		reflect.TypeFor[cursor]():      {Type: "integer", Minimum: new(0.0)},
		reflect.TypeFor[pageLimit]():   {Type: "integer", Minimum: new(0.0), Maximum: new(float64(backwave.MaxPageLimit))},
		reflect.TypeFor[topLimit]():    {Type: "integer", Minimum: new(0.0), Maximum: new(1000.0)},
		reflect.TypeFor[nonNegative](): {Type: "integer", Minimum: new(0.0)},
		reflect.TypeFor[bulkLimit]():   {Type: "integer", Minimum: new(0.0), Maximum: new(float64(backwave.MaxBulkLimit))},
		reflect.TypeFor[nonEmpty]():    {Type: "string", MinLength: new(1)},
		reflect.TypeFor[stateName]():   {Type: "string", Enum: states},
		reflect.TypeFor[fromName]():    {Type: "string", Enum: append([]any{backwave.StateUnknown.String()}, states...)},
		reflect.TypeFor[kindName]():    {Type: "string", Enum: kinds},
		reflect.TypeFor[time.Time]():   {Type: "string", Format: "date-time"},
	}
	maps.Copy(m, workflowTypeSchemas())
	return m
}

func parseStates(names []stateName) ([]backwave.JobState, error) {
	out := make([]backwave.JobState, 0, len(names))
	for _, n := range names {
		s, err := backwave.ParseJobState(string(n))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func parseKinds(names []kindName) ([]backwave.OccurrenceKind, error) {
	out := make([]backwave.OccurrenceKind, 0, len(names))
next:
	for _, n := range names {
		for _, k := range occurrenceKinds {
			if k.String() == string(n) {
				out = append(out, k)
				continue next
			}
		}
		return nil, fmt.Errorf("%w: unknown occurrence kind %q", backwave.ErrInvalidParams, n)
	}
	return out, nil
}
