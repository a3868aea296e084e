package backwave_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/backwave/backwave"
)

// rawArgs encodes to the bytes it holds, valid JSON or not UTF-8.
type rawArgs struct{ raw []byte }

func (rawArgs) WireName() string               { return "test.raw" }
func (a rawArgs) MarshalJSON() ([]byte, error) { return a.raw, nil }

// A payload that is not valid UTF-8 is refused at Enqueue: the store keeps
// only valid UTF-8, so every JSON printed of a job is valid (issue 38,
// hole 8).
func TestEnqueueRefusesInvalidUTF8Payload(t *testing.T) {
	t.Parallel()
	c, err := backwave.NewClient(newStore(), backwave.Config{Logger: testLogger(t, slog.LevelError)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Enqueue(t.Context(), rawArgs{raw: []byte("{\"a\":\"\xff\"}")})
	if !errors.Is(err, backwave.ErrInvalidJob) || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("Enqueue of an invalid UTF-8 payload: %v; want ErrInvalidJob naming UTF-8", err)
	}
	if _, err := c.Enqueue(t.Context(), rawArgs{raw: []byte(`{"a":"é"}`)}); err != nil {
		t.Errorf("Enqueue of a valid UTF-8 payload: %v", err)
	}
}

// Schedule errors repeat the input clipped, however long it is, and Zone
// "Local" is refused (issue 38, holes 6 and 7).
func TestScheduleErrorsClipInputAndRefuseLocal(t *testing.T) {
	t.Parallel()
	c, err := backwave.NewClient(newStore(), backwave.Config{Logger: testLogger(t, slog.LevelError)})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 10_000)
	ok := backwave.RecurringSchedule{Name: "s", Cron: "0 3 * * *", Zone: "Europe/London", Args: tick{}}
	for _, tc := range []struct {
		name, field string
		edit        func(*backwave.RecurringSchedule)
	}{
		{"long cron", "Cron", func(s *backwave.RecurringSchedule) { s.Cron = long }},
		{"long bad fields", "Cron", func(s *backwave.RecurringSchedule) { s.Cron = "* * * * " + strings.Repeat("9", 240) }},
		{"long zone", "Zone", func(s *backwave.RecurringSchedule) { s.Zone = long }},
		{"long unknown zone", "Zone", func(s *backwave.RecurringSchedule) { s.Zone = "Mars/" + strings.Repeat("a", 58) }},
		{"long name", "Name", func(s *backwave.RecurringSchedule) { s.Name = long }},
		{"local zone", "Zone", func(s *backwave.RecurringSchedule) { s.Zone = "Local" }},
	} {
		s := ok
		tc.edit(&s)
		err := c.RegisterSchedule(t.Context(), s)
		if !errors.Is(err, backwave.ErrInvalidSchedule) || !strings.Contains(err.Error(), ": "+tc.field+": ") {
			t.Errorf("%s: %v; want ErrInvalidSchedule naming %s", tc.name, err, tc.field)
			continue
		}
		if n := len(err.Error()); n > 400 {
			t.Errorf("%s: the error is %d bytes long, want the input clipped: %.200s…", tc.name, n, err)
		}
	}
	for _, zone := range []string{"", "UTC", "Europe/Paris"} {
		s := ok
		s.Zone = zone
		if err := c.RegisterSchedule(t.Context(), s); err != nil {
			t.Errorf("Zone %q: %v", zone, err)
		}
	}
}
