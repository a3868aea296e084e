package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// knobs are one system's tuning for one scenario: named integer and duration
// settings, printed in a stable order with the row. The -backwave, -river
// and -raw flags override them by name ("pumps=4,poll=20ms").
type knobs struct {
	order []string
	vals  map[string]string
}

func newKnobs(kv ...string) *knobs {
	k := &knobs{vals: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		k.set(kv[i], kv[i+1])
	}
	return k
}

func (k *knobs) set(name, v string) {
	if _, ok := k.vals[name]; !ok {
		k.order = append(k.order, name)
	}
	k.vals[name] = v
}

// override applies "name=value,…"; only known names may be set.
func (k *knobs) override(spec string) error {
	for f := range strings.SplitSeq(spec, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		name, v, ok := strings.Cut(f, "=")
		if !ok {
			return fmt.Errorf("setting %q: want name=value", f)
		}
		old, known := k.vals[name]
		if !known {
			return fmt.Errorf("unknown setting %q (known: %s)", name, strings.Join(k.order, ", "))
		}
		if kindOf(old) != kindOf(v) {
			return fmt.Errorf("setting %s=%q: want a value like %q", name, v, old)
		}
		k.vals[name] = v
	}
	return nil
}

func (k *knobs) int(name string) int {
	n, err := strconv.Atoi(k.vals[name])
	if err != nil {
		panic(fmt.Sprintf("bwbench: setting %s=%q is not an integer", name, k.vals[name]))
	}
	return n
}

func (k *knobs) dur(name string) time.Duration {
	d, err := time.ParseDuration(k.vals[name])
	if err != nil {
		panic(fmt.Sprintf("bwbench: setting %s=%q is not a duration", name, k.vals[name]))
	}
	return d
}

func (k *knobs) str(name string) string { return k.vals[name] }

func (k *knobs) String() string {
	parts := make([]string, len(k.order))
	for i, name := range k.order {
		parts[i] = name + "=" + k.vals[name]
	}
	return strings.Join(parts, " ")
}

// kindOf classifies a setting's value: integer, duration, or text.
func kindOf(v string) string {
	if _, err := strconv.Atoi(v); err == nil {
		return "int"
	}
	if _, err := time.ParseDuration(v); err == nil {
		return "duration"
	}
	return "text"
}

// forScenario is the settings that shape the scenario, as printed with its
// row: the insert scenario prints only the insert path (and what else the
// insert writes), the others leave out the bulk insert, which the steady
// scenario's producer alone uses while the clock runs.
func (k *knobs) forScenario(sc string) string {
	var parts []string
	for _, name := range k.order {
		insertKnob := strings.HasPrefix(name, "insert")
		switch {
		case sc == scInsert && !insertKnob && name != "history":
			continue
		case sc != scInsert && sc != scSteady && insertKnob:
			continue
		}
		parts = append(parts, name+"="+k.vals[name])
	}
	return strings.Join(parts, " ")
}
