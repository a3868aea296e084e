package shell_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave/internal/invariants"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/shell"
)

// TestUnknownAttemptIsLoud: a Driver command naming an Attempt the Pump
// does not hold (it holds each from its Execute to its Forget or Abandon)
// is a broken invariant between the two. A build that checks invariants
// (-race, or the tag backwave_invariants) panics; any other ignores the
// command. Run under -race, the test proves each check bites.
func TestUnknownAttemptIsLoud(t *testing.T) {
	t.Parallel()
	unknown := job.Lease{ID: 42, Attempt: 1}
	for _, c := range []node.Command{
		node.SignalCancel{Lease: unknown},
		node.LetLapse{Lease: unknown, Timeout: time.Second},
	} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			p := newPump(t, newStore(), shell.ExecutorFunc(func(context.Context, job.Job) shell.Result { return shell.Result{} }), nil)
			var got string
			func() {
				defer func() {
					if r := recover(); r != nil {
						got, _ = r.(string)
					}
				}()
				shell.Carry(p, c)
			}()
			switch {
			case invariants.Enabled && !strings.Contains(got, "does not hold"):
				t.Fatalf("carry(%s) = %q, want a broken-invariant panic", c, got)
			case !invariants.Enabled && got != "":
				t.Fatalf("carry(%s) panicked %q in a build without invariants, want it ignored", c, got)
			}
		})
	}
}
