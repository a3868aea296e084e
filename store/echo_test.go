package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/backwave/backwave/store"
)

func TestEchoClipsAtCharacterBoundary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"short", `"short"`},
		{strings.Repeat("a", 32), `"` + strings.Repeat("a", 32) + `"`},
		{strings.Repeat("a", 33), `"` + strings.Repeat("a", 32) + `"…`},
		{strings.Repeat("a", 31) + "é", `"` + strings.Repeat("a", 31) + `"…`}, // é is 2 bytes: not split
		{"\xff", `"\xff"`},
	} {
		if got := store.Echo(tc.in); got != tc.want {
			t.Errorf("Echo(%.40q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if got := store.Echo(strings.Repeat("x", 10_000)); len(got) > store.MaxEchoBytes+8 {
		t.Errorf("Echo of 10 KB is %d bytes", len(got))
	}
}

func TestCheckSchemaNameRefusesReserved(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"backwave": true, "jobs": true, "public": true, "pgjobs": true,
		"information_schema": false, "INFORMATION_SCHEMA": false, "pg_catalog": false, "pg_toast": false,
		"pg_anything": false, "sqlite_": false, "SQLite_x": false, "performance_schema": false, "mysql": false, "sys": false,
	} {
		err := store.CheckSchemaName(name)
		if (err == nil) != ok || err != nil && !errors.Is(err, store.ErrInvalidParams) {
			t.Errorf("CheckSchemaName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

func TestValidateTextAndInsertPayload(t *testing.T) {
	t.Parallel()
	if err := store.ValidateText("payload", []byte(`{"a":"é"}`)); err != nil {
		t.Errorf("valid UTF-8: %v", err)
	}
	bad := []byte("{\"a\":\"\xff\"}")
	if err := store.ValidateText("payload", bad); !errors.Is(err, store.ErrInvalidParams) || !strings.Contains(err.Error(), "offset 6") {
		t.Errorf("invalid UTF-8: %v", err)
	}
	// The store keeps payloads as opaque bytes (ciphertext under
	// Encryption at Rest): the rule is applied before a store is reached.
	p := store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "q", MaxAttempts: 1, Payload: bad}}}
	if err := p.Validate(); err != nil {
		t.Errorf("InsertManyParams refuses opaque payload bytes: %v", err)
	}
}

func TestValidateZoneAndCron(t *testing.T) {
	t.Parallel()
	if err := store.ValidateZoneName("Local"); !errors.Is(err, store.ErrInvalidParams) {
		t.Errorf("Zone Local: %v", err)
	}
	for _, z := range []string{"", "UTC", "America/Argentina/Buenos_Aires", "Etc/GMT+5"} {
		if err := store.ValidateZoneName(z); err != nil {
			t.Errorf("Zone %q: %v", z, err)
		}
	}
	err := store.ValidateCron(strings.Repeat("* ", 5000))
	if !errors.Is(err, store.ErrInvalidParams) || len(err.Error()) > 300 {
		t.Errorf("a 10 KB cron: %d bytes: %.300v", len(err.Error()), err)
	}
	if err := store.ValidateCron("*/5 * * * *"); err != nil {
		t.Errorf("a valid cron: %v", err)
	}
}
