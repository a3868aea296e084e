package backwave_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
)

// A due time outside the years store.MinYear to store.MaxYear (UTC) is
// ErrInvalidJob at enqueue and ErrInvalidParams for Admin.Reschedule, on
// every store: the rule is the store package's, so the adapters' own
// Conformance Suite clause (TimeRange) covers the rest.
func TestDueTimeOutsideTheStorableYears(t *testing.T) {
	t.Parallel()
	st := newStore()
	c, err := backwave.NewClient(st, backwave.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := backwave.NewAdmin(st, "ops:test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, err := c.Enqueue(ctx, greet{"ok"}, backwave.WithRunAt(time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		at   time.Time
		ok   bool
	}{
		{"year 300000", time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"year 10000", time.Date(store.MaxYear+1, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"year 0", time.Date(store.MinYear-1, 6, 1, 0, 0, 0, 0, time.UTC), false},
		{"last instant", time.Date(store.MaxYear, 12, 31, 23, 59, 59, 0, time.UTC), true},
		{"year 1", time.Date(store.MinYear, 1, 2, 0, 0, 0, 0, time.UTC), true},
	} {
		_, err := c.Enqueue(ctx, greet{tc.name}, backwave.WithRunAt(tc.at))
		if got := errors.Is(err, backwave.ErrInvalidJob); got == tc.ok || (tc.ok && err != nil) {
			t.Errorf("%s: Enqueue err = %v, want ok %v", tc.name, err, tc.ok)
		}
		_, err = a.Reschedule(ctx, id, tc.at)
		if got := errors.Is(err, backwave.ErrInvalidParams); got == tc.ok || (tc.ok && err != nil) {
			t.Errorf("%s: Reschedule err = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
