package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/backwave/backwave/internal/graphtest"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
	"github.com/backwave/backwave/store/storetest"
)

// TestClientRunsDiamondWorkflow: a 1,000-step diamond-heavy Workflow runs
// to Succeeded through a running Client over a SQLite file (glossary,
// Workflow: status derived from member states).
func TestClientRunsDiamondWorkflow(t *testing.T) {
	t.Parallel()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "jobs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	st := graphtest.ClientDiamondWorkflow(t, s, 1000)
	t.Logf("%d steps ran through a Client in %v", st.Jobs, st.Took)
}

// BenchmarkWorkflowStatus: the status read at 100 and 10,000 members
// (storetest.BenchWorkflowStatus).
func BenchmarkWorkflowStatus(b *testing.B) {
	storetest.BenchWorkflowStatus(b, func(b *testing.B) store.Store {
		s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "jobs.db"), sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		return s
	})
}
