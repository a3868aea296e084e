package encrypt

import (
	"bytes"
	"context"
	"fmt"

	"github.com/backwave/backwave/store"
)

// ScheduleUpsert registers the schedule with its template's payload
// sealed, bound to the schedule's name: every job the store mints from it
// carries that ciphertext and opens it by its schedule Tag. A fresh seal
// never equals the stored one, so when the stored template already holds
// the same payload under the current key its ciphertext is kept, and
// registering an unchanged schedule at every start still writes nothing
// (ScheduleDef.SameDefinition).
func (b *base) ScheduleUpsert(ctx context.Context, p store.ScheduleUpsertParams) (store.ScheduleUpsertResult, error) {
	if err := p.Validate(); err != nil {
		return store.ScheduleUpsertResult{}, err
	}
	d := p.Schedule.Normalize()
	if d.Template.Payload == nil {
		return b.Store.ScheduleUpsert(ctx, store.ScheduleUpsertParams{Schedule: d})
	}
	s, err := b.keys.current(ctx)
	if err != nil {
		return store.ScheduleUpsertResult{}, fmt.Errorf("encrypt: schedule %q: %w", d.Name, err)
	}
	plain := d.Template.Payload
	if d.Template.Payload, err = s.seal(store.ChannelTemplate, scheduleBound(d.Name), plain); err != nil {
		return store.ScheduleUpsertResult{}, fmt.Errorf("encrypt: schedule %q: %w", d.Name, err)
	}
	list, err := b.Store.ScheduleList(ctx)
	if err != nil {
		return store.ScheduleUpsertResult{}, err
	}
	for _, sc := range list.Schedules {
		if sc.Name != d.Name || !Sealed(sc.Template.Payload) {
			continue
		}
		v, keyID, err := b.keys.open(ctx, sc.Template.Payload, store.ChannelTemplate, scheduleBound(d.Name))
		if err == nil && keyID == s.keyID && bytes.Equal(v, plain) {
			d.Template.Payload = sc.Template.Payload
		}
	}
	return b.Store.ScheduleUpsert(ctx, store.ScheduleUpsertParams{Schedule: d})
}

// ScheduleList reads every schedule with its template's payload opened. One
// that does not open is left as stored (Sealed): the list is what every
// maintenance beat plans from, and a plan never reads a payload.
func (b *base) ScheduleList(ctx context.Context) (store.ScheduleListResult, error) {
	r, err := b.Store.ScheduleList(ctx)
	for i := range r.Schedules {
		t := &r.Schedules[i].Template
		if !Sealed(t.Payload) {
			continue
		}
		if v, _, oerr := b.keys.open(ctx, t.Payload, store.ChannelTemplate, scheduleBound(r.Schedules[i].Name)); oerr == nil {
			t.Payload = v
			if len(v) == 0 {
				t.Payload = nil
			}
		}
	}
	return r, err
}
