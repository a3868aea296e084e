package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeysRotate: a store written in plaintext is sealed by keys rotate
// under $BACKWAVE_KEYS, after which the file holds no payload in the clear
// and every command, opening the store through the same keys, still shows
// the payload. Not parallel: it sets the environment.
func TestKeysRotate(t *testing.T) {
	db := filepath.Join(t.TempDir(), "jobs.db")
	const secret = "card-4242-4242-4242-4242"
	id := strings.TrimSpace(ok(t, "enqueue", "--db", db, "--wire-name", "charge", "-q", "--payload", `{"card":"`+secret+`"}`))
	if !fileHolds(t, db, secret) {
		t.Fatal("the plaintext payload is not in the file before rotation: the check below would prove nothing")
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BACKWAVE_KEYS", "k1="+base64.StdEncoding.EncodeToString(key))
	if out := ok(t, "keys", "rotate", "--db", db); !strings.Contains(out, "rewrote 1 values") {
		t.Fatalf("keys rotate: %s", out)
	}
	if out := ok(t, "keys", "rotate", "--db", db); !strings.Contains(out, "rewrote 0 values") {
		t.Fatalf("a second keys rotate rewrote again: %s", out)
	}
	if out := ok(t, "jobs", "show", "--db", db, id); !strings.Contains(out, secret) {
		t.Errorf("jobs show through the keys does not show the payload:\n%s", out)
	}
	for _, f := range []string{db, db + "-wal"} {
		if fileHolds(t, f, secret) {
			t.Errorf("%s still holds the payload in the clear after keys rotate", filepath.Base(f))
		}
	}
	t.Setenv("BACKWAVE_KEYS", "")
	if out := ok(t, "jobs", "show", "--db", db, id); strings.Contains(out, secret) {
		t.Errorf("jobs show without the keys shows the payload:\n%s", out)
	}
}

func fileHolds(t *testing.T, path, s string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte(s))
}
