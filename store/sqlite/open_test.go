package sqlite_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// TestOpenBadInput: each bad input gets a one-line error that names the
// path and wraps the cause.
func TestOpenBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDB, []byte("these are not the pages you are looking for\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
		is               error
	}{
		{"MissingDirectory", filepath.Join(dir, "no", "such", "jobs.db"), "does not exist", os.ErrNotExist},
		{"Directory", dir, "is a directory", nil},
		{"NotADatabase", notDB, "not a SQLite database", sqlite.ErrNotDatabase},
		{"QueryInPath", filepath.Join(dir, "jobs.db?mode=ro"), "not a plain file path", store.ErrInvalidParams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := sqlite.Open(context.Background(), tc.path, sqlite.Options{})
			if err == nil {
				_ = s.Close()
				t.Fatalf("Open(%q) succeeded", tc.path)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Fatalf("Open(%q) = %q, want one line containing %q", tc.path, msg, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("Open(%q) = %v, want it to wrap %v", tc.path, err, tc.is)
			}
		})
	}
}

// TestOpenUnreadableFile needs a user that file permissions stop.
func TestOpenUnreadableFile(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("running as root: file permissions do not stop reads")
	}
	path := filepath.Join(t.TempDir(), "jobs.db")
	if err := os.WriteFile(path, nil, 0o000); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if !errors.Is(err, os.ErrPermission) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Open(unreadable) = %v, want a one-line error wrapping os.ErrPermission", err)
	}
}

// TestCorruptDatabase: a file that starts like a database but is not one
// fails at Open with ErrNotDatabase too.
func TestCorruptDatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "jobs.db")
	junk := append([]byte("SQLite format 3\x00"), make([]byte, 200)...)
	for i := 16; i < len(junk); i++ {
		junk[i] = 0xee
	}
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if !errors.Is(err, sqlite.ErrNotDatabase) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open(corrupt) = %v, want a one-line error naming the path", err)
	}
}

func TestOpenURI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "jobs.db")
	s, err := store.Open(ctx, "sqlite://"+path+"?synchronous=full&schema=app_&busy_timeout=3s&read_conns=2")
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	defer func() { _ = s.Close() }()
	ss := s.(*sqlite.Store)
	if ss.Path() != path || ss.Schema() != "app_" {
		t.Fatalf("opened %q with schema %q", ss.Path(), ss.Schema())
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the file was not created: %v", err)
	}
}

func TestParseURI(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		uri, path string
		opts      sqlite.Options
		bad       string
	}{
		{uri: "sqlite:///var/lib/app/jobs.db", path: "/var/lib/app/jobs.db"},
		{uri: "sqlite://jobs.db", path: "jobs.db"},
		{uri: "sqlite://data/jobs.db", path: "data/jobs.db"},
		{uri: "sqlite:jobs.db", path: "jobs.db"},
		{uri: "sqlite:///a%20b.db", path: "/a b.db"},
		{uri: "sqlite:///j.db?synchronous=FULL&schema=x_&migrate=false&busy_timeout=1m&read_conns=8", path: "/j.db",
			opts: sqlite.Options{Synchronous: sqlite.SynchronousFull, Schema: "x_", ManualMigrate: true, BusyTimeout: time.Minute, ReadConns: 8}},
		{uri: "sqlite:///j.db?synchronous=off", bad: "synchronous"},
		{uri: "sqlite:///j.db?schema=a-b", bad: "schema name"},
		{uri: "sqlite:///j.db?migrate=maybe", bad: "migrate"},
		{uri: "sqlite:///j.db?busy_timeout=-1s", bad: "busy_timeout"},
		{uri: "sqlite:///j.db?journal=delete", bad: "unknown parameter"},
		{uri: "sqlite:///j.db?schema=a_&schema=b_", bad: "2 times"},
		{uri: "sqlite://", bad: "no file path"},
		{uri: "sqlite://me@host/j.db", bad: "no user"},
	} {
		u, err := url.Parse(tc.uri)
		if err != nil {
			t.Fatal(err)
		}
		path, opts, err := sqlite.ParseURI(u)
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tc.bad) || !errors.Is(err, store.ErrInvalidParams) {
				t.Errorf("ParseURI(%q) = %v, want an ErrInvalidParams error about %q", tc.uri, err, tc.bad)
			}
			continue
		}
		if err != nil || path != tc.path || opts != tc.opts {
			t.Errorf("ParseURI(%q) = %q, %+v, %v; want %q, %+v", tc.uri, path, opts, err, tc.path, tc.opts)
		}
	}
}

func TestUnknownScheme(t *testing.T) {
	t.Parallel()
	_, err := store.Open(context.Background(), "sqlit:///tmp/x.db")
	if !errors.Is(err, store.ErrUnknownScheme) {
		t.Fatalf("store.Open(sqlit://) = %v, want ErrUnknownScheme", err)
	}
}
