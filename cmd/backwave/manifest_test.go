package main

import (
	"testing"

	"github.com/backwave/backwave/backwavetest"
)

// The demo's job types are held to their committed Job Manifest.
func TestJobManifest(t *testing.T) {
	t.Parallel()
	h, err := demoHandlers()
	if err != nil {
		t.Fatal(err)
	}
	backwavetest.CheckManifest(t, h, "testdata/job_manifest.txt")
}
