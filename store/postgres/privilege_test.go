package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/store/postgres"
)

// Open refuses a role that cannot write every table this build uses,
// naming the missing privilege, instead of failing at the first purge of
// the Tag dictionary or the first unique insert.
func TestOpenNamesMissingPrivilege(t *testing.T) {
	t.Parallel()
	schema := randomSchema(t)
	dropSchemaAtCleanup(t, testURL(t), schema)
	s, err := postgres.Open(t.Context(), testURL(t), postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()

	role := "bw_priv_" + strings.TrimPrefix(schema, "bwtest_")
	admin, err := pgx.Connect(t.Context(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = admin.Exec(ctx, fmt.Sprintf(`DROP OWNED BY %[1]s; DROP ROLE IF EXISTS %[1]s`, pgx.Identifier{role}.Sanitize()))
		_ = admin.Close(ctx)
	})
	r, sc := pgx.Identifier{role}.Sanitize(), pgx.Identifier{schema}.Sanitize()
	for _, q := range []string{
		`CREATE ROLE ` + r + ` LOGIN`,
		`GRANT USAGE ON SCHEMA ` + sc + ` TO ` + r,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ` + sc + ` TO ` + r,
		`GRANT USAGE ON ALL SEQUENCES IN SCHEMA ` + sc + ` TO ` + r,
	} {
		if _, err := admin.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	u, err := url.Parse(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	opts := postgres.Options{Schema: schema, SkipMigrate: true}
	s, err = postgres.Open(t.Context(), u.String(), opts)
	if err != nil {
		t.Fatalf("role with every privilege: %v", err)
	}
	_ = s.Close()

	for _, c := range []struct{ table, priv string }{
		{"tag", "DELETE"},
		{"job_unique", "INSERT"},
		{"audit", "INSERT"},
	} {
		q := fmt.Sprintf(`REVOKE %s ON %s.%s FROM %s`, c.priv, sc, c.table, r)
		if _, err := admin.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		s, err = postgres.Open(t.Context(), u.String(), opts)
		if s != nil {
			_ = s.Close()
		}
		want := c.priv + " on " + schema + "." + c.table
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("without %s on %s: Open err %v, want it to name %q", c.priv, c.table, err, want)
		}
		if _, err := admin.Exec(t.Context(), fmt.Sprintf(`GRANT %s ON %s.%s TO %s`, c.priv, sc, c.table, r)); err != nil {
			t.Fatal(err)
		}
	}
}
