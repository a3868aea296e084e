package privatedb_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/backwave/backwave/internal/privatedb"
)

// A private PostgreSQL cluster in a work directory of its own: as root it
// runs as the postgres OS user, as anyone else as that user.
func ExampleStartPostgres() {
	ctx := context.Background()
	work, err := os.MkdirTemp("", "example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(work)
	pg, err := privatedb.StartPostgres(ctx, privatedb.PostgresConfig{
		Dir:      filepath.Join(work, "pg"),
		Within:   work,
		Port:     5499,
		Settings: map[string]string{"fsync": "off"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pg.Stop(ctx, privatedb.Fast)
	fmt.Println(pg.URL("postgres"))
}
