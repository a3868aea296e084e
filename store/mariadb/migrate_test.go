package mariadb_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/mariadb"
)

// TestConcurrentMigrate: many migrators racing on one fresh Schema Name
// (Coordinated Migration under GET_LOCK) apply every migration exactly
// once between them, and each ends at the latest version.
func TestConcurrentMigrate(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	schema := randomSchema(t)
	dropSchemaAtCleanup(t, schema)
	const n = 6
	results := make([]mariadb.MigrateResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = mariadb.Migrate(context.Background(), url, mariadb.Options{Schema: schema})
		}()
	}
	wg.Wait()
	applied := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("migrator %d: %v", i, errs[i])
		}
		applied += len(results[i].Applied)
		if results[i].Version != mariadb.SchemaVersion() {
			t.Errorf("migrator %d ended at version %d, want %d", i, results[i].Version, mariadb.SchemaVersion())
		}
	}
	files, err := os.ReadDir("migration") // a version may be left unused
	if err != nil {
		t.Fatal(err)
	}
	if applied != len(files) {
		t.Errorf("the migrators applied %d migrations between them, want %d (each once)", applied, len(files))
	}
}

// TestOpenRefusesSchemaBehindOrTooNew: with ManualMigrate, Open refuses
// tables that are missing (ErrSchemaBehind); any Open refuses a schema two
// migrations past this build (store.ErrSchemaTooNew), naming both.
func TestOpenRefusesSchemaBehindOrTooNew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testURL(t)
	schema := randomSchema(t)
	dropSchemaAtCleanup(t, schema)
	if _, err := mariadb.Open(ctx, url, mariadb.Options{Schema: schema, ManualMigrate: true}); !errors.Is(err, mariadb.ErrSchemaBehind) {
		t.Fatalf("Open on missing tables with ManualMigrate: %v, want ErrSchemaBehind", err)
	}
	s := openStore(t, mariadb.Options{Schema: schema})
	v := mariadb.SchemaVersion()
	for _, step := range []int{v + 1, v + 2} {
		if _, err := s.DB().ExecContext(ctx, "INSERT INTO `"+schema+"schema_version` (version, name, compat, applied_at) VALUES (?, 'future', 'n-1', 0)", step); err != nil {
			t.Fatal(err)
		}
	}
	_, err := mariadb.Open(ctx, url, mariadb.Options{Schema: schema})
	if !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("Open on a schema two steps ahead: %v, want store.ErrSchemaTooNew", err)
	}
}

// TestStoreOpenByURI: importing the package registers mariadb:// and
// mysql:// with the store registry.
func TestStoreOpenByURI(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	schema := randomSchema(t)
	dropSchemaAtCleanup(t, schema)
	s, err := store.Open(context.Background(), url+"?schema="+schema)
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	defer func() { _ = s.Close() }()
	if got := s.(*mariadb.Store).Schema(); got != schema {
		t.Fatalf("Schema() = %q, want %q", got, schema)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("second Close: %v, want store.ErrClosed", err)
	}
}
