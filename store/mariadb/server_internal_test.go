package mariadb

import (
	"errors"
	"net/url"
	"testing"
)

// TestParseServer: the versions with FOR UPDATE SKIP LOCKED are accepted,
// MariaDB before 10.6 and MySQL before 8.0 refused with ErrServerTooOld,
// whichever server's version string it is.
func TestParseServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version string
		mariadb bool
		ok      bool
	}{
		{"10.11.19-MariaDB-0+deb12u1", true, true},
		{"10.6.0-MariaDB", true, true},
		{"11.4.2-MariaDB-ubu2404", true, true},
		{"10.5.23-MariaDB", true, false},
		{"5.5.5-10.3.39-MariaDB", true, false}, // the replication-era prefix of MariaDB before 11
		{"5.5.5-10.11.6-MariaDB", true, true},
		{"8.0.36", false, true},
		{"8.4.0", false, true},
		{"9.1.0", false, true},
		{"5.7.44-log", false, false},
	} {
		v, err := parseServer(tc.version)
		if v.MariaDB != tc.mariadb {
			t.Errorf("%s: MariaDB = %v, want %v", tc.version, v.MariaDB, tc.mariadb)
		}
		if tc.ok && err != nil {
			t.Errorf("%s: refused: %v", tc.version, err)
		}
		if !tc.ok && !errors.Is(err, ErrServerTooOld) {
			t.Errorf("%s: %v, want ErrServerTooOld", tc.version, err)
		}
	}
	if _, err := parseServer("banana"); err == nil {
		t.Error("an unreadable version was accepted")
	}
}

// TestParseURI: both schemes, the store's own parameters, the driver's
// defaults the store relies on, and clear errors for bad input.
func TestParseURI(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"mariadb://root@127.0.0.1:3306/test?schema=app_&migrate=false&history=off",
		"mysql://app:secret@db/prod?timeout=5s",
	} {
		u, _ := url.Parse(raw)
		cfg, opts, err := ParseURI(u)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if cfg.Params["time_zone"] != "'+00:00'" || cfg.ParseTime {
			t.Errorf("%s: driver config %+v does not pin UTC without parseTime", raw, cfg)
		}
		switch u.Scheme {
		case "mariadb":
			if opts.Schema != "app_" || !opts.ManualMigrate || cfg.Addr != "127.0.0.1:3306" || cfg.DBName != "test" || cfg.User != "root" {
				t.Errorf("%s: %+v %+v", raw, cfg, opts)
			}
		case "mysql":
			if cfg.Addr != "db:3306" || cfg.Passwd != "secret" || cfg.DBName != "prod" || opts.ManualMigrate {
				t.Errorf("%s: %+v %+v", raw, cfg, opts)
			}
		}
	}
	for _, raw := range []string{
		"mariadb://root@127.0.0.1:3306/",               // no database
		"mariadb://root@127.0.0.1:3306/test?bogus=1",   // unknown parameter
		"mariadb://root@127.0.0.1:3306/test?schema=A-", // bad Schema Name
		"mariadb://root@127.0.0.1:3306/test?migrate=maybe",
		"postgres://root@127.0.0.1/test",
	} {
		u, _ := url.Parse(raw)
		if _, _, err := ParseURI(u); err == nil {
			t.Errorf("%s: accepted", raw)
		}
	}
}

// TestLockingReads: inside an application's transaction every plain
// SELECT becomes a locking read, and a statement already locking is left
// alone.
func TestLockingReads(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"SELECT a FROM t WHERE id = ?":                   "SELECT a FROM t WHERE id = ? LOCK IN SHARE MODE",
		"SELECT a FROM t FOR UPDATE":                     "SELECT a FROM t FOR UPDATE",
		"SELECT a FROM t LIMIT 3 FOR UPDATE SKIP LOCKED": "SELECT a FROM t LIMIT 3 FOR UPDATE SKIP LOCKED",
		"UPDATE t SET a = 1":                             "UPDATE t SET a = 1",
	} {
		if got := locking(in); got != want {
			t.Errorf("locking(%q) = %q, want %q", in, got, want)
		}
	}
}
