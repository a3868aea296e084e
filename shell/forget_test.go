package shell_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
)

// refusingReport refuses every OutcomeReport as invalid, as a store does a
// batch it can never apply.
type refusingReport struct {
	*memstore.Store
	refused atomic.Int32
}

func (r *refusingReport) OutcomeReport(context.Context, store.ReportParams) ([]store.ReportResult, error) {
	r.refused.Add(1)
	return nil, fmt.Errorf("%w: outcome refused", store.ErrInvalidParams)
}

// TestPumpFreesDataOfRefusedBatch: when the store refuses an outcome batch,
// the Driver drops it (node-driver.txt, "Outcome coalescing"; ReportDone's
// doc) and says so with a Forget command, so the Pump frees the Failure
// Detail and Job Output it kept for those Attempts at once, not when the
// Pump exits.
func TestPumpFreesDataOfRefusedBatch(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &refusingReport{Store: newStore()}
		insert(t, st, 3, 5)
		big := make([]byte, 1<<20)
		p := newPump(t, st, shell.ExecutorFunc(func(_ context.Context, j job.Job) shell.Result {
			if j.ID%2 == 0 {
				return shell.Result{Result: core.ResultSucceeded, Output: big}
			}
			return shell.Result{Result: core.ResultFailed, FailureDetail: "disk full"}
		}), nil)
		start(t, p)
		waitFor(t, "a refused report", func() bool { return st.refused.Load() >= 1 })
		time.Sleep(time.Second) // every handler has returned and its batch was refused
		synctest.Wait()
		if n := st.refused.Load(); n < 1 {
			t.Fatalf("refused %d reports", n)
		}
		if n := shell.KeptAttempts(p); n != 0 {
			t.Errorf("the Pump keeps data for %d Attempts of refused batches, want 0", n)
		}
		stop(t, p)
	})
}
