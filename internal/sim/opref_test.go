package sim

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOpRefLegacyForm: an OpRef a Plan wrote when a Walker's OpIDs carried
// its machine in their high bits reads as the machine and its own OpID, and
// the one-word identity the draws and the trace hash take is the old OpID.
func TestOpRefLegacyForm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		want OpRef
		word uint64
	}{
		{`{"node":1,"inc":2,"op":7}`, OpRef{Node: 1, Inc: 2, Op: 7}, 7},
		{`{"node":1,"inc":2,"op":1099511627776}`, OpRef{Node: 1, Inc: 2, Machine: 1, Op: 1}, 1 << 40},
		{`{"node":0,"inc":1,"op":2199023255561}`, OpRef{Node: 0, Inc: 1, Machine: 2, Op: 10}, 2<<40 + 9},
		{`{"node":0,"inc":1,"machine":2,"op":10}`, OpRef{Node: 0, Inc: 1, Machine: 2, Op: 10}, 2<<40 + 9},
		{`{"node":-1,"inc":0,"op":3}`, OpRef{Node: -1, Op: 3}, 3},
	} {
		var got OpRef
		if err := json.Unmarshal([]byte(tc.text), &got); err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		if got != tc.want || got.word() != tc.word {
			t.Errorf("%s = %+v (word %d), want %+v (word %d)", tc.text, got, got.word(), tc.want, tc.word)
		}
	}
	var r OpRef
	if err := json.Unmarshal([]byte(`{"node":1,"inc":1,"op":1,"opid":2}`), &r); err == nil {
		t.Error("an unknown field was accepted")
	}
}

// TestLegacyPlanReplays: a discovery run's Plan whose faults address
// Walkers' operations, written in the old form (a Walker's operation as one
// OpID with its machine in the high bits), replays with the discovery's
// trace hash.
func TestLegacyPlanReplays(t *testing.T) {
	t.Parallel()
	found := 0
	for seed := uint64(1); seed < 400 && found < 3; seed++ {
		disc, _ := Run(NewPlan(seed, Adversarial, Size{}))
		p := disc.Plan
		walkOps := 0
		for i := range p.Faults.Ops {
			if p.Faults.Ops[i].Op.Machine != driverMachine {
				walkOps++
			}
		}
		for i := range p.Faults.Hints {
			if p.Faults.Hints[i].Source.Machine != driverMachine {
				walkOps++
			}
		}
		if walkOps == 0 {
			continue
		}
		found++
		data, err := p.Encode()
		if err != nil {
			t.Fatal(err)
		}
		legacy := legacyOpRefs(t, data)
		if strings.Contains(string(legacy), `"machine"`) {
			t.Fatalf("seed %d: the old form still names a machine", seed)
		}
		lp, err := DecodePlan(legacy)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		rep, _ := Run(lp)
		if rep.TraceHash != disc.TraceHash {
			t.Fatalf("seed %d (%d faults on Walkers' operations): old-form replay hash %x, discovery %x", seed, walkOps, rep.TraceHash, disc.TraceHash)
		}
	}
	if found == 0 {
		t.Fatal("no seed's Plan addressed a Walker's operation; the test proves nothing")
	}
}

// legacyOpRefs rewrites every OpRef of an encoded Plan in the old form.
func legacyOpRefs(t *testing.T, data []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			if m, ok := x["machine"].(float64); ok {
				op := uint64(x["op"].(float64))
				x["op"] = opWord(int(m), op)
				delete(x, "machine")
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
