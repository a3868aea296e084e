package workflow_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/jobtest"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/workflow"
)

// record collects what handlers saw, safe for their goroutines.
type record struct {
	mu  sync.Mutex
	got []string
}

func (r *record) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, fmt.Sprintf(format, args...))
}

func (r *record) sorted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := slices.Clone(r.got)
	slices.Sort(s)
	return s
}

// The handlers of the diamond read the Workflow Input apart from their own
// args, set typed outputs, and read their ancestors' typed outputs by Step
// type and name through the stored graph (glossary: Workflow Input, Step,
// Job Output).
func TestHandlersReadInputAndOutputs(t *testing.T) {
	t.Parallel()
	var rd *workflow.Reader
	rec := &record{}
	handlers := backwave.NewHandlers()
	_ = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[fetch]) error {
		in, ok, err := workflow.Input[order](j)
		if err != nil || !ok {
			return fmt.Errorf("fetch input: %v %w", ok, err)
		}
		rec.add("fetch %s name=%q input=%s", j.Args.URL, workflow.StepName(j), in.ID)
		return workflow.SetOutput(j, len(j.Args.URL))
	})
	_ = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[resize]) error {
		n, ok, err := workflow.Output(ctx, rd, j, workflow.Ancestor[fetch]())
		if err != nil {
			return err
		}
		in, _, _ := workflow.Input[order](j)
		rec.add("resize %s width=%d fetched=%d/%v input=%s", workflow.StepName(j), j.Args.Width, n, ok, in.ID)
		return workflow.SetOutput(j, thumb{URL: fmt.Sprintf("%s@%d", in.ID, j.Args.Width)})
	})
	_ = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[publish]) error {
		for _, name := range []string{"1", "images.0", "nope"} {
			th, ok, err := workflow.Output(ctx, rd, j, workflow.Ancestor[resize](name))
			if err != nil {
				return err
			}
			rec.add("publish %q reads resize %q: %q %v", workflow.StepName(j), name, th.URL, ok)
		}
		f, ok, err := workflow.Output(ctx, rd, j, workflow.Ancestor[fetch]())
		rec.add("publish %q reads fetch: %d %v %v", workflow.StepName(j), f, ok, err)
		in, ok, err := workflow.Input[order](j)
		rec.add("publish %q has input %q: %v %v", workflow.StepName(j), in.ID, ok, err)
		return nil
	})
	c := jobtest.New(t, backwave.Config{Handlers: handlers})
	admin, err := c.Admin(backwave.Actor("test"))
	if err != nil {
		t.Fatal(err)
	}
	if rd, err = workflow.NewAdminReader(admin); err != nil {
		t.Fatal(err)
	}

	b := workflow.New("top", order{ID: "top"})
	root := workflow.Add(b, fetch{URL: "root"}, workflow.Named("top"))
	child := workflow.Splice(b, images{widths: []int{10, 20}}, order{ID: "o7"}, workflow.After(root))
	workflow.Then(b, child, publish{})
	p, err := b.Prepare()
	if err != nil {
		t.Fatal(err)
	}
	run, err := p.Enqueue(t.Context(), c.Client)
	if err != nil {
		t.Fatal(err)
	}
	ids := run.Jobs
	c.RunUntilIdle()
	for _, id := range ids {
		jobtest.RequireState(t, c, id, backwave.StateSucceeded)
	}
	// Seen from the spliced Definition, Ancestor[fetch]() is its own fetch
	// (named "images" in the flat graph) and "1" its second resize; seen
	// from the top, they are the top's names. "top" names the top fetch
	// from anywhere; "nope" names nothing: absent, no error.
	want := []string{
		`fetch img/o7 name="images" input=o7`,
		`fetch root name="top" input=top`,
		`publish "" has input "top": true <nil>`,
		`publish "" reads fetch: 0 false <nil>`,
		`publish "" reads resize "1": "" false`,
		`publish "" reads resize "images.0": "o7@10" true`,
		`publish "" reads resize "nope": "" false`,
		`publish "images" has input "o7": true <nil>`,
		`publish "images" reads fetch: 6 true <nil>`,
		`publish "images" reads resize "1": "o7@20" true`,
		`publish "images" reads resize "images.0": "o7@10" true`,
		`publish "images" reads resize "nope": "" false`,
		`resize images.0 width=10 fetched=6/true input=o7`,
		`resize images.1 width=20 fetched=6/true input=o7`,
	}
	got := rec.sorted()
	if !slices.Equal(got, want) {
		t.Errorf("handlers saw:\n%q\nwant:\n%q", got, want)
	}
}

// A Key given two names is refused, not read as its first.
func TestAncestorTakesOneName(t *testing.T) {
	t.Parallel()
	rd, err := workflow.NewReader(memstoreForTest())
	if err != nil {
		t.Fatal(err)
	}
	j := &backwave.Job[publish]{ID: 1}
	if _, _, err := workflow.Output(t.Context(), rd, j, workflow.Ancestor[resize]("a", "b")); err == nil || !strings.Contains(err.Error(), "at most one") {
		t.Errorf("two names: %v", err)
	}
	if _, err := workflow.NewReader(nil); err == nil {
		t.Error("NewReader(nil) gave a Reader")
	}
	if _, err := workflow.NewAdminReader(nil); err == nil {
		t.Error("NewAdminReader(nil) gave a Reader")
	}
}

func memstoreForTest() backwave.Store { return memstore.New(memstore.Options{}) }
