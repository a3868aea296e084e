package backwave

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// JobManifestSchema returns the Job Manifest of the registered handlers as a
// JSON Schema (draft 2020-12) document, for code in other languages that
// enqueues through the SQL enqueue API (docs/other-languages.md): $defs
// holds, per Wire Name, the schema of the JSON object the handler's args
// type decodes from — its payload — with the args type's defaults as
// annotations (x-backwave-wire-name, x-backwave-queue,
// x-backwave-max-attempts, x-backwave-labels, x-backwave-keyed-tags), and
// the document itself validates one job object of enqueue_many: a
// wire_name that names a registered handler and a payload that fits its
// args type.
//
// A payload schema follows encoding/json: a field's name is its json tag
// or its Go name, a field tagged "-" or unexported is absent, embedded
// structs' fields are promoted, time.Time is a date-time string, []byte a
// base64 string, a pointer, slice or map may be null, and a type with its
// own MarshalJSON (or MarshalText) accepts any value (or any string). It
// is stricter than the decoder on purpose, so a misspelt or forgotten
// field shows up before the job is enqueued: a field without omitempty or
// omitzero is required and no other field is allowed. A type encoding/json
// cannot encode (a channel, a func, a complex number) is an error naming
// the field.
func (w *Handlers) JobManifestSchema() ([]byte, error) {
	regs, err := w.snapshot()
	if err != nil {
		return nil, err
	}
	wires := make([]string, 0, len(regs))
	for wire := range regs {
		wires = append(wires, wire)
	}
	slices.Sort(wires)
	defs := make(map[string]any, len(wires))
	choices := make([]any, 0, len(wires))
	for _, wire := range wires {
		r := regs[wire]
		s, err := schemaOf(r.args, nil)
		if err != nil {
			return nil, fmt.Errorf("backwave: job manifest: wire name %q (%v): %w", wire, r.args, err)
		}
		s["x-backwave-wire-name"] = wire
		s["x-backwave-queue"] = r.queue
		if _, jo, err := describeArgs(zeroOf(r.args)); err == nil {
			if jo.MaxAttempts > 0 {
				s["x-backwave-max-attempts"] = jo.MaxAttempts
			}
			labels, keyed := []string{}, map[string][]string{}
			for _, t := range jo.Tags {
				if t.IsLabel() {
					labels = append(labels, t.Value)
				} else {
					keyed[t.Key] = append(keyed[t.Key], t.Value)
				}
			}
			if len(labels) > 0 {
				s["x-backwave-labels"] = labels
			}
			if len(keyed) > 0 {
				s["x-backwave-keyed-tags"] = keyed
			}
		}
		defs[wire] = s
		choices = append(choices, map[string]any{
			"properties": map[string]any{
				"wire_name": map[string]any{"const": wire},
				"payload":   map[string]any{"$ref": "#/$defs/" + jsonPointerEscape(wire)},
			},
		})
	}
	doc := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"title":       "BackWave Job Manifest",
		"description": "One job of enqueue_many: a registered Wire Name and the payload its handler's args type decodes. $defs holds each Wire Name's payload schema.",
		"type":        "object",
		"required":    []string{"wire_name", "payload"},
		"properties": map[string]any{
			"wire_name": map[string]any{"enum": wires},
		},
		"$defs": defs,
	}
	if len(choices) > 0 {
		doc["oneOf"] = choices
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("backwave: job manifest: %w", err)
	}
	return append(b, '\n'), nil
}

// zeroOf returns the zero args of type t (a fresh value behind a pointer
// type), on which WireName and JobOptions are called.
func zeroOf(t reflect.Type) JobArgs {
	if t.Kind() == reflect.Pointer {
		a, _ := reflect.New(t.Elem()).Interface().(JobArgs)
		return a
	}
	a, _ := reflect.Zero(t).Interface().(JobArgs)
	return a
}

// jsonPointerEscape escapes a $defs key for a JSON Pointer (RFC 6901).
func jsonPointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

var (
	timeType          = reflect.TypeFor[time.Time]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// schemaOf returns the JSON Schema of the JSON encoding/json gives values
// of type t; outer holds the struct types being described, so a recursive
// type describes its recursion as any value.
func schemaOf(t reflect.Type, outer []reflect.Type) (map[string]any, error) {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case t.Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(jsonMarshalerType):
		return map[string]any{"description": fmt.Sprintf("%v has its own JSON encoding", t)}, nil
	case t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType):
		return map[string]any{"type": "string"}, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return map[string]any{"type": "integer", "minimum": 0}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Interface:
		return map[string]any{}, nil
	case reflect.Pointer:
		s, err := schemaOf(t.Elem(), outer)
		return nullable(s), err
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 && !reflect.PointerTo(t.Elem()).Implements(textMarshalerType) {
			return nullable(map[string]any{"type": "string", "contentEncoding": "base64"}), nil
		}
		items, err := schemaOf(t.Elem(), outer)
		if err != nil {
			return nil, err
		}
		s := map[string]any{"type": "array", "items": items}
		if t.Kind() == reflect.Array {
			s["minItems"], s["maxItems"] = t.Len(), t.Len()
			return s, nil
		}
		return nullable(s), nil
	case reflect.Map:
		switch k := t.Key(); {
		case k.Kind() == reflect.String, k.Implements(textMarshalerType):
		case k.Kind() >= reflect.Int && k.Kind() <= reflect.Uintptr:
		default:
			return nil, fmt.Errorf("map key type %v does not encode as JSON", k)
		}
		values, err := schemaOf(t.Elem(), outer)
		if err != nil {
			return nil, err
		}
		return nullable(map[string]any{"type": "object", "additionalProperties": values}), nil
	case reflect.Struct:
		if slices.Contains(outer, t) {
			return map[string]any{"description": fmt.Sprintf("a %v (recursive)", t)}, nil
		}
		return structSchema(t, append(outer, t))
	}
	return nil, fmt.Errorf("type %v does not encode as JSON", t)
}

// nullable lets s also be null, as encoding/json encodes a nil pointer,
// slice or map.
func nullable(s map[string]any) map[string]any {
	if typ, ok := s["type"].(string); ok {
		s["type"] = []string{typ, "null"}
		return s
	}
	if len(s) == 0 {
		return s
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

// structSchema describes a struct as encoding/json encodes it: its fields,
// promoted ones included, by their JSON names.
func structSchema(t reflect.Type, outer []reflect.Type) (map[string]any, error) {
	props := map[string]any{}
	var required []string
	if err := addFields(t, outer, props, &required); err != nil {
		return nil, err
	}
	slices.Sort(required)
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s, nil
}

// addFields adds the fields of struct t to props: its own first, then
// those of its untagged embedded structs, so that a name t gives itself
// wins over a promoted one, as in encoding/json (of two promoted fields of
// one name at one depth, the first is kept).
func addFields(t reflect.Type, outer []reflect.Type, props map[string]any, required *[]string) error {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				embedded = append(embedded, et)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := props[name]; dup {
			continue
		}
		var s map[string]any
		var err error
		if hasOpt(opts, "string") && isScalar(ft) {
			s = map[string]any{"type": "string"}
		} else if s, err = schemaOf(ft, outer); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		props[name] = s
		if !hasOpt(opts, "omitempty") && !hasOpt(opts, "omitzero") {
			*required = append(*required, name)
		}
	}
	for _, et := range embedded {
		if err := addFields(et, outer, props, required); err != nil {
			return err
		}
	}
	return nil
}

// hasOpt reports whether a json tag's options name opt.
func hasOpt(opts, opt string) bool {
	return slices.Contains(strings.Split(opts, ","), opt)
}

// isScalar reports whether the ",string" tag option applies to t.
func isScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	}
	return false
}
