package postgres_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// Issue 4, Acceptance: "Bad input: unreachable database, wrong password,
// missing schema privileges → clear errors at Open/Migrate, not at the
// first claim."

func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	url := fmt.Sprintf("postgres://app@%s/app?sslmode=disable&connect_timeout=5", addr)
	_, err = postgres.Open(t.Context(), url, postgres.Options{})
	if err == nil || !strings.Contains(err.Error(), "connect") {
		t.Fatalf("Open on %s with nothing listening: %v, want a connect error", addr, err)
	}
	if _, err := postgres.Migrate(t.Context(), url, postgres.Options{}); err == nil {
		t.Fatal("Migrate with nothing listening succeeded")
	}
}

// TestOpenWrongPassword runs against a stand-in server on loopback that asks
// for a password and rejects it the way PostgreSQL does (SQLSTATE 28P01),
// since the test database may well trust every local connection.
func TestOpenWrongPassword(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go rejectPassword(c)
		}
	}()
	url := fmt.Sprintf("postgres://app:wrong@%s/app?sslmode=disable&connect_timeout=5", ln.Addr())
	for _, open := range []func() error{
		func() error { _, err := postgres.Open(t.Context(), url, postgres.Options{}); return err },
		func() error { _, err := postgres.Migrate(t.Context(), url, postgres.Options{}); return err },
	} {
		err := open()
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "28P01" {
			t.Fatalf("Open with a wrong password: %v, want SQLSTATE 28P01", err)
		}
		if !strings.Contains(err.Error(), "password authentication failed") {
			t.Fatalf("error %q does not say the password was wrong", err)
		}
	}
}

// rejectPassword plays a server that demands a cleartext password and
// refuses it.
func rejectPassword(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	be := pgproto3.NewBackend(c, c)
	if _, err := be.ReceiveStartupMessage(); err != nil {
		return
	}
	be.Send(&pgproto3.AuthenticationCleartextPassword{})
	if err := be.Flush(); err != nil {
		return
	}
	be.SetAuthType(pgproto3.AuthTypeCleartextPassword)
	if _, err := be.Receive(); err != nil {
		return
	}
	be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28P01", Message: `password authentication failed for user "app"`})
	_ = be.Flush()
}

func TestOpenUnknownDatabase(t *testing.T) {
	t.Parallel()
	cfg, err := pgx.ParseConfig(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	url := withPath(t, testURL(t), "/backwave_no_such_database")
	_, err = postgres.Open(t.Context(), url, postgres.Options{})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Open on a missing database (host %s): %v, want a does-not-exist error", cfg.Host, err)
	}
}

// A role without the rights it needs is refused at Open, with the missing
// privilege named: first a role that may not even use the schema, then one
// that may use it but not write its tables, then one that may not create
// the schema it is asked to migrate.
func TestOpenMissingPrivileges(t *testing.T) {
	t.Parallel()
	admin := openStore(t, modePgx, postgres.Options{})
	role := randomSchema(t) + "_role"
	conn, err := pgx.Connect(t.Context(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(t.Context(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec("CREATE ROLE " + role + " LOGIN")
	t.Cleanup(func() {
		ctx := context.Background()
		c, err := pgx.Connect(ctx, testURL(t))
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(ctx)
		// The schema (dropped by an earlier cleanup) held the role's only
		// grants; drop what is left and the role.
		if _, err := c.Exec(ctx, "DROP OWNED BY "+role+"; DROP ROLE "+role); err != nil {
			t.Error(err)
		}
	})
	url := withUser(t, testURL(t), role)

	for _, skip := range []bool{false, true} {
		_, err = postgres.Open(t.Context(), url, postgres.Options{Schema: admin.Schema(), SkipMigrate: skip})
		if err == nil || !strings.Contains(err.Error(), "USAGE on schema "+admin.Schema()) {
			t.Fatalf("Open (SkipMigrate=%v) without USAGE: %v, want an error naming USAGE on the schema", skip, err)
		}
	}

	exec("GRANT USAGE ON SCHEMA " + admin.Schema() + " TO " + role)
	exec("GRANT SELECT ON ALL TABLES IN SCHEMA " + admin.Schema() + " TO " + role)
	_, err = postgres.Open(t.Context(), url, postgres.Options{Schema: admin.Schema(), SkipMigrate: true})
	if err == nil || !strings.Contains(err.Error(), "UPDATE on "+admin.Schema()+".job") {
		t.Fatalf("Open with read-only grants: %v, want an error naming UPDATE on the job table", err)
	}

	exec("GRANT INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + admin.Schema() + " TO " + role)
	exec("GRANT USAGE ON ALL SEQUENCES IN SCHEMA " + admin.Schema() + " TO " + role)
	s, err := postgres.Open(t.Context(), url, postgres.Options{Schema: admin.Schema(), SkipMigrate: true})
	if err != nil {
		t.Fatalf("Open with full grants: %v", err)
	}
	insert(t, s, "q", 1)
	s.Close()

	fresh := randomSchema(t)
	_, err = postgres.Open(t.Context(), url, postgres.Options{Schema: fresh})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" || !strings.Contains(err.Error(), "create schema") {
		t.Fatalf("Open migrating a schema the role may not create: %v, want permission denied (42501) at create schema", err)
	}
}

// store.Open serves postgres:// and postgresql:// URIs, taking the Schema
// Name and the migrate switch from the query.
func TestOpenURI(t *testing.T) {
	t.Parallel()
	schema := randomSchema(t)
	dropSchemaAtCleanup(t, testURL(t), schema)
	for _, scheme := range []string{postgres.Scheme, postgres.SchemeLong} {
		url := withParam(t, testURL(t), "schema", schema)
		url = scheme + strings.TrimPrefix(url, url[:strings.Index(url, "://")])
		s, err := store.Open(t.Context(), url)
		if err != nil {
			t.Fatalf("store.Open(%s): %v", scheme, err)
		}
		if got := s.(*postgres.Store).Schema(); got != schema {
			t.Fatalf("schema = %q, want %q", got, schema)
		}
		if _, err := s.JobInsertMany(t.Context(), store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "q", MaxAttempts: 1}}}); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if _, err := store.Open(t.Context(), withParam(t, testURL(t), "migrate", "maybe")); !errors.Is(err, store.ErrInvalidParams) {
		t.Fatalf("migrate=maybe: %v, want ErrInvalidParams", err)
	}
	s, err := store.Open(t.Context(), withParam(t, withParam(t, testURL(t), "schema", schema), "migrate", "false"))
	if err != nil {
		t.Fatalf("migrate=false on a migrated schema: %v", err)
	}
	s.Close()
}

// OpenDB refuses a *sql.DB whose driver is not pgx's stdlib, at Open.
func TestOpenDBOtherDriver(t *testing.T) {
	t.Parallel()
	db := sql.OpenDB(otherConnector{})
	defer db.Close()
	if _, err := postgres.OpenDB(t.Context(), db, postgres.Options{}); !errors.Is(err, store.ErrInvalidParams) || !strings.Contains(err.Error(), "stdlib") {
		t.Fatalf("OpenDB on another driver: %v, want ErrInvalidParams naming pgx's stdlib", err)
	}
}

// otherConnector is a database/sql driver that is not pgx.
type otherConnector struct{}

func (otherConnector) Connect(context.Context) (driver.Conn, error) { return otherConn{}, nil }
func (otherConnector) Driver() driver.Driver                        { return nil }

type otherConn struct{}

func (otherConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("not supported") }
func (otherConn) Close() error                        { return nil }
func (otherConn) Begin() (driver.Tx, error)           { return nil, errors.New("not supported") }
