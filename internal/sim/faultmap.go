package sim

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// FaultMap is every fault injected into one run, each addressed by the
// stable identity of what it acts on: a node and an episode number (crash,
// isolation, skew), a hint delivery (the receiving node incarnation, the
// store operation that caused the hint and its Queue), or a store operation
// (its node incarnation, the machine that sent it and that machine's
// operation id). Never by draw order, so removing one entry leaves every
// other meaningful — the property the Seed Minimizer relies on. Times are
// offsets from the start of the run.
//
// Episodes carry absolute times, so removing one never moves another. A
// store operation is named by its node incarnation, its machine (the Driver
// or a Walker) and that machine's own operation number, and a hint by the
// operation that caused it: removing an earlier fault can change a machine's
// history and so which operation a later number names. The Seed Minimizer
// only keeps removals that still trip the same invariant, so this costs it
// search steps, never exactness.
type FaultMap struct {
	Crashes    []CrashFault     `json:"crashes,omitempty"`
	Isolations []IsolationFault `json:"isolations,omitempty"`
	Skews      []SkewFault      `json:"skews,omitempty"`
	Hints      []HintFault      `json:"hints,omitempty"`
	Ops        []OpFault        `json:"ops,omitempty"`
	Restarts   []RestartFault   `json:"restarts,omitempty"`
}

// RestartFault restarts the store at At: for Down every node's store
// operation fails, and the restarted store (Store.Restart; memstore's is a
// crash-clone: every committed write survives) has lost its Wake-Up Hint
// subscribers.
type RestartFault struct {
	Episode int `json:"episode"`
	At      Dur `json:"at"`
	Down    Dur `json:"down"`
}

// CrashFault crashes a node: its Driver and outcome buffer are lost, its
// handlers die with it, and it restarts after Down with a fresh Driver and a
// new worker id — unless Permanent (Adversarial only).
type CrashFault struct {
	Node      int  `json:"node"`
	Episode   int  `json:"episode"`
	At        Dur  `json:"at"`
	Down      Dur  `json:"down"`
	Permanent bool `json:"permanent,omitempty"`
}

// IsolationFault is a Node Isolation window: the node's store operations are
// rejected with an error (or, with Withhold, held until the window heals and
// then applied), it receives no Wake-Up Hints, and it keeps running handlers
// and believing it holds its Leases. Permanent windows never heal
// (Adversarial only).
type IsolationFault struct {
	Node      int  `json:"node"`
	Episode   int  `json:"episode"`
	At        Dur  `json:"at"`
	For       Dur  `json:"for"`
	Withhold  bool `json:"withhold,omitempty"`
	Permanent bool `json:"permanent,omitempty"`
}

// SkewFault sets a node's clock offset from At on: the node's Driver sees
// virtual time plus Offset.
type SkewFault struct {
	Node    int `json:"node"`
	Episode int `json:"episode"`
	At      Dur `json:"at"`
	Offset  Dur `json:"offset"`
}

// OpRef names a store operation: the node, its incarnation (1 for the first
// start, one more per restart), the machine of the node that sent it
// (Machine) and that machine's operation id. A workload call (an insert or
// an Operator Action) has Node -1 and its index in the workload's calls as
// Op.
type OpRef struct {
	Node int `json:"node"`
	Inc  int `json:"inc"`
	// Machine is the node's machine that sent the operation: 0 for the
	// Driver, k+1 for the Walker of the Scenario's k-th Transition
	// Observer. Each machine numbers its operations from 1.
	Machine int    `json:"machine,omitempty"`
	Op      uint64 `json:"op"`
}

// walkerBit is where a Walker's machine sat in its OpIDs when they were
// told apart from the Driver's by their high bits: the k-th Observer's
// Walker numbered its operations from (k+1)<<walkerBit. A Plan written then
// names such an operation by that one number, which UnmarshalJSON
// translates, and word keeps the draws and the trace hash of every
// operation what they were.
const walkerBit = 40

// word is the operation's one-word identity for the draws and the trace
// hash (opWord).
func (a OpRef) word() uint64 { return opWord(a.Machine, a.Op) }

// opWord is the one-word identity of machine's operation op: op itself for
// the Driver's, the Walker's old OpID ((k+1)<<walkerBit + op - 1) for the
// k-th Observer's Walker.
func opWord(machine int, op uint64) uint64 {
	if machine == driverMachine {
		return op
	}
	return uint64(machine)<<walkerBit + op - 1
}

// UnmarshalJSON reads an OpRef, translating the form a Plan written before
// Machine existed has: a Walker's operation as its old OpID, with its
// machine in the high bits (opWord).
func (a *OpRef) UnmarshalJSON(b []byte) error {
	type plain OpRef // no methods: the default decoding
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // as DecodePlan's
	if err := dec.Decode(&p); err != nil {
		return err
	}
	if p.Machine == driverMachine && p.Node >= 0 && p.Op>>walkerBit != 0 {
		p.Machine, p.Op = int(p.Op>>walkerBit), p.Op&(1<<walkerBit-1)+1
	}
	*a = OpRef(p)
	return nil
}

func (a OpRef) compare(b OpRef) int {
	return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Inc, b.Inc), cmp.Compare(a.Machine, b.Machine), cmp.Compare(a.Op, b.Op))
}

// HintMode is what happens to one Wake-Up Hint delivery.
type HintMode string

// The hint faults.
const (
	HintDrop      HintMode = "drop"
	HintDuplicate HintMode = "dup"
	HintDelay     HintMode = "delay"
)

// HintFault acts on one Wake-Up Hint delivery: the hint for Queue, caused by
// the store operation Source, to the node incarnation (Node, Inc). A
// duplicate arrives again after Delay; a delayed hint arrives after Delay.
type HintFault struct {
	Node   int      `json:"node"`
	Inc    int      `json:"inc"`
	Source OpRef    `json:"source"`
	Queue  string   `json:"queue"`
	Mode   HintMode `json:"mode"`
	Delay  Dur      `json:"delay,omitempty"`
}

// Unknown says how a store operation's outcome is hidden from its caller.
type Unknown string

// The unknown-outcome faults.
const (
	// UnknownNone: the caller learns the outcome.
	UnknownNone Unknown = ""
	// UnknownApplied: the store applied the operation; the caller gets an
	// error.
	UnknownApplied Unknown = "applied"
	// UnknownLost: the store never saw the operation; the caller gets an
	// error.
	UnknownLost Unknown = "lost"
)

// OpFault acts on one store operation: its request reaches the store
// ReqDelay late (operations of one node still apply in the order sent), its
// response comes back RespDelay after it applied (so a later operation's
// response may arrive first), and Unknown may hide its outcome.
type OpFault struct {
	Op        OpRef   `json:"op"`
	ReqDelay  Dur     `json:"req_delay,omitempty"`
	RespDelay Dur     `json:"resp_delay,omitempty"`
	Unknown   Unknown `json:"unknown,omitempty"`
}

// Len returns how many faults the map holds.
func (m *FaultMap) Len() int {
	return len(m.Crashes) + len(m.Isolations) + len(m.Skews) + len(m.Hints) + len(m.Ops) + len(m.Restarts)
}

// Summary counts the faults per kind, e.g. "2 crashes, 5 ops (3 unknown)".
func (m *FaultMap) Summary() string {
	if m.Len() == 0 {
		return "no faults"
	}
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	permanent := 0
	for _, f := range m.Crashes {
		if f.Permanent {
			permanent++
		}
	}
	for _, f := range m.Isolations {
		if f.Permanent {
			permanent++
		}
	}
	unknown := 0
	for _, f := range m.Ops {
		if f.Unknown != UnknownNone {
			unknown++
		}
	}
	add(len(m.Crashes), "crashes")
	add(len(m.Isolations), "isolations")
	add(permanent, "of them permanent")
	add(len(m.Skews), "skews")
	add(len(m.Restarts), "store restarts")
	add(len(m.Hints), "hint faults")
	add(len(m.Ops), "operation faults")
	add(unknown, "of them unknown outcomes")
	return strings.Join(parts, ", ")
}

// Clone returns a copy sharing nothing with m.
func (m *FaultMap) Clone() FaultMap {
	return FaultMap{
		Crashes:    slices.Clone(m.Crashes),
		Isolations: slices.Clone(m.Isolations),
		Skews:      slices.Clone(m.Skews),
		Hints:      slices.Clone(m.Hints),
		Ops:        slices.Clone(m.Ops),
		Restarts:   slices.Clone(m.Restarts),
	}
}

// Keep returns the map holding only the faults whose index (in the order
// Crashes, Isolations, Skews, Hints, Ops, Restarts) keep reports true for.
func (m *FaultMap) Keep(keep func(i int) bool) FaultMap {
	i := 0
	return FaultMap{
		Crashes:    keepEach(m.Crashes, keep, &i),
		Isolations: keepEach(m.Isolations, keep, &i),
		Skews:      keepEach(m.Skews, keep, &i),
		Hints:      keepEach(m.Hints, keep, &i),
		Ops:        keepEach(m.Ops, keep, &i),
		Restarts:   keepEach(m.Restarts, keep, &i),
	}
}

// keepEach returns the faults of fs that keep keeps, numbering them on from
// *i (Keep's index over the whole map) and advancing *i past them. A list
// that keeps nothing stays nil.
func keepEach[T any](fs []T, keep func(i int) bool, i *int) []T {
	var out []T
	for _, f := range fs {
		if keep(*i) {
			out = append(out, f)
		}
		*i++
	}
	return out
}

// sort orders every list by identity, so an encoded map is canonical.
func (m *FaultMap) sort() {
	slices.SortFunc(m.Crashes, func(a, b CrashFault) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Episode, b.Episode))
	})
	slices.SortFunc(m.Isolations, func(a, b IsolationFault) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Episode, b.Episode))
	})
	slices.SortFunc(m.Skews, func(a, b SkewFault) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Episode, b.Episode))
	})
	slices.SortFunc(m.Hints, func(a, b HintFault) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Inc, b.Inc), a.Source.compare(b.Source), cmp.Compare(a.Queue, b.Queue))
	})
	slices.SortFunc(m.Ops, func(a, b OpFault) int { return a.Op.compare(b.Op) })
	slices.SortFunc(m.Restarts, func(a, b RestartFault) int { return cmp.Compare(a.Episode, b.Episode) })
}

// hintKey identifies one hint delivery.
type hintKey struct {
	node, inc int
	src       OpRef
	queue     string
}

// faultIndex answers fault-site look-ups during a replay.
type faultIndex struct {
	hints map[hintKey]HintFault
	ops   map[OpRef]OpFault
}

func newFaultIndex(m *FaultMap) *faultIndex {
	x := &faultIndex{hints: make(map[hintKey]HintFault, len(m.Hints)), ops: make(map[OpRef]OpFault, len(m.Ops))}
	for _, h := range m.Hints {
		x.hints[hintKey{h.Node, h.Inc, h.Source, h.Queue}] = h
	}
	for _, o := range m.Ops {
		x.ops[o.Op] = o
	}
	return x
}
