package mcp

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
)

// TestSchemaTextNamesTheCaps: the tool schemas that say where a count stops
// name the cap the code applies, so the text cannot drift from it.
func TestSchemaTextNamesTheCaps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v     any
		field string
		cap   int
	}{
		{countByStateResult{}, "ReadyAtLeast", store.DefaultBacklogCountCap},
		{queueView{}, "ReadyAtLeast", store.DefaultBacklogCountCap},
		{bulkResult{}, "AtLeast", backwave.MaxPreviewJobs},
	} {
		ty := reflect.TypeOf(tc.v)
		f, ok := ty.FieldByName(tc.field)
		if !ok {
			t.Fatalf("%s has no field %s", ty, tc.field)
		}
		text := f.Tag.Get("jsonschema")
		if want := commas(tc.cap); !strings.Contains(text, want) {
			t.Errorf("%s.%s's schema text %q does not name the cap %s", ty, tc.field, text, want)
		}
	}
}

// commas writes n with thousands separators: 100000 is "100,000".
func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
