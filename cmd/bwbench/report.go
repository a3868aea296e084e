package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// result is one row: one scenario, target and system over all its runs.
type result struct {
	Scenario   string  `json:"scenario"`
	Target     string  `json:"target"`
	System     string  `json:"system"`
	JobsPerSec float64 `json:"jobs_per_sec"`
	P50ms      float64 `json:"p50_ms"`
	P90ms      float64 `json:"p90_ms"`
	P99ms      float64 `json:"p99_ms"`
	Settings   string  `json:"settings"`
	Runs       int     `json:"runs"`
	Min        float64 `json:"min"`
	Max        float64 `json:"max"`
	// baseline is the paired default drain of a drain variant (limit,
	// history off), measured alternately with it.
	baseline float64
}

// aggregate reduces a row's runs: the median rate with its min and max, and
// latency percentiles over every run's samples together.
func aggregate(sc, tg, sys string, runs []sample) result {
	r := result{Scenario: sc, Target: tg, System: sys, Runs: len(runs)}
	if len(runs) == 0 {
		return r
	}
	r.Settings = runs[0].settings
	rates := make([]float64, len(runs))
	var lat []time.Duration
	for i, s := range runs {
		rates[i] = s.rate()
		lat = append(lat, s.latencies...)
	}
	slices.Sort(rates)
	r.JobsPerSec = round1(median(rates))
	r.Min, r.Max = round1(rates[0]), round1(rates[len(rates)-1])
	if len(lat) > 0 {
		slices.Sort(lat)
		r.P50ms = ms(percentile(lat, 50))
		r.P90ms = ms(percentile(lat, 90))
		r.P99ms = ms(percentile(lat, 99))
	}
	return r
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(0, min(rank-1, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Millisecond)*100) / 100 }

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// report is the whole output.
type report struct {
	Manifest manifest `json:"manifest"`
	Results  []result `json:"results"`
}

func (r report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// writeMarkdown prints the manifest, the table and the ratios.
func (r report) writeMarkdown(w io.Writer, cfg config) error {
	var b strings.Builder
	m := r.Manifest
	fmt.Fprintf(&b, "## bwbench — %s run, %s\n\n", m.Mode, m.Started)
	if m.Mode == "local" {
		b.WriteString("Local numbers: this machine, indicative only, never published.\n\n")
	}
	b.WriteString(m.markdown())
	fmt.Fprintf(&b, "\nSizes: %s. Runs per row: %d, alternating between systems; a row is the median run (min–max).\n\n", m.Sizes, cfg.runs)
	b.WriteString("| scenario | target | system | jobs/s | min–max | p50 ms | p90 ms | p99 ms | runs | settings |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, x := range r.Results {
		lat := func(v float64) string {
			if x.P50ms == 0 && x.P99ms == 0 {
				return ""
			}
			return fmt.Sprintf("%.2f", v)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.0f | %.0f–%.0f | %s | %s | %s | %d | %s |\n",
			x.Scenario, x.Target, x.System, x.JobsPerSec, x.Min, x.Max,
			lat(x.P50ms), lat(x.P90ms), lat(x.P99ms), x.Runs, strings.ReplaceAll(x.Settings, "|", "/"))
	}
	if ratios := r.ratios(); len(ratios) > 0 {
		b.WriteString("\n| scenario | target | BackWave/River | BackWave/raw |\n|---|---|---:|---:|\n")
		for _, x := range ratios {
			b.WriteString(x + "\n")
		}
	}
	if peers := r.peerRatios(); len(peers) > 0 {
		b.WriteString("\n| scenario | target | BackWave/graphile-worker | BackWave/pg-boss | BackWave/asynq (Redis, nothing on disk: a ceiling) |\n|---|---|---:|---:|---:|\n")
		for _, x := range peers {
			b.WriteString(x + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// peerRatios lines up BackWave against the peers of the same scenario:
// graphile-worker and pg-boss on the same PostgreSQL, asynq on Redis
// against BackWave on either target (asynq has no hints-on latency row, so
// that ratio is empty).
func (r report) peerRatios() []string {
	find := func(sc, tg, sys string) *result {
		for i := range r.Results {
			x := &r.Results[i]
			if x.Scenario == sc && x.Target == tg && x.System == sys {
				return x
			}
		}
		return nil
	}
	var out []string
	for _, x := range r.Results {
		if x.System != sysBackWave {
			continue
		}
		switch x.Scenario {
		case scInsert, scDrain, scSteady, scLatencyOn, scLatencyOff:
		default:
			continue
		}
		ratio := func(other *result) string {
			switch {
			case other == nil:
				return "—"
			case x.P50ms > 0 && other.P50ms > 0:
				return fmt.Sprintf("p50 %.2f× (%.2f vs %.2f ms)", x.P50ms/other.P50ms, x.P50ms, other.P50ms)
			case other.JobsPerSec > 0:
				return fmt.Sprintf("%.2f×", x.JobsPerSec/other.JobsPerSec)
			}
			return "—"
		}
		gw, pb := find(x.Scenario, x.Target, sysGraphile), find(x.Scenario, x.Target, sysPgBoss)
		aq := find(x.Scenario, tgRedis, sysAsynq)
		if gw == nil && pb == nil && aq == nil {
			continue
		}
		out = append(out, fmt.Sprintf("| %s | %s | %s | %s | %s |", x.Scenario, x.Target, ratio(gw), ratio(pb), ratio(aq)))
	}
	return out
}

// ratios lines up BackWave against River and raw, per scenario and target:
// throughput ratios (above 1: BackWave is faster), and for latency rows
// BackWave's p50 over River's (below 1: BackWave is faster).
func (r report) ratios() []string {
	find := func(sc, tg, sys string) *result {
		for i := range r.Results {
			x := &r.Results[i]
			if x.Scenario == sc && x.Target == tg && x.System == sys {
				return x
			}
		}
		return nil
	}
	var out []string
	for _, x := range r.Results {
		if x.System != sysBackWave || x.Scenario == scRSS {
			continue
		}
		ratio := func(other *result) string {
			switch {
			case other == nil:
				return "—"
			case x.P50ms > 0 && other.P50ms > 0:
				return fmt.Sprintf("p50 %.2f× (%.2f vs %.2f ms)", x.P50ms/other.P50ms, x.P50ms, other.P50ms)
			case other.JobsPerSec > 0:
				return fmt.Sprintf("%.2f×", x.JobsPerSec/other.JobsPerSec)
			}
			return "—"
		}
		river, raw := find(x.Scenario, x.Target, sysRiver), find(x.Scenario, x.Target, sysRaw)
		if x.Scenario == scNoisy {
			if x.baseline > 0 {
				out = append(out, fmt.Sprintf("| %s | %s | — (fair claim/plain drain, paired: %.2f×) | — |", x.Scenario, x.Target, x.JobsPerSec/x.baseline))
			}
			continue
		}
		if v, ok := pairedVariants[x.Scenario]; ok {
			river, raw = nil, find(scDrain, x.Target, sysRaw)
			if v.river {
				river = find(scDrain, x.Target, sysRiver)
			}
			if x.baseline > 0 {
				out = append(out, fmt.Sprintf("| %s | %s | %s (%s drain, paired: %.2f×) | %s |", x.Scenario, x.Target, ratio(river), v.ratio, x.JobsPerSec/x.baseline, ratio(raw)))
				continue
			}
		}
		if river == nil && raw == nil {
			continue
		}
		out = append(out, fmt.Sprintf("| %s | %s | %s | %s |", x.Scenario, x.Target, ratio(river), ratio(raw)))
	}
	return out
}
