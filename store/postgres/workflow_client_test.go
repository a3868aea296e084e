package postgres_test

import (
	"testing"

	"github.com/backwave/backwave/internal/graphtest"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/storetest"
)

// TestClientRunsDiamondWorkflow: a 1,000-step diamond-heavy Workflow runs
// to Succeeded through a running Client over PostgreSQL (glossary,
// Workflow: status derived from member states).
func TestClientRunsDiamondWorkflow(t *testing.T) {
	t.Parallel()
	s := openStore(t, modePgx, postgres.Options{})
	st := graphtest.ClientDiamondWorkflow(t, s, 1000)
	t.Logf("%d steps ran through a Client in %v", st.Jobs, st.Took)
}

// BenchmarkWorkflowStatus: the status read at 100 and 10,000 members
// (storetest.BenchWorkflowStatus).
func BenchmarkWorkflowStatus(b *testing.B) {
	storetest.BenchWorkflowStatus(b, func(b *testing.B) store.Store {
		return openStore(b, modePgx, postgres.Options{})
	})
}
