package backwave_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
)

// WithUnique: "A held key is not an error. Enqueue and EnqueueMany then
// return the id of the job holding it in the refused job's place";
// EnqueueUnique and EnqueueManyUnique "also say whether the job was
// stored".
func TestUniqueEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := backwave.NewClient(newStore(), backwave.Config{})
	if err != nil {
		t.Fatal(err)
	}
	key := backwave.WithUnique("greet:ada", backwave.UniqueWhileLive())
	first, err := c.EnqueueUnique(ctx, greet{Name: "Ada"}, key)
	if err != nil || !first.Inserted || first.ID < 1 {
		t.Fatalf("EnqueueUnique = %+v, %v; want a stored job", first, err)
	}
	again, err := c.EnqueueUnique(ctx, greet{Name: "Ada again"}, key)
	if err != nil || again != (backwave.EnqueueResult{ID: first.ID}) {
		t.Fatalf("EnqueueUnique of a held key = %+v, %v; want %d, not inserted", again, err, first.ID)
	}
	id, err := c.Enqueue(ctx, greet{}, key)
	if err != nil || id != first.ID {
		t.Fatalf("Enqueue of a held key = %d, %v; want the holder %d", id, err, first.ID)
	}
	res, err := c.EnqueueManyUnique(ctx, []backwave.EnqueueParams{
		{Args: greet{}, Options: []backwave.EnqueueOption{key}},
		{Args: greet{}},
		{Args: greet{}, Options: []backwave.EnqueueOption{backwave.WithUnique("greet:bob", backwave.UniqueFor(time.Hour))}},
		{Args: greet{}, Options: []backwave.EnqueueOption{backwave.WithUnique("greet:bob", backwave.UniqueWhileLive())}},
	})
	switch {
	case err != nil:
		t.Fatalf("EnqueueManyUnique: %v", err)
	case res[0] != (backwave.EnqueueResult{ID: first.ID}), !res[1].Inserted, !res[2].Inserted:
		t.Fatalf("EnqueueManyUnique = %+v", res)
	case res[3] != (backwave.EnqueueResult{ID: res[2].ID}):
		t.Fatalf("EnqueueManyUnique = %+v: the second job with key greet:bob must answer the first", res)
	}
	ids, err := c.EnqueueMany(ctx, []backwave.EnqueueParams{{Args: greet{}, Options: []backwave.EnqueueOption{key}}})
	if err != nil || len(ids) != 1 || ids[0] != first.ID {
		t.Fatalf("EnqueueMany of a held key = %v, %v; want [%d]", ids, err, first.ID)
	}
	if res, err := c.EnqueueManyUnique(ctx, nil); res != nil || err != nil {
		t.Fatalf("EnqueueManyUnique(nil) = %v, %v", res, err)
	}
}

// UniqueFor: "holds the key for d from the enqueue of the job that took it,
// on the store's clock, whatever that job's state meanwhile".
func TestUniqueFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock, st, c := virtualClient(t)
	admin, err := backwave.NewAdmin(st, "test")
	if err != nil {
		t.Fatal(err)
	}
	daily := backwave.WithUnique("report:daily", backwave.UniqueFor(24*time.Hour))
	first, err := c.EnqueueUnique(ctx, greet{}, daily)
	if err != nil || !first.Inserted {
		t.Fatalf("EnqueueUnique = %+v, %v", first, err)
	}
	if _, err := admin.Cancel(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(23 * time.Hour)
	if r, err := c.EnqueueUnique(ctx, greet{}, daily); err != nil || r != (backwave.EnqueueResult{ID: first.ID}) {
		t.Fatalf("within the period: %+v, %v; want the cancelled holder %d", r, err, first.ID)
	}
	clock.Advance(time.Hour)
	if r, err := c.EnqueueUnique(ctx, greet{}, daily); err != nil || !r.Inserted {
		t.Fatalf("after the period: %+v, %v; want a stored job", r, err)
	}
}

// Validation: an empty key, a missing scope and a period that is not
// positive are ErrInvalidJob, and nothing is stored.
func TestUniqueInvalid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := backwave.NewClient(newStore(), backwave.Config{})
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]backwave.EnqueueParams{
		"empty key":       {{Args: greet{}, Options: []backwave.EnqueueOption{backwave.WithUnique("", backwave.UniqueWhileLive())}}},
		"no scope":        {{Args: greet{}, Options: []backwave.EnqueueOption{backwave.WithUnique("k", backwave.UniqueScope{})}}},
		"zero period":     {{Args: greet{}, Options: []backwave.EnqueueOption{backwave.WithUnique("k", backwave.UniqueFor(0))}}},
		"negative period": {{Args: greet{}, Options: []backwave.EnqueueOption{backwave.WithUnique("k", backwave.UniqueFor(-time.Second))}}},
		"long key":        {{Args: greet{}, Options: []backwave.EnqueueOption{backwave.WithUnique(strings.Repeat("k", 257), backwave.UniqueWhileLive())}}},
		"control in key":  {{Args: greet{}, Options: []backwave.EnqueueOption{backwave.WithUnique("a\nb", backwave.UniqueWhileLive())}}},
		"in-batch parent": {
			{Args: greet{}, Options: []backwave.EnqueueOption{backwave.WithUnique("k", backwave.UniqueWhileLive())}},
			{Args: greet{}, Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, 0)}},
		},
	}
	for name, params := range bad {
		if _, err := c.EnqueueManyUnique(ctx, params); !errors.Is(err, backwave.ErrInvalidJob) {
			t.Errorf("%s: %v, want ErrInvalidJob", name, err)
		}
	}
	if r, err := c.EnqueueUnique(ctx, greet{}, backwave.WithUnique("k", backwave.UniqueWhileLive())); err != nil || !r.Inserted {
		t.Fatalf("after the refused enqueues: %+v, %v; want key k free", r, err)
	}
}
