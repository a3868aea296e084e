package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
)

// The conventions every list shares: --limit, checked one way; --json, one
// JSON document with times in RFC 3339 UTC; tables with times in one
// format, with the zone.

// tableTime is how a table writes a time: to the millisecond, with the
// zone's offset.
const tableTime = "2006-01-02 15:04:05.000 -07:00"

// Most Tags a Tag Facet or Tag Suggest returns (the Admin's cap).
const maxTagLimit = 1000

// limitFlag is --limit of a list: at most max rows, def by default.
func limitFlag(what string, def, max int) cli.Flag {
	return &cli.IntFlag{Name: "limit", Value: def, Usage: fmt.Sprintf("the most %s to list (1 to %d)", what, max)}
}

// limitOf returns --limit, refused outside 1..max.
func limitOf(cmd *cli.Command, max int) (int, error) {
	n := cmd.Int("limit")
	if n < 1 || n > max {
		return 0, usagef("--limit %d is not between 1 and %d", n, max)
	}
	return n, nil
}

// jsonFlag is --json of a command that prints.
func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print one JSON document instead of a table (times in RFC 3339, UTC)"}
}

// more says a list was cut at --limit.
func more(cmd *cli.Command, shown, total int) string {
	return fmt.Sprintf("(%d more; raise --limit, now %d)", total-shown, cmd.Int("limit"))
}

// stamp renders a time for a table, in the local zone, "-" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(tableTime)
}

// zoned renders a time for a table in its own zone (a schedule's
// occurrence), "-" for none.
func zoned(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(tableTime)
}

// stampJSON renders a time as RFC 3339 in UTC, "" for none.
func stampJSON(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// Tags on the command line are told apart structurally, never by parsing a
// Label: --label TEXT is a Label whatever it holds, --tag KEY=VALUE a Keyed
// Tag, split at its first "=".

// tagFlags are --label and --tag, with what they do in this command.
func tagFlags(doing string) []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "label", Usage: doing + " this Label, taken as it is (repeatable)"},
		&cli.StringSliceFlag{Name: "tag", Usage: doing + " this Keyed Tag, KEY=VALUE (repeatable)"},
	}
}

// tagsOf returns the --label and --tag values as Tags, each validated.
func tagsOf(cmd *cli.Command) ([]backwave.Tag, error) {
	var out []backwave.Tag
	for _, l := range cmd.StringSlice("label") {
		t := backwave.Label(l)
		if err := t.Validate(); err != nil {
			return nil, usagef("--label %q: %v", l, err)
		}
		out = append(out, t)
	}
	for _, raw := range cmd.StringSlice("tag") {
		k, v, ok := strings.Cut(raw, "=")
		switch {
		case !ok:
			return nil, usagef("--tag %q is not KEY=VALUE (a bare Label is --label %s)", raw, shellQuote(raw))
		case k == "":
			return nil, usagef("--tag %q has an empty key (a Label is --label %s)", raw, shellQuote(raw))
		}
		t := backwave.Keyed(k, v)
		if err := t.Validate(); err != nil {
			return nil, usagef("--tag %q: %v", raw, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// tagText renders a Tag for a table the way the flags name it: a Keyed Tag
// as key=value, a Label as its text, or as label:"text" when the text holds
// an "=" and would read as a Keyed Tag.
func tagText(t backwave.Tag) string {
	if t.IsLabel() && strings.Contains(t.Value, "=") {
		return fmt.Sprintf("label:%q", t.Value)
	}
	return t.String()
}

// tagList renders a job's Tags for a table.
func tagList(tags []backwave.Tag) string {
	out := make([]string, len(tags))
	for i, t := range tags {
		out[i] = tagText(t)
	}
	return strings.Join(out, ", ")
}

// tagView is a Tag in JSON: {"label": …} or {"key": …, "value": …}.
type tagView struct {
	Label string `json:"label,omitempty"`
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
}

func tagViewOf(t backwave.Tag) tagView {
	if t.IsLabel() {
		return tagView{Label: t.Value}
	}
	return tagView{Key: t.Key, Value: t.Value}
}
