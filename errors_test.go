package backwave_test

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/store/sqlite"
)

var storeWord = regexp.MustCompile(`\bstore:`)

type msgArgs struct{ X int }

func (msgArgs) WireName() string { return "msg_args" }

// Error messages say what happened once: one "backwave:" prefix, the
// subject named once, a batch position spelled as an index (jobs[1]) so it
// never reads as job id 1. Checked on the In-Memory Store and SQLite, whose
// own messages differ, so the assertion is on the whole text.
func TestErrorsSayItOnce(t *testing.T) {
	t.Parallel()
	far := time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		call func(context.Context, *backwave.Client, *backwave.Admin) error
		is   error
		want string // the whole message, or its prefix when it ends in "…"
	}{
		{"requeue unknown", func(ctx context.Context, _ *backwave.Client, a *backwave.Admin) error {
			_, err := a.Requeue(ctx, 999999)
			return err
		}, backwave.ErrNotFound, "backwave: requeue job 999999: store: not found"},
		{"job unknown", func(ctx context.Context, c *backwave.Client, _ *backwave.Admin) error {
			_, err := c.JobGet(ctx, 999999)
			return err
		}, backwave.ErrNotFound, "backwave: job 999999: store: not found"},
		{"trigger unknown", func(ctx context.Context, _ *backwave.Client, a *backwave.Admin) error {
			_, err := a.TriggerSchedule(ctx, "nosuch")
			return err
		}, backwave.ErrNotFound, `backwave: trigger schedule "nosuch": store: not found`},
		{"empty queue", func(ctx context.Context, c *backwave.Client, _ *backwave.Admin) error {
			_, err := c.Enqueue(ctx, msgArgs{}, backwave.WithQueue(""))
			return err
		}, backwave.ErrInvalidJob, `backwave: enqueue: invalid job: WithQueue(""): a Queue needs a name`},
		{"bad budget", func(ctx context.Context, c *backwave.Client, _ *backwave.Admin) error {
			_, err := c.Enqueue(ctx, msgArgs{}, backwave.WithMaxAttempts(-1))
			return err
		}, backwave.ErrInvalidJob, "backwave: enqueue: invalid job: WithMaxAttempts(-1): the attempt budget is at least 1"},
		{"batch index", func(ctx context.Context, c *backwave.Client, _ *backwave.Admin) error {
			_, err := c.EnqueueMany(ctx, []backwave.EnqueueParams{{Args: msgArgs{}}, {Args: msgArgs{}, Options: []backwave.EnqueueOption{backwave.WithRunAt(far)}}})
			return err
		}, backwave.ErrInvalidJob, "backwave: enqueue jobs[1]: invalid job: store: invalid params: due time 300000-01-01T00:00:00Z is outside years 1 to 9999 (UTC)"},
		{"unknown parent", func(ctx context.Context, c *backwave.Client, _ *backwave.Admin) error {
			_, err := c.EnqueueMany(ctx, []backwave.EnqueueParams{{Args: msgArgs{}}, {Args: msgArgs{}, Options: []backwave.EnqueueOption{backwave.WithParents(backwave.OnSuccess, 999999)}}})
			return err
		}, store.ErrUnknownParent, "backwave: enqueue 2 jobs: invalid job: …"},
	}
	stores := map[string]func(t *testing.T) backwave.Store{
		"memstore": func(*testing.T) backwave.Store { return memstore.New(memstore.Options{Clock: backwave.WallClock{}}) },
		"sqlite": func(t *testing.T) backwave.Store {
			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "e.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			t.Cleanup(func() { _ = st.Close() })
			c, err := backwave.NewClient(st, backwave.Config{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := c.Admin("test")
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range cases {
				err := tc.call(t.Context(), c, a)
				if !errors.Is(err, tc.is) {
					t.Errorf("%s: err %v, want it to wrap %v", tc.name, err, tc.is)
					continue
				}
				msg := err.Error()
				if prefix, ok := strings.CutSuffix(tc.want, "…"); ok {
					if !strings.HasPrefix(msg, prefix) {
						t.Errorf("%s: %q, want it to start %q", tc.name, msg, prefix)
					}
				} else if msg != tc.want {
					t.Errorf("%s:\n got %q\nwant %q", tc.name, msg, tc.want)
				}
				if n := strings.Count(msg, "backwave:"); n != 1 {
					t.Errorf("%s: %q says backwave: %d times", tc.name, msg, n)
				}
				if len(storeWord.FindAllString(msg, -1)) > 1 {
					t.Errorf("%s: %q says store: twice", tc.name, msg)
				}
			}
		})
	}
}
