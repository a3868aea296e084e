package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/backwave/backwave/node"
)

// PlanVersion is the format version of a Plan this package writes and reads.
const PlanVersion = 1

// ErrInvalidPlan is wrapped by DecodePlan and Plan.Validate.
var ErrInvalidPlan = errors.New("sim: invalid plan")

// Plan is a serializable, replayable description of one Simulator run: a
// Scenario (the deterministic world, the Fault Level and the Swarm
// configuration in force) plus a Fault Map (every injected fault, addressed by
// what it acts on, never by draw order).
//
// A Plan with Discover set is a discovery run: faults are drawn at each fault
// site from the Swarm configuration and recorded, and the Report carries the
// resulting replayable Plan. A Plan without it is a replay: each fault site
// consults the Fault Map and applies no fault on a miss.
type Plan struct {
	Version  int      `json:"version"`
	Discover bool     `json:"discover,omitempty"`
	Scenario Scenario `json:"scenario"`
	Faults   FaultMap `json:"faults"`
}

// NewPlan returns the discovery Plan of one seed at one Fault Level, with the
// Scenario drawn by NewScenario.
func NewPlan(seed uint64, level Level, size Size) Plan {
	return Plan{Version: PlanVersion, Discover: true, Scenario: NewScenario(seed, level, size)}
}

// Encode renders the Plan as indented JSON.
func (p Plan) Encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("sim: encode plan: %w", err)
	}
	return b.Bytes(), nil
}

// DecodePlan parses a Plan written by Encode and validates it.
func DecodePlan(data []byte) (Plan, error) {
	var p Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Plan{}, fmt.Errorf("%w: %w", ErrInvalidPlan, err)
	}
	if err := p.Validate(); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// Validate reports the first reason the Plan cannot run.
func (p Plan) Validate() error {
	if p.Version != PlanVersion {
		return fmt.Errorf("%w: version %d (this build reads %d)", ErrInvalidPlan, p.Version, PlanVersion)
	}
	return p.Scenario.Validate()
}

// Level is a Fault Level: a contract chosen before a run and recorded in its
// Scenario, pairing the fault envelope the Swarm may draw from with the set
// of oracles enforced.
type Level uint8

const (
	// Pristine: no faults; every safety oracle plus Drain-Liveness with
	// bounds that carry no fault terms.
	Pristine Level = iota + 1
	// Recoverable: only faults that heal (crashed nodes restart,
	// isolations heal, skew and hint and store-operation faults stop) by the
	// end of the chaos window; every safety oracle plus Drain-Liveness once
	// the faults have ceased.
	Recoverable
	// Adversarial: also faults that never heal (a node lost for good, an
	// isolation that never heals), always sparing one node; safety oracles
	// only.
	Adversarial
)

// Levels lists the Fault Levels in order.
var Levels = []Level{Pristine, Recoverable, Adversarial}

// String names the level.
func (l Level) String() string {
	switch l {
	case Pristine:
		return "pristine"
	case Recoverable:
		return "recoverable"
	case Adversarial:
		return "adversarial"
	}
	return fmt.Sprintf("level(%d)", uint8(l))
}

// ParseLevel is the inverse of Level.String.
func ParseLevel(s string) (Level, error) {
	for _, l := range Levels {
		if l.String() == strings.ToLower(s) {
			return l, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown fault level %q (want pristine, recoverable or adversarial)", ErrInvalidPlan, s)
}

// MarshalText implements encoding.TextMarshaler.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (l *Level) UnmarshalText(b []byte) error {
	v, err := ParseLevel(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// LivenessChecked reports whether the level demands Drain-Liveness.
func (l Level) LivenessChecked() bool { return l == Pristine || l == Recoverable }

// Dur is a time.Duration that reads and writes as text ("1.5s") in a Plan.
type Dur time.Duration

// D returns the duration.
func (d Dur) D() time.Duration { return time.Duration(d) }

// String renders the duration.
func (d Dur) String() string { return time.Duration(d).String() }

// MarshalText implements encoding.TextMarshaler.
func (d Dur) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Dur) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidPlan, err)
	}
	*d = Dur(v)
	return nil
}

// PolicySpec is a node's Dispatch Policy in a Plan.
type PolicySpec struct {
	// Kind is "strict" or "weighted".
	Kind   string   `json:"kind"`
	Queues []string `json:"queues"`
	// Weights, for a weighted policy, are the Queues' weights in order.
	Weights []int `json:"weights,omitempty"`
}

// dispatch converts the spec to the Driver's policy.
func (p PolicySpec) dispatch() node.DispatchPolicy {
	if p.Kind == "weighted" {
		qs := make([]node.QueueWeight, len(p.Queues))
		for i, q := range p.Queues {
			w := 1
			if i < len(p.Weights) {
				w = p.Weights[i]
			}
			qs[i] = node.QueueWeight{Queue: q, Weight: w}
		}
		return node.Weighted(qs...)
	}
	return node.Strict(p.Queues...)
}
