package backwave_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
)

type manifestBase struct {
	Tenant string `json:"tenant"`
	Note   string `json:"note,omitempty"`
}

type manifestArgs struct {
	manifestBase
	Note    int               `json:"note"` // wins over the promoted note
	To      string            `json:"to"`
	CC      []string          `json:"cc,omitempty"`
	At      time.Time         `json:"at"`
	Blob    []byte            `json:"blob,omitempty"`
	Limit   *int              `json:"limit"`
	Meta    map[string]string `json:"meta,omitempty"`
	Count   int64             `json:"count,string"`
	Skipped string            `json:"-"`
	NoTag   bool
	_       int // unexported: absent
}

func (manifestArgs) WireName() string { return "manifest.args" }
func (manifestArgs) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Queue: "mail", MaxAttempts: 4, Tags: []backwave.Tag{backwave.Label("x"), backwave.Keyed("team", "a")}}
}

type manifestBad struct {
	Done chan int `json:"done"`
}

func (manifestBad) WireName() string { return "manifest.bad" }

// The Job Manifest as JSON Schema (manifest.go) describes a payload as
// encoding/json writes it, with the args type's defaults as annotations.
func TestJobManifestSchema(t *testing.T) {
	t.Parallel()
	h := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[manifestArgs]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	b, err := h.JobManifestSchema()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema string   `json:"$schema"`
		Req    []string `json:"required"`
		Props  struct {
			WireName struct {
				Enum []string `json:"enum"`
			} `json:"wire_name"`
		} `json:"properties"`
		Defs  map[string]map[string]any `json:"$defs"`
		OneOf []map[string]any          `json:"oneOf"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	def := doc.Defs["manifest.args"]
	props, _ := def["properties"].(map[string]any)
	got := func(field string) string {
		b, _ := json.Marshal(props[field])
		return string(b)
	}
	for field, want := range map[string]string{
		"tenant": `{"type":"string"}`,
		"note":   `{"type":"integer"}`,
		"to":     `{"type":"string"}`,
		"cc":     `{"items":{"type":"string"},"type":["array","null"]}`,
		"at":     `{"format":"date-time","type":"string"}`,
		"blob":   `{"contentEncoding":"base64","type":["string","null"]}`,
		"limit":  `{"type":["integer","null"]}`,
		"meta":   `{"additionalProperties":{"type":"string"},"type":["object","null"]}`,
		"count":  `{"type":"string"}`,
		"NoTag":  `{"type":"boolean"}`,
	} {
		if g := got(field); g != want {
			t.Errorf("field %s: schema %s, want %s", field, g, want)
		}
	}
	if len(props) != 10 {
		t.Errorf("%d properties, want 10 (no Skipped, no internal): %v", len(props), props)
	}
	req, _ := json.Marshal(def["required"])
	if want := `["NoTag","at","count","limit","note","tenant","to"]`; string(req) != want {
		t.Errorf("required %s, want %s", req, want)
	}
	ann, _ := json.Marshal([]any{def["additionalProperties"], def["x-backwave-wire-name"], def["x-backwave-queue"],
		def["x-backwave-max-attempts"], def["x-backwave-labels"], def["x-backwave-keyed-tags"]})
	if want := `[false,"manifest.args","mail",4,["x"],{"team":["a"]}]`; string(ann) != want {
		t.Errorf("annotations %s, want %s", ann, want)
	}
	if doc.Schema != "https://json-schema.org/draft/2020-12/schema" || strings.Join(doc.Req, ",") != "wire_name,payload" ||
		strings.Join(doc.Props.WireName.Enum, ",") != "manifest.args" || len(doc.OneOf) != 1 {
		t.Errorf("the document's frame is wrong:\n%s", b)
	}

	bad := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(bad, func(context.Context, *backwave.Job[manifestBad]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := bad.JobManifestSchema(); err == nil || !strings.Contains(err.Error(), "field Done") {
		t.Fatalf("a channel field answered %v, want an error naming the field", err)
	}
}
