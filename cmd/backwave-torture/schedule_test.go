package main

import (
	"testing"
	"time"

	"github.com/backwave/backwave/cmd/backwave-torture/audit"
)

func TestScheduleIsAFunctionOfTheSeed(t *testing.T) {
	for _, target := range []string{targetPostgres, targetSQLite} {
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
// schedule (the cells inject the span faults).
func TestScheduleHasEveryFault(t *testing.T) {
	want := map[string][]string{
		targetPostgres: {faultKill9, faultFreeze, faultTerminate, faultRestart, faultCrash, faultListenKill, faultKillInTx},
		targetSQLite:   {faultKill9, faultFreeze, faultKillInTx},
	}
	cells := map[string][]string{
		targetPostgres: {faultPool, faultIdleInTx, faultRR, faultBurst, faultHighLoad, faultRepeatedKills, "pg_backend_kill", "calm", "ceiling_probe"},
		targetSQLite:   {faultSnapshot, faultBurst, faultHighLoad, faultRepeatedKills, "calm", "ceiling_probe"},
	}
	for target, kinds := range want {
		s := plan(1, target, 25*time.Minute)
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
		for _, k := range append(kinds, cells[target]...) {
			if !seen[k] {
				t.Errorf("%s: no %s in the schedule", target, k)
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
		{"--target", "sqlite"},
		{"--target", "sqlite", "--short", "--for", "10m"},
		{"--target", "sqlite", "--short", "--plant", "nonsense"},
		{"--target", "sqlite", "--for", "1m", "--workers", "-1"},
	} {
		if code := coordinatorMain(args); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
