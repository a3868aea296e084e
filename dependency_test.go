package backwave_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// step is a job of a test graph; the handler looks its behavior up by Name.
type step struct{ Name string }

func (step) WireName() string { return "test.step" }

// stepOutput is the Job Output every step that succeeds records.
type stepOutput struct {
	Name string
	Seen []string // the ancestors' outputs it read
}

// graphRun records what the steps did.
type graphRun struct {
	mu    sync.Mutex
	order []string
	reads map[string][]backwave.AncestorOutput
	errs  map[string]error
}

func (g *graphRun) ran() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.order)
}

// stepClient starts a Client whose step handler fails the steps named in
// fail (permanently), and lets each step read the outputs of the jobs
// reads[name] returns.
func stepClient(t *testing.T, st store.Store, fail map[string]bool, reads func(name string) []job.ID, cfg ...func(*backwave.Config)) *graphRun {
	t.Helper()
	g := &graphRun{reads: map[string][]backwave.AncestorOutput{}, errs: map[string]error{}}
	w := backwave.NewHandlers()
	err := backwave.AddHandlerFunc(w, func(ctx context.Context, j *backwave.Job[step]) error {
		out := stepOutput{Name: j.Args.Name}
		for _, id := range reads(j.Args.Name) {
			got, err := j.AncestorOutput(ctx, id)
			typed, ok, terr := backwave.AncestorOutputJSON[stepOutput](ctx, j, id)
			g.mu.Lock()
			if err != nil {
				g.errs[j.Args.Name] = errors.Join(g.errs[j.Args.Name], err)
			} else {
				g.reads[j.Args.Name] = append(g.reads[j.Args.Name], got)
			}
			g.mu.Unlock()
			if ok && terr == nil {
				out.Seen = append(out.Seen, typed.Name)
			}
		}
		g.mu.Lock()
		g.order = append(g.order, j.Args.Name)
		g.mu.Unlock()
		if fail[j.Args.Name] {
			return backwave.FailPermanently(errors.New("step failed"))
		}
		return j.SetOutputJSON(out)
	})
	if err != nil {
		t.Fatal(err)
	}
	c := backwave.Config{Handlers: w, Groups: []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)}}
	for _, f := range cfg {
		f(&c)
	}
	startClient(t, st, c)
	return g
}

func enqueueMany(t *testing.T, c *backwave.Client, params ...backwave.EnqueueParams) []job.ID {
	t.Helper()
	ids, err := c.EnqueueMany(context.Background(), params)
	if err != nil {
		t.Fatalf("EnqueueMany: %v", err)
	}
	return ids
}

// A diamond enqueued in one call runs parents first, and the bottom reads
// its parents' outputs and its grandparent's (glossary, Job Output: "A job
// reads the output of its transitive Dependency ancestors on demand").
func TestGraphRunsInDependencyOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		var ids []job.ID
		var ready sync.WaitGroup
		ready.Add(1)
		g := stepClient(t, st, nil, func(name string) []job.ID {
			ready.Wait()
			if name == "join" {
				return []job.ID{ids[0], ids[1], ids[2]}
			}
			return nil
		})
		inserter, err := backwave.NewClient(st, backwave.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ids = enqueueMany(t, inserter,
			backwave.EnqueueParams{Args: step{"join"}, Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, 2, 3)}},
			backwave.EnqueueParams{Args: step{"root"}},
			backwave.EnqueueParams{Args: step{"left"}, Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, 1)}},
			backwave.EnqueueParams{Args: step{"right"}, Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, 1)}},
		)
		ids = []job.ID{ids[1], ids[2], ids[3], ids[0]} // root, left, right, join
		ready.Done()
		waitState(t, st, ids[3], job.StateSucceeded)
		order := g.ran()
		if order[0] != "root" || order[3] != "join" || len(order) != 4 {
			t.Fatalf("ran %v, want root first and join last", order)
		}
		if len(g.errs) != 0 {
			t.Fatalf("reads failed: %v", g.errs)
		}
		for i, r := range g.reads["join"] {
			if !r.Present || r.State != backwave.StateSucceeded {
				t.Fatalf("join's read %d = %+v, want a present output of a succeeded job", i, r)
			}
		}
		out, err := st.JobOutput(context.Background(), ids[3])
		if err != nil || !strings.Contains(string(out), `"Seen":["root","left","right"]`) {
			t.Fatalf("join's output = %s, %v; want it to have seen root, left and right", out, err)
		}
	})
}

// Glossary, Job Output: "Absence is a normal read result: a parent may have
// failed ... (on-any-terminal dependents routinely run past non-success
// parents)"; "never a non-ancestor sibling's". Cancelled: an on-success
// dependent of a failed parent is cancelled with cause parent failure.
func TestFailedParentAndNonAncestorReads(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		var ids []job.ID
		var ready sync.WaitGroup
		ready.Add(1)
		g := stepClient(t, st, map[string]bool{"parent": true}, func(name string) []job.ID {
			ready.Wait()
			switch name {
			case "cleanup":
				return []job.ID{ids[0]} // its failed parent
			case "sibling":
				return []job.ID{ids[1]} // the cancelled job: not an ancestor
			}
			return nil
		})
		inserter, err := backwave.NewClient(st, backwave.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ids = enqueueMany(t, inserter,
			backwave.EnqueueParams{Args: step{"parent"}, Options: []backwave.EnqueueOption{backwave.WithMaxAttempts(1)}},
			backwave.EnqueueParams{Args: step{"next"}, Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, 0)}},
			backwave.EnqueueParams{Args: step{"cleanup"}, Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnAnyTerminal, 0)}},
			backwave.EnqueueParams{Args: step{"sibling"}, Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnAnyTerminal, 0)}},
		)
		ready.Done()
		waitState(t, st, ids[2], job.StateSucceeded)
		waitState(t, st, ids[3], job.StateSucceeded)
		if j := getJob(t, st, ids[1]); j.State != job.StateCancelled || j.CancelCause != job.CancelCauseParentFailure {
			t.Fatalf("the on-success dependent is %s/%q, want cancelled/parent_failure", j.State, j.CancelCause)
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if err := g.errs["cleanup"]; err != nil {
			t.Fatalf("reading a failed parent's missing output: %v, want absent and no error", err)
		}
		if r := g.reads["cleanup"]; len(r) != 1 || r[0].Present || r[0].State != backwave.StateDeadLettered {
			t.Fatalf("cleanup read %+v, want one absent output of a dead-lettered parent", r)
		}
		if err := g.errs["sibling"]; !errors.Is(err, backwave.ErrNotAncestor) {
			t.Fatalf("reading a non-ancestor: %v, want ErrNotAncestor", err)
		}
	})
}

// Glossary, Job Output: "Bounded by MaxOutputBytes, and over-limit output is
// rejected, not truncated": the Attempt fails with a Failure Detail saying
// so, nothing is stored, and a dependent reads the output as absent.
func TestOutputOverLimitFailsTheAttempt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		var ids []job.ID
		var ready sync.WaitGroup
		ready.Add(1)
		g := stepClient(t, st, nil, func(name string) []job.ID {
			ready.Wait()
			if name == "after" {
				return []job.ID{ids[0]}
			}
			return nil
		}, func(c *backwave.Config) { c.MaxOutputBytes = 16 })
		inserter, err := backwave.NewClient(st, backwave.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ids = enqueueMany(t, inserter,
			backwave.EnqueueParams{Args: step{"a step whose output is too long"}, Options: []backwave.EnqueueOption{backwave.WithMaxAttempts(1)}},
			backwave.EnqueueParams{Args: step{"after"}, Options: []backwave.EnqueueOption{backwave.WithMaxAttempts(1), backwave.WithParentsInBatch(backwave.OnAnyTerminal, 0)}},
		)
		ready.Done()
		waitState(t, st, ids[0], job.StateDeadLettered)
		if d := lastDetail(t, st, ids[0]); !strings.Contains(d, "exceeds the limit of 16 bytes") {
			t.Fatalf("Failure Detail %q does not say the output is over the limit", d)
		}
		if out, err := st.JobOutput(context.Background(), ids[0]); err != nil || out != nil {
			t.Fatalf("stored output %q, %v; want none (rejected, not truncated)", out, err)
		}
		waitState(t, st, ids[1], job.StateDeadLettered) // its own output is over the limit too
		g.mu.Lock()
		defer g.mu.Unlock()
		if r := g.reads["after"]; len(r) != 1 || r[0].Present {
			t.Fatalf("the dependent read %+v, want the output absent", r)
		}
	})
}

// Enqueue refuses bad graphs with ErrInvalidJob and the specific cause, and
// stores nothing.
func TestEnqueueRefusesBadGraphs(t *testing.T) {
	t.Parallel()
	st := newStore()
	c, err := backwave.NewClient(st, backwave.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := func(name string, opts ...backwave.EnqueueOption) backwave.EnqueueParams {
		return backwave.EnqueueParams{Args: step{name}, Options: opts}
	}
	for _, tc := range []struct {
		name   string
		params []backwave.EnqueueParams
		want   error
	}{
		{"cycle", []backwave.EnqueueParams{p("a", backwave.WithParentsInBatch(backwave.OnSuccess, 1)), p("b", backwave.WithParentsInBatch(backwave.OnSuccess, 0))}, backwave.ErrDependencyCycle},
		{"self", []backwave.EnqueueParams{p("a", backwave.WithParentsInBatch(backwave.OnSuccess, 0))}, backwave.ErrDependencyCycle},
		{"unknown parent", []backwave.EnqueueParams{p("a", backwave.WithParents(backwave.OnSuccess, 12345))}, backwave.ErrUnknownParent},
		{"index out of range", []backwave.EnqueueParams{p("a", backwave.WithParentsInBatch(backwave.OnSuccess, 3))}, backwave.ErrInvalidJob},
		{"id zero", []backwave.EnqueueParams{p("a", backwave.WithParents(backwave.OnSuccess, 0))}, backwave.ErrInvalidJob},
		{"two modes", []backwave.EnqueueParams{p("a"), p("b", backwave.WithParentsInBatch(backwave.OnSuccess, 0), backwave.WithParents(backwave.OnAnyTerminal))}, backwave.ErrInvalidJob},
	} {
		_, err := c.EnqueueMany(ctx, tc.params)
		if !errors.Is(err, tc.want) || !errors.Is(err, backwave.ErrInvalidJob) {
			t.Errorf("%s: %v, want an error wrapping %v and ErrInvalidJob", tc.name, err, tc.want)
		}
	}
	if jobs, err := st.JobList(ctx, store.JobListParams{}); err != nil || len(jobs) != 0 {
		t.Fatalf("refused calls stored %d jobs (%v)", len(jobs), err)
	}
}

// A job enqueued after its parent finished counts the parent at once
// (glossary, Dependency).
func TestParentAlreadyDone(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		stepClient(t, st, nil, func(string) []job.ID { return nil })
		inserter, err := backwave.NewClient(st, backwave.Config{})
		if err != nil {
			t.Fatal(err)
		}
		parent := enqueue(t, inserter, step{"first"})
		waitState(t, st, parent, job.StateSucceeded)
		next := enqueue(t, inserter, step{"second"}, backwave.WithParents(backwave.OnSuccess, parent))
		waitState(t, st, next, job.StateSucceeded)
	})
}

// Glossary, Job Output: "independent of Job History Policy — ... recording
// history Off must not erase it". With Failure Detail capture off, the
// output is still stored and read.
func TestOutputKeptWithFailureDetailOff(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		var ids []job.ID
		var ready sync.WaitGroup
		ready.Add(1)
		g := stepClient(t, st, nil, func(name string) []job.ID {
			ready.Wait()
			if name == "b" {
				return []job.ID{ids[0]}
			}
			return nil
		}, func(c *backwave.Config) { c.FailureDetailOff = true })
		inserter, err := backwave.NewClient(st, backwave.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ids = enqueueMany(t, inserter,
			backwave.EnqueueParams{Args: step{"a"}},
			backwave.EnqueueParams{Args: step{"b"}, Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, 0)}},
		)
		ready.Done()
		waitState(t, st, ids[1], job.StateSucceeded)
		g.mu.Lock()
		defer g.mu.Unlock()
		if r := g.reads["b"]; len(r) != 1 || !r[0].Present || !strings.Contains(string(r[0].Output), `"Name":"a"`) {
			t.Fatalf("b read %+v, want a's output", r)
		}
	})
}
