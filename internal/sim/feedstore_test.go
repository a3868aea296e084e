package sim

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/store/memstore"
)

// openFeedMem opens the In-Memory Store without its transition callback,
// made a run's Store by a FeedStore: the feed and the hints come from the
// Storage Contract alone, as on a SQL adapter. A restart is the
// crash-clone.
func openFeedMem(opened **FeedStore) func(StoreEnv) (Store, error) {
	return func(env StoreEnv) (Store, error) {
		var m *memstore.Store
		m = memstore.New(memstore.Options{Clock: env.Clock})
		s, err := NewFeedStore(m, env, FeedOptions{Reopen: func() (Backing, error) {
			m = m.Clone()
			return m, nil
		}})
		*opened = s
		return s, err
	}
}

// TestFeedStoreKeepsTheTrace: the In-Memory Store driven through a
// FeedStore — the change feed walked from its Transition Log in commit
// order, the Wake-Up Hints from the Simulator's rule — takes the very path
// the store's own callback and hints take: the same trace hash, seed by
// seed and Plan by Plan. The rule and the walk are what every SQL adapter
// replays a Plan through (cmd/vopr replay -store).
func TestFeedStoreKeepsTheTrace(t *testing.T) {
	t.Parallel()
	plans := map[string]Plan{}
	for _, pt := range pinnedTraces {
		plans[fmt.Sprintf("seed-%d-%s", pt.seed, pt.level)] = NewPlan(pt.seed, pt.level, Size{})
	}
	for _, level := range []Level{Pristine, Recoverable, Adversarial} {
		for seed := uint64(100); seed < 106; seed++ {
			plans[fmt.Sprintf("seed-%d-%s", seed, level)] = NewPlan(seed, level, Size{})
		}
	}
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !plant.Enabled && bytes.Contains(data, []byte(`"mutation"`)) {
			continue
		}
		p, err := DecodePlan(data)
		if err != nil {
			t.Fatal(err)
		}
		if p.Scenario.Mutation.InStore() {
			continue
		}
		plans[strings.TrimSuffix(filepath.Base(file), ".json")] = p
	}
	for name, p := range plans {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want, werr := Run(p)
			var fs *FeedStore
			got, gerr := RunWith(p, Options{Store: openFeedMem(&fs)})
			if fs == nil {
				t.Fatal(gerr)
			}
			if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
				t.Fatalf("memstore: %v\nthrough a FeedStore: %v", werr, gerr)
			}
			if got.TraceHash != want.TraceHash {
				t.Fatalf("trace hash %016x through a FeedStore, %016x on memstore (events %d vs %d)", got.TraceHash, want.TraceHash, got.Events, want.Events)
			}
			if err := fs.Verify(); err != nil {
				t.Fatal(err)
			}
			t.Logf("trace %016x: %d state changes walked, %d hints", got.TraceHash, fs.Delivered(), fs.Hinted())
		})
	}
}
