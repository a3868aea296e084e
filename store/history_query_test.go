package store_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/sqlite"
)

// The Job History Policy is settable from a store URI on every adapter
// (glossary, Job History Policy), with "+" surviving query decoding.
func TestHistoryFromURI(t *testing.T) {
	t.Parallel()
	cases := []struct {
		query string
		want  store.HistoryPolicy
		bad   bool
	}{
		{"", store.HistoryTransitionsWithDetail, false},
		{"history=off", store.HistoryOff, false},
		{"history=transitions", store.HistoryTransitions, false},
		{"history=transitions+detail", store.HistoryTransitionsWithDetail, false},
		{"history=transitions%2Bdetail", store.HistoryTransitionsWithDetail, false},
		{"history=", 0, true},
		{"history=all", 0, true},
		{"history=off&history=off", 0, true},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			t.Parallel()
			check := func(adapter string, got store.HistoryPolicy, err error) {
				t.Helper()
				if c.bad {
					if !errors.Is(err, store.ErrInvalidParams) {
						t.Errorf("%s: ?%s: err %v, want ErrInvalidParams", adapter, c.query, err)
					}
					return
				}
				if err != nil || got != c.want {
					t.Errorf("%s: ?%s: %v, %v; want %v", adapter, c.query, got, err, c.want)
				}
			}
			u, _ := url.Parse("sqlite:///tmp/x.db?" + c.query)
			_, so, err := sqlite.ParseURI(u)
			check("sqlite", so.History, err)
			u, _ = url.Parse("postgres://u@h/db?sslmode=disable&" + c.query)
			conn, po, err := postgres.ParseURI(u)
			check("postgres", po.History, err)
			if err == nil && c.query != "" && strings.Contains(conn, "history") {
				t.Errorf("postgres: connection string %q still carries history", conn)
			}
			s, err := store.Open(context.Background(), "mem://?clock=manual&"+c.query)
			var mp store.HistoryPolicy
			if err == nil {
				mp = s.(*memstore.Store).History()
				_ = s.Close()
			}
			check("memstore", mp, err)
		})
	}
}
