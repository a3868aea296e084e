package postgres_test

import (
	"context"
	"database/sql"
	"log"
	"net/url"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// Open a store (migrating its schema) and hand it to a Client.
func ExampleOpen() {
	ctx := context.Background()
	s, err := postgres.Open(ctx, "postgres://app@db.internal:5432/app?sslmode=require", postgres.Options{Schema: "jobs"})
	if err != nil {
		log.Fatal(err) // an unreachable host, a wrong password or a missing privilege shows up here
	}
	defer s.Close()
	client, err := backwave.NewClient(s, backwave.Config{})
	if err != nil {
		log.Fatal(err)
	}
	_ = client
}

// Any BackWave store opens by URI once its adapter is imported.
func ExampleParseURI() {
	ctx := context.Background()
	s, err := store.Open(ctx, "postgres://app@db.internal:5432/app?schema=jobs&migrate=false")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
}

// Migrate as a deploy step, then let every node open without migrating.
func ExampleMigrate() {
	ctx := context.Background()
	url := "postgres://admin@db.internal:5432/app"
	res, err := postgres.Migrate(ctx, url, postgres.Options{})
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("applied %v, now at version %d", res.Applied, res.Version)
	s, err := postgres.Open(ctx, "postgres://app@db.internal:5432/app", postgres.Options{SkipMigrate: true})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
}

// Transactional Enqueue with pgx: the order and its shipping job commit
// together or not at all.
func ExampleStore_JobInsertManyTx() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@db.internal:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	s, err := postgres.OpenPool(ctx, pool, postgres.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	tx, err := pool.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO orders (id) VALUES (42)`); err != nil {
		log.Fatal(err)
	}
	_, err = s.JobInsertManyTx(ctx, tx, store.InsertManyParams{Jobs: []store.NewJob{
		{WireName: "order.ship", Queue: "orders", Payload: []byte(`{"order":42}`), MaxAttempts: 5},
	}})
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}
}

// Transactional Enqueue with database/sql, on pgx's stdlib driver.
func ExampleStore_JobInsertManySQLTx() {
	ctx := context.Background()
	db, err := sql.Open("pgx", "postgres://app@db.internal:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	s, err := postgres.OpenDB(ctx, db, postgres.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id) VALUES (42)`); err != nil {
		log.Fatal(err)
	}
	if _, err := s.JobInsertManySQLTx(ctx, tx, store.InsertManyParams{Jobs: []store.NewJob{
		{WireName: "order.ship", Queue: "orders", Payload: []byte(`{"order":42}`), MaxAttempts: 5},
	}}); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
}

// Behind PgBouncer (or another pooler) in transaction pooling mode, say so
// with pooler=transaction, and name the server itself in listen= for the
// Wake-Up Hint listener; without listen= workers poll.
func ExampleOpen_pooler() {
	ctx := context.Background()
	direct := "postgres://app@db.internal:5432/app?sslmode=require"
	s, err := postgres.Open(ctx, "postgres://app@pgbouncer.internal:6432/app?sslmode=require&pooler=transaction&listen="+url.QueryEscape(direct),
		postgres.Options{Schema: "jobs"})
	if err != nil {
		log.Fatal(err) // a listen= that goes through the pooler is refused here
	}
	defer s.Close()
}
