package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary serve as the rss scenario's child process,
// as the bwbench binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == rssChildArg {
		if err := rssChild(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "rss child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// tinySizes make every scenario finish in seconds.
var tinySizes = sizes{
	Insert: 300, Drain: 300, DrainSQLite: 300, RiverSQLiteCap: 100,
	SteadyWarmup: 200 * time.Millisecond, SteadyWindow: 500 * time.Millisecond,
	LatencyJobs: 10, LatencyRate: 100, HintsOffPoll: 20 * time.Millisecond,
	RSS: []int{200}, Noisy: noisySizes{Flood: 300, SmallKeys: 5, PerKey: 4},
}

// TestSmoke runs every scenario once at a tiny size for every system on
// each target (PostgreSQL only when BACKWAVE_TEST_POSTGRES_URL is set) and
// checks the Markdown table and the JSON file: one row per scenario, target
// and system that has it, each with a rate, and latency percentiles on the
// latency rows. It measures nothing; it proves the harness runs.
func TestSmoke(t *testing.T) {
	targets := []string{tgSQLite}
	if os.Getenv("BACKWAVE_TEST_POSTGRES_URL") != "" {
		targets = append(targets, tgPostgres)
	} else {
		t.Log("BACKWAVE_TEST_POSTGRES_URL is unset: the postgres target is skipped")
	}
	for _, tg := range targets {
		t.Run(tg, func(t *testing.T) {
			t.Parallel()
			cfg := config{
				mode: "local", scenarios: allScenarios, targets: []string{tg},
				systems: []string{sysBackWave, sysRiver, sysRaw}, runs: 1,
				pgURL: os.Getenv("BACKWAVE_TEST_POSTGRES_URL"), sqliteDir: t.TempDir(), sqliteSync: "normal",
				jsonPath: filepath.Join(t.TempDir(), "out.json"), sizes: tinySizes, overrides: map[string]string{},
			}
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if err := run(ctx, cfg, &stdout, &stderr); err != nil {
				t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
			}
			var rep struct {
				Manifest map[string]any   `json:"manifest"`
				Results  []map[string]any `json:"results"`
			}
			b, err := os.ReadFile(cfg.jsonPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatalf("results are not JSON: %v", err)
			}
			for _, key := range []string{"mode", "commit", "go_version", "cpu_model", "cpu_count", "os", "load_average_before"} {
				if _, ok := rep.Manifest[key]; !ok {
					t.Errorf("manifest lacks %q", key)
				}
			}
			if got := rep.Manifest["mode"]; got != "local" {
				t.Errorf("manifest mode = %v, want local", got)
			}
			want := expectedRows(tg)
			var got []string
			for _, r := range rep.Results {
				var keys []string
				for k := range r {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				if wantKeys := []string{"jobs_per_sec", "max", "min", "p50_ms", "p90_ms", "p99_ms", "runs", "scenario", "settings", "system", "target"}; !slices.Equal(keys, wantKeys) {
					t.Errorf("result keys = %v, want %v", keys, wantKeys)
				}
				row := fmt.Sprintf("%s/%s/%s", r["scenario"], r["target"], r["system"])
				got = append(got, row)
				if rate, _ := r["jobs_per_sec"].(float64); rate <= 0 {
					t.Errorf("%s: jobs_per_sec = %v, want > 0", row, r["jobs_per_sec"])
				}
				if strings.HasPrefix(r["scenario"].(string), "latency") {
					if p50, _ := r["p50_ms"].(float64); p50 <= 0 {
						t.Errorf("%s: p50_ms = %v, want > 0", row, r["p50_ms"])
					}
				}
				if !strings.Contains(stdout.String(), fmt.Sprintf("| %s | %s | %s |", r["scenario"], r["target"], r["system"])) {
					t.Errorf("%s: no row in the Markdown table", row)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("rows:\n got %v\nwant %v", got, want)
			}
			if !strings.Contains(stdout.String(), "BackWave/River") {
				t.Errorf("no ratio table in:\n%s", stdout.String())
			}
		})
	}
}

// expectedRows lists the rows a full run on one target has, in order.
func expectedRows(tg string) []string {
	var out []string
	for _, sc := range allScenarios {
		for _, s := range []system{backwaveSystem{}, riverSystem{}, rawSystem{}} {
			if sc == scRSS {
				if s.name() == sysBackWave {
					for range tinySizes.RSS {
						out = append(out, sc+"/"+tg+"/"+s.name())
					}
				}
				continue
			}
			if measured(s, sc, tg) {
				out = append(out, sc+"/"+tg+"/"+s.name())
				if sc == scNoisy {
					out = append(out, sc+"/"+tg+"/"+noisyPlain{}.name())
				}
			}
		}
	}
	return out
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, c config)
	}{
		{name: "defaults", args: nil, check: func(t *testing.T, c config) {
			if c.runs != 3 || c.sizes.Drain != fullSizes.Drain || len(c.scenarios) != len(allScenarios) || c.mode != "local" {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{name: "quick", args: []string{"-quick"}, check: func(t *testing.T, c config) {
			if c.runs != 2 || c.sizes.Drain != quickSizes.Drain {
				t.Errorf("quick: runs %d drain %d", c.runs, c.sizes.Drain)
			}
		}},
		{name: "sizes and alias", args: []string{"-quick", "-drain", "7", "-rss", "5,6", "-scenarios", "latency,insert", "-mode", "official"}, check: func(t *testing.T, c config) {
			if c.sizes.Drain != 7 || !slices.Equal(c.sizes.RSS, []int{5, 6}) || c.mode != "official" {
				t.Errorf("sizes: %+v", c.sizes)
			}
			if want := []string{scInsert, scLatencyOn, scLatencyOff}; !slices.Equal(c.scenarios, want) {
				t.Errorf("scenarios = %v, want %v", c.scenarios, want)
			}
		}},
		{name: "override", args: []string{"-backwave", "pumps=2"}, check: func(t *testing.T, c config) {
			if c.overrides[sysBackWave] != "pumps=2" {
				t.Errorf("overrides = %v", c.overrides)
			}
		}},
		{name: "bad mode", args: []string{"-mode", "published"}, wantErr: "want local or official"},
		{name: "bad scenario", args: []string{"-scenarios", "burst"}, wantErr: `unknown scenario "burst"`},
		{name: "bad target", args: []string{"-targets", "mysql"}, wantErr: `unknown target "mysql"`},
		{name: "negative size", args: []string{"-drain", "-1"}, wantErr: "-drain -1 is negative"},
		{name: "bad rss", args: []string{"-rss", "10,x"}, wantErr: "want positive integers"},
		{name: "no runs", args: []string{"-runs", "-2"}, wantErr: "want at least 1"},
		{name: "bad synchronous", args: []string{"-sqlite-synchronous", "off"}, wantErr: "want full or normal"},
		{name: "stray argument", args: []string{"extra"}, wantErr: "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := parseFlags(tc.args, io.Discard)
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tc.check != nil:
				tc.check(t, c)
			}
		})
	}
	if _, err := parseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: err = %v, want flag.ErrHelp", err)
	}
}

func TestKnobsOverride(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec, wantErr, want string
	}{
		{spec: "", want: "pumps=1 poll=1s"},
		{spec: "pumps=4, poll=20ms", want: "pumps=4 poll=20ms"},
		{spec: "workers=2", wantErr: `unknown setting "workers"`},
		{spec: "pumps=many", wantErr: `want a value like "1"`},
		{spec: "poll", wantErr: "want name=value"},
	} {
		k := newKnobs("pumps", "1", "poll", "1s")
		err := k.override(tc.spec)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("override(%q) = %v, want error containing %q", tc.spec, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("override(%q) = %v", tc.spec, err)
		case k.String() != tc.want:
			t.Errorf("override(%q) gives %q, want %q", tc.spec, k.String(), tc.want)
		}
	}
}

func TestAggregate(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, ms(i))
	}
	r := aggregate(scLatencyOn, tgSQLite, sysBackWave, []sample{
		{jobs: 100, elapsed: time.Second, latencies: lat[:50], settings: "a=1"},
		{jobs: 300, elapsed: time.Second, latencies: lat[50:]},
		{jobs: 200, elapsed: time.Second},
	})
	want := result{Scenario: scLatencyOn, Target: tgSQLite, System: sysBackWave, JobsPerSec: 200, Min: 100, Max: 300,
		P50ms: 50, P90ms: 90, P99ms: 99, Settings: "a=1", Runs: 3}
	if r != want {
		t.Errorf("aggregate = %+v\nwant %+v", r, want)
	}
	if got := aggregate(scDrain, tgSQLite, sysRaw, []sample{{jobs: 10, elapsed: time.Second}, {jobs: 30, elapsed: time.Second}}); got.JobsPerSec != 20 {
		t.Errorf("median of two runs = %v, want 20", got.JobsPerSec)
	}
}
