package backwave_test

import (
	"context"
	"testing"

	"github.com/backwave/backwave"
)

// Start says what is wrong with starting: already started, or stopped — a
// stopped Client never starts again, whether it ran before or not.
func TestStartAfterStopSaysStopped(t *testing.T) {
	t.Parallel()
	const (
		started = "backwave: start: the Client is already started"
		stopped = "backwave: start: the Client was stopped, and a stopped Client cannot start again (make a new one with NewClient)"
	)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		steps []string // "start" or "stop", before the Start under test
		want  string   // "" for success
	}{
		{name: "fresh"},
		{name: "started", steps: []string{"start"}, want: started},
		{name: "started then stopped", steps: []string{"start", "stop"}, want: stopped},
		{name: "stopped before it started", steps: []string{"stop"}, want: stopped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := backwave.NewClient(newStore(), backwave.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Stop(ctx) }()
			for _, s := range tc.steps {
				switch s {
				case "start":
					err = c.Start(ctx)
				case "stop":
					err = c.Stop(ctx)
				}
				if err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			err = c.Start(ctx)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Start: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("Start: %v\nwant %s", err, tc.want)
			}
		})
	}
}
