package main

import (
	"testing"
	"time"

	"github.com/backwave/backwave/cmd/backwave-torture/audit"
)

func TestScheduleIsAFunctionOfTheSeed(t *testing.T) {
	for _, target := range []string{targetPostgres, targetSQLite, targetMariaDB, targetGalera} {
		a, b := plan(42, target, 25*time.Minute), plan(42, target, 25*time.Minute)
		if a.String() != b.String() || len(a.Events) != len(b.Events) {
			t.Fatalf("%s: one seed, two schedules:\n%s\n%s", target, a, b)
		}
		if c := plan(43, target, 25*time.Minute); c.String() == a.String() {
			t.Fatalf("%s: seeds 42 and 43 drew the same schedule", target)
		}
	}
}

// Every fault kind of a target fires at least once in a long run's
// schedule and in a --smoke run's (the cells inject the span faults).
func TestScheduleHasEveryFault(t *testing.T) {
	want := map[string][]string{
		targetPostgres: {faultKill9, faultFreeze, faultTerminate, faultRestart, faultCrash, faultListenKill, faultKillInTx},
		targetSQLite:   {faultKill9, faultFreeze, faultKillInTx},
		targetMariaDB:  {faultKill9, faultFreeze, faultKillConn, faultMariaRestart, faultCrash, faultKillInTx},
		targetGalera:   {faultKill9, faultFreeze, faultKillConn, faultNodeCrash, faultKillInTx},
		// postgres-ha: a smoke run fails over once too.
		targetPostgresHA: {faultKill9, faultFreeze, faultTerminate, faultListenKill, faultKillInTx, faultFailover},
	}
	cells := map[string][]string{
		targetPostgres:   {faultPool, faultIdleInTx, faultRR, faultBurst, faultHighLoad, faultRepeatedKills, "pg_backend_kill", "calm", "ceiling_probe"},
		targetSQLite:     {faultSnapshot, faultBurst, faultHighLoad, faultRepeatedKills, "calm", "ceiling_probe"},
		targetMariaDB:    {faultPool, faultIdleInTx, faultRR, faultBurst, faultHighLoad, faultRepeatedKills, cellKillConn, "calm", "ceiling_probe"},
		targetGalera:     {faultPool, faultIdleInTx, faultRR, faultBurst, faultHighLoad, faultRepeatedKills, cellKillConn, "calm", "ceiling_probe"},
		targetPostgresHA: {faultIdleInTx, faultRR, faultBurst, faultHighLoad, faultRepeatedKills, "pg_backend_kill", "calm", "ceiling_probe"},
	}
	smoke := options{target: targetPostgres, smoke: true}
	if err := smoke.resolve(1, true); err != nil {
		t.Fatal(err)
	}
	for _, chaos := range []time.Duration{25 * time.Minute, smoke.dur - smoke.dur/4} {
		for target, kinds := range want {
			checkSchedule(t, plan(1, target, chaos), target, append(kinds, cells[target]...))
		}
	}
}

func checkSchedule(t *testing.T, s schedule, target string, kinds []string) {
	t.Helper()
	{
		seen := map[string]bool{}
		for _, e := range s.Events {
			seen[e.Kind] = true
			if e.At < 0 || e.At >= s.Chaos {
				t.Errorf("%s: event %s at %s outside the chaos span", target, e.Kind, e.At)
			}
		}
		for _, c := range s.Cells {
			seen[c.Name] = true
		}
		for _, k := range kinds {
			if !seen[k] {
				t.Errorf("%s, chaos %s: no %s in the schedule", target, s.Chaos, k)
			}
		}
		if s.Cells[0].Name != "calm" || s.Cells[1].Name != "ceiling_probe" {
			t.Errorf("%s: the calm baseline and the ceiling probe come first, got %s, %s", target, s.Cells[0].Name, s.Cells[1].Name)
		}
	}
}

func TestSummaryLine(t *testing.T) {
	if got := summary(nil); got != "0 violations" {
		t.Fatalf("got %q", got)
	}
	vs := []audit.Violation{{Audit: audit.Lost}, {Audit: audit.Fence}, {Audit: audit.Lost}}
	if got, want := summary(vs), "3 violations (lost 2, fence 1)"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestFlagsRefuseTheSharedInstanceAndBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--target", "postgres", "--for", "1m", "--pg-url", "postgres://postgres@127.0.0.1:5432/postgres"},
		{"--target", "postgres", "--for", "1m", "--pg-url", "postgres://postgres@127.0.0.1/postgres"},
		{"--target", "mysql", "--short"},
		{"--target", "mariadb", "--short", "--mariadb-port", "3306"},
		{"--target", "galera", "--short", "--mariadb-port", "3304"},
		{"--target", "sqlite"},
		{"--target", "sqlite", "--short", "--for", "10m"},
		{"--target", "sqlite", "--short", "--plant", "nonsense"},
		{"--target", "sqlite", "--for", "1m", "--workers", "-1"},
		{"--target", "sqlite", "--smoke", "--short"},
		{"--target", "sqlite", "--smoke", "--for", "1m"},
	} {
		if code := coordinatorMain(args); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestSmokeIsAOneMinuteRun(t *testing.T) {
	o := options{target: targetSQLite, smoke: true}
	if err := o.resolve(7, true); err != nil {
		t.Fatal(err)
	}
	if o.dur != time.Minute || o.burst != 500 || o.liveness != 2*time.Minute {
		t.Errorf("--smoke: run %s, burst %d, liveness %s; want 1m, 500, 2m", o.dur, o.burst, o.liveness)
	}
	o = options{target: targetPostgres, smoke: true, burst: 50, liveness: time.Minute}
	if err := o.resolve(7, true); err != nil {
		t.Fatal(err)
	}
	if o.burst != 50 || o.liveness != time.Minute {
		t.Errorf("--smoke overrode --burst 50 / --liveness 1m: got %d, %s", o.burst, o.liveness)
	}
}

// The postgres-ha target fails over at least ten times in a 30-minute
// run and at least twice in a --short one, besides its other faults.
func TestScheduleFailovers(t *testing.T) {
	kinds := []string{faultKill9, faultFreeze, faultTerminate, faultListenKill, faultKillInTx, faultFailover,
		faultIdleInTx, faultRR, faultBurst, faultHighLoad, faultRepeatedKills, "pg_backend_kill", "calm", "ceiling_probe"}
	for _, tc := range []struct {
		dur  time.Duration
		want int
	}{{30 * time.Minute, 10}, {4 * time.Minute, 2}} {
		chaos := tc.dur - min(tc.dur/4, 3*time.Minute)
		for seed := uint64(1); seed <= 20; seed++ {
			s := plan(seed, targetPostgresHA, chaos)
			n := 0
			for _, e := range s.Events {
				switch e.Kind {
				case faultFailover:
					n++
				case faultRestart, faultCrash:
					t.Fatalf("postgres-ha schedules %s: its server is Patroni's to restart", e.Kind)
				}
			}
			if n < tc.want {
				t.Fatalf("seed %d, %s run: %d failovers, want at least %d", seed, tc.dur, n, tc.want)
			}
			if seed == 1 && tc.dur == 30*time.Minute {
				checkSchedule(t, s, targetPostgresHA, kinds)
			}
		}
	}
}

func TestResolveHA(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    options
		ok   bool
	}{
		{"ha", options{target: targetPostgresHA, short: true, pgPort: 5499}, true},
		{"async", options{target: targetPostgresHA, short: true, pgPort: 5499, async: true}, true},
		{"async on postgres", options{target: targetPostgres, short: true, pgPort: 5499, async: true}, false},
		{"ha with a url", options{target: targetPostgresHA, short: true, pgPort: 5499, pgURL: "postgres://x@127.0.0.1:5600/db"}, false},
		{"ha ports over the shared pooler's", options{target: targetPostgresHA, short: true, pgPort: 6232}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := tc.o
			err := o.resolve(1, true)
			if (err == nil) != tc.ok {
				t.Fatalf("resolve: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
