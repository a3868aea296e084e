package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave/store"
)

// TestKeyPolicyPick checks the rule of store.KeyPolicy on small claims: the
// Key Limit and Key Rate pass a held key over, Fair Claim rotates across
// keys (least recently served first) and jobs without a key ("-") are one
// key for Fair Claim and bound by neither limit.
func TestKeyPolicyPick(t *testing.T) {
	t.Parallel()
	now := time.Unix(600, 0).UTC()
	window := now.Truncate(time.Minute)
	rate := store.QueueRate{Limit: 2, Period: time.Minute}
	for _, tc := range []struct {
		name     string
		policy   store.KeyPolicy
		due      string // keys in due order, "-" for none
		room     int
		standing map[string]store.KeyStanding
		want     string // the keys taken, in claim order
		reopen   bool
	}{
		{name: "none", due: "a a a b -", room: 3, want: "a a a"},
		{name: "room 0", policy: store.KeyPolicy{Fair: true}, due: "a b", room: 0, want: ""},
		{name: "key limit", policy: store.KeyPolicy{Limit: 2}, due: "a a a b b b - - -", room: 9, want: "a a b b - - -"},
		{name: "key limit counts running", policy: store.KeyPolicy{Limit: 2}, due: "a a b", room: 9,
			standing: map[string]store.KeyStanding{"a": {Running: 2}, "b": {Running: 1}}, want: "b"},
		{name: "key rate", policy: store.KeyPolicy{Rate: rate}, due: "a a a b -", room: 9,
			standing: map[string]store.KeyStanding{"a": {Window: window, Count: 1}}, want: "a b -", reopen: true},
		{name: "key rate old window", policy: store.KeyPolicy{Rate: rate}, due: "a a a", room: 9,
			standing: map[string]store.KeyStanding{"a": {Window: window.Add(-time.Minute), Count: 2}}, want: "a a", reopen: true},
		{name: "key rate room bound", policy: store.KeyPolicy{Rate: rate}, due: "a a a", room: 1, want: "a"},
		{name: "fair", policy: store.KeyPolicy{Fair: true}, due: "a a a a b - c", room: 5, want: "a b - c a"},
		{name: "fair least recently served", policy: store.KeyPolicy{Fair: true}, due: "a a a b b c", room: 4,
			standing: map[string]store.KeyStanding{"a": {Turn: 9}, "b": {Turn: 3}}, want: "c b a b"},
		{name: "fair with key limit", policy: store.KeyPolicy{Fair: true, Limit: 1}, due: "a a b b - -", room: 9, want: "a b - -"},
		{name: "fair with key rate", policy: store.KeyPolicy{Fair: true, Rate: rate}, due: "a a a b", room: 9, want: "a b a", reopen: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			due := strings.Fields(strings.ReplaceAll(tc.due, "-", "_"))
			for i := range due {
				if due[i] == "_" {
					due[i] = ""
				}
			}
			pick := tc.policy.Pick(due, tc.room, tc.standing, 100, now)
			var got []string
			for _, i := range pick.Take {
				k := due[i]
				if k == "" {
					k = "-"
				}
				got = append(got, k)
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Fatalf("Pick took %q, want %q", g, tc.want)
			}
			if got := !pick.Reopen.IsZero(); got != tc.reopen {
				t.Fatalf("Reopen %v, want set %v", pick.Reopen, tc.reopen)
			}
			if tc.reopen && !pick.Reopen.Equal(window.Add(time.Minute)) {
				t.Fatalf("Reopen %v, want the window's end %v", pick.Reopen, window.Add(time.Minute))
			}
			if tc.policy.Fair && pick.Turn != 100+int64(len(pick.Take)) {
				t.Fatalf("Turn %d after %d takes from turn 100", pick.Turn, len(pick.Take))
			}
		})
	}
}

// TestKeyPolicyPickCounts checks what Pick says to record: the Key Rate
// count per key in its window and, under Fair Claim, the last turn each key
// was served.
func TestKeyPolicyPickCounts(t *testing.T) {
	t.Parallel()
	now := time.Unix(600, 0).UTC()
	p := store.KeyPolicy{Fair: true, Rate: store.QueueRate{Limit: 5, Period: time.Minute}}
	pick := p.Pick([]string{"a", "a", "b", ""}, 9, map[string]store.KeyStanding{"a": {Window: now, Count: 1}}, 7, now)
	want := map[string]store.KeyTaken{"a": {Window: now, Count: 3, Turn: 11}, "b": {Window: now, Count: 1, Turn: 9}, "": {Turn: 10}}
	if fmt.Sprint(pick.Taken) != fmt.Sprint(want) {
		t.Fatalf("Taken = %v, want %v", pick.Taken, want)
	}
}

// TestKeyValidation checks the bad input of the key contract: keys,
// Key Limits, Key Rates and a Key Limit above the Queue's.
func TestKeyValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"empty key", store.ValidateConcurrencyKey("")},
		{"max key", store.ValidateConcurrencyKey(strings.Repeat("k", store.MaxConcurrencyKeyBytes))},
		{"key limit none", store.KeyPolicy{}.Validate()},
		{"key limit under queue", store.ValidateKeyLimit(3, 3)},
		{"key limit, no queue limit", store.ValidateKeyLimit(9, 0)},
	} {
		if tc.err != nil {
			t.Errorf("%s: %v, want accepted", tc.name, tc.err)
		}
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"over-long key", store.ValidateConcurrencyKey(strings.Repeat("k", store.MaxConcurrencyKeyBytes+1))},
		{"NUL in key", store.ValidateConcurrencyKey("a\x00")},
		{"invalid UTF-8 key", store.ValidateConcurrencyKey("\xc3")},
		{"negative key limit", store.KeyPolicy{Limit: -1}.Validate()},
		{"bad key rate", store.KeyPolicy{Rate: store.QueueRate{Limit: 1}}.Validate()},
		{"key limit over queue", store.ValidateKeyLimit(4, 3)},
		{"set key limit no queue", store.QueueSetKeyLimitParams{Limit: 1}.Validate()},
	} {
		if !errors.Is(tc.err, store.ErrInvalidParams) {
			t.Errorf("%s: %v, want ErrInvalidParams", tc.name, tc.err)
		}
	}
}
