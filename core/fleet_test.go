package core

import (
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
)

// FleetSkip (glossary, Quarantined; Mixed-Version Fleet): skip what some
// live Pump handles and this one does not; claim, to Quarantine, what no
// live Pump has handled for the grace.
func TestFleetSkip(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	const grace = 30 * time.Second
	st := func(worker, wire string, ago time.Duration) HandlerStamp {
		return HandlerStamp{Worker: job.WorkerID(worker), WireName: wire, StampedAt: now.Add(-ago)}
	}
	for _, tc := range []struct {
		name    string
		stamps  []HandlerStamp
		handles []string
		want    []string
	}{
		{"empty registry", nil, []string{"a"}, nil},
		{"same names everywhere", []HandlerStamp{st("x", "a", 0), st("y", "a", time.Second)}, []string{"a"}, nil},
		{"another live handler", []HandlerStamp{st("x", "b", time.Second), st("x", "a", time.Second)}, []string{"a"}, []string{"b"}},
		{"at the grace is live", []HandlerStamp{st("x", "b", grace)}, []string{"a"}, []string{"b"}},
		{"past the grace", []HandlerStamp{st("x", "b", grace+time.Microsecond)}, []string{"a"}, nil},
		{"one live of several", []HandlerStamp{st("x", "b", time.Hour), st("y", "b", time.Second)}, nil, []string{"b"}},
		{"a stamp from the future", []HandlerStamp{st("x", "b", -time.Minute)}, nil, []string{"b"}},
		{"sorted, distinct", []HandlerStamp{st("x", "d", 0), st("y", "c", 0), st("z", "d", 0)}, []string{"a"}, []string{"c", "d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := FleetSkip(tc.stamps, tc.handles, now, grace); !slices.Equal(got, tc.want) {
				t.Fatalf("FleetSkip = %q, want %q", got, tc.want)
			}
		})
	}
}
