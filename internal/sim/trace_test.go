package sim

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "regenerate "+traceHashFile+" from the code as it stands")

// traceHashFile pins the trace hash of each of pinnedTraces, one
// "seed level hash" line each.
const traceHashFile = "testdata/trace-hashes.txt"

// pinnedTraces are the runs whose trace hashes traceHashFile pins: two seeds
// per Fault Level, each among the battery's richest at its level (the most
// Situations reached; the Recoverable and Adversarial ones include the
// heal-into-stale-write race).
var pinnedTraces = []struct {
	seed  uint64
	level Level
}{
	{11, Pristine},
	{33, Pristine},
	{11, Recoverable},
	{33, Recoverable},
	{33, Adversarial},
	{56, Adversarial},
}

const traceHashHeader = `# Trace hashes of fixed seeds (TestPinnedTraceHashes): seed, Fault Level,
# and the hash of every event, Driver input, command and store state change
# of the run of NewPlan(seed, level, Size{}). A refactor that leaves the
# simulated behaviour unchanged leaves these unchanged. Regenerate with
#   go test ./internal/sim -run TestPinnedTraceHashes -rewrite
# Pinned on amd64, where math.Log and math.Exp run assembly: another GOARCH
# may draw a duration a nanosecond apart and so hash differently.
`

// TestPinnedTraceHashes: the same seed gives the same trace hash not only
// twice in one process (TestSameSeedSameTrace) but across commits, until the
// simulated behaviour is changed on purpose (glossary: Simulator, Plan).
func TestPinnedTraceHashes(t *testing.T) {
	t.Parallel()
	got := make([]uint64, len(pinnedTraces))
	for i, pt := range pinnedTraces {
		rep, err := Run(NewPlan(pt.seed, pt.level, Size{}))
		if err != nil {
			t.Fatalf("seed %d %s: %v", pt.seed, pt.level, err)
		}
		got[i] = rep.TraceHash
	}
	if *rewrite {
		var b bytes.Buffer
		b.WriteString(traceHashHeader)
		for i, pt := range pinnedTraces {
			fmt.Fprintf(&b, "%d %s %016x\n", pt.seed, pt.level, got[i])
		}
		if err := os.WriteFile(traceHashFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	pinned, err := readTraceHashes(traceHashFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(pinned) != len(pinnedTraces) {
		t.Errorf("%s pins %d runs, pinnedTraces lists %d: rerun with -rewrite", traceHashFile, len(pinned), len(pinnedTraces))
	}
	for i, pt := range pinnedTraces {
		key := fmt.Sprintf("%d %s", pt.seed, pt.level)
		want, ok := pinned[key]
		switch {
		case !ok:
			t.Errorf("seed %d %s: not pinned in %s: rerun with -rewrite", pt.seed, pt.level, traceHashFile)
		case got[i] != want:
			t.Errorf("seed %d %s: trace hash %016x, pinned %016x.\n"+
				"The simulated behaviour changed: the run processed a different sequence of events,\n"+
				"Driver inputs, commands or store state changes. If the change is intended, rerun\n"+
				"  go test ./internal/sim -run TestPinnedTraceHashes -rewrite\n"+
				"and say in the commit why the behaviour changed. If it is not, this is determinism\n"+
				"drift or an unintended change of behaviour: find it before rewriting.",
				pt.seed, pt.level, got[i], want)
		}
	}
}

// readTraceHashes parses traceHashFile into hashes keyed by "seed level".
func readTraceHashes(path string) (map[string]uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w (create it with -rewrite)", err)
	}
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: want \"seed level hash\", got %q", path, n, line)
		}
		seed, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: seed: %w", path, n, err)
		}
		level, err := ParseLevel(f[1])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		h, err := strconv.ParseUint(f[2], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: hash: %w", path, n, err)
		}
		key := fmt.Sprintf("%d %s", seed, level)
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%s:%d: %s pinned twice", path, n, key)
		}
		out[key] = h
	}
	return out, sc.Err()
}

// TestEveryEventKindHasAName: the story a -v replay prints names every
// event kind, so a kind added without a name cannot crash the replay.
func TestEveryEventKindHasAName(t *testing.T) {
	t.Parallel()
	if len(evNames) != int(evKinds) {
		t.Fatalf("evNames has %d entries, want %d (one per event kind)", len(evNames), evKinds)
	}
	for k := evEnqueue; k < evKinds; k++ {
		if evNames[k] == "" {
			t.Errorf("event kind %d has no name in evNames", k)
		}
	}
}
