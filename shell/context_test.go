package shell_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/shell"
)

// The handler's context carries the Attempt's Progress and its
// cancellation, through any context the handler derives from it: an
// operator's cancel reaches a child context with ErrCancelRequested as its
// cause, and ProgressOf answers the child as it does the parent.
func TestHandlerContextCarriesProgressAndCancelToChildren(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		id := insert(t, st, 1, 5)[0]
		running := make(chan struct{})
		type seen struct {
			progress, childProgress *shell.Progress
			cause                   error
		}
		got := make(chan seen, 1)
		p := newPump(t, st, shell.ExecutorFunc(func(ctx context.Context, j job.Job) shell.Result {
			child, cancel := context.WithCancel(ctx)
			defer cancel()
			close(running)
			<-child.Done()
			got <- seen{progress: shell.ProgressOf(ctx), childProgress: shell.ProgressOf(child), cause: context.Cause(child)}
			return shell.Result{Result: core.ResultFailed, FailureDetail: "stopped"}
		}), nil)
		start(t, p)
		<-running
		if err := st.RequestCancel(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		s := <-got
		if s.progress == nil || s.childProgress != s.progress {
			t.Errorf("ProgressOf: handler's %p, child's %p; want the same non-nil Progress", s.progress, s.childProgress)
		}
		if !errors.Is(s.cause, shell.ErrCancelRequested) {
			t.Errorf("child context's cause = %v, want ErrCancelRequested", s.cause)
		}
		stop(t, p)
	})
}
