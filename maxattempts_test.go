package backwave_test

import (
	"context"
	"errors"
	"testing"

	"github.com/backwave/backwave"
)

// WithMaxAttempts takes an attempt budget of at least 1; 0 is refused like
// every other invalid option, never read as "use the default".
func TestWithMaxAttemptsRefusesBelowOne(t *testing.T) {
	t.Parallel()
	st := newStore()
	c, err := backwave.NewClient(st, backwave.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		n    int
		want error // nil: stored with budget n
	}{
		{n: 0, want: backwave.ErrInvalidJob},
		{n: -1, want: backwave.ErrInvalidJob},
		{n: 1},
		{n: 3},
	} {
		id, err := c.Enqueue(ctx, greet{"x"}, backwave.WithMaxAttempts(tc.n))
		if !errors.Is(err, tc.want) {
			t.Errorf("WithMaxAttempts(%d): err = %v, want %v", tc.n, err, tc.want)
			continue
		}
		if tc.want != nil {
			continue
		}
		if j := getJob(t, st, id); j.MaxAttempts != tc.n {
			t.Errorf("WithMaxAttempts(%d): stored budget %d", tc.n, j.MaxAttempts)
		}
	}
	err = c.RegisterSchedule(ctx, backwave.RecurringSchedule{
		Name: "zero", Cron: "@hourly", Args: greet{"x"}, Options: []backwave.EnqueueOption{backwave.WithMaxAttempts(0)},
	})
	if !errors.Is(err, backwave.ErrInvalidSchedule) {
		t.Errorf("schedule with WithMaxAttempts(0): err = %v, want ErrInvalidSchedule", err)
	}
}
