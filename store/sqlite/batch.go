package sqlite

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// jsonRows builds the one text argument of a set-based statement: a JSON
// array of rows, each a JSON array of fields, read in SQL with
// json_each(?) and value ->> n. Integers go as JSON numbers, Tags (valid
// UTF-8 by job.Tag.Validate) as JSON strings, and arbitrary bytes (Failure
// Detail, Job Output) as hex digits that the statement turns back with
// unhex(), so no byte is ever re-encoded on the way.
type jsonRows struct {
	b     []byte
	n     int  // rows begun
	field bool // the current row has a field already
}

// row begins a new row.
func (r *jsonRows) row() {
	if r.n == 0 {
		r.b = append(r.b, "[["...)
	} else {
		r.b = append(r.b, "],["...)
	}
	r.n++
	r.field = false
}

func (r *jsonRows) sep() {
	if r.field {
		r.b = append(r.b, ',')
	}
	r.field = true
}

// int adds an integer field.
func (r *jsonRows) int(v int64) {
	r.sep()
	r.b = strconv.AppendInt(r.b, v, 10)
}

// intOrNull adds v, or null when v is nil; v is an int64 or nil.
func (r *jsonRows) intOrNull(v any) {
	switch v := v.(type) {
	case nil:
		r.null()
	case int64:
		r.int(v)
	default:
		panic(fmt.Sprintf("sqlite: jsonRows.intOrNull(%T)", v))
	}
}

// null adds a null field.
func (r *jsonRows) null() {
	r.sep()
	r.b = append(r.b, "null"...)
}

// str adds a string field that is valid UTF-8.
func (r *jsonRows) str(s string) {
	r.sep()
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("sqlite: encode %q: %v", s, err))
	}
	r.b = append(r.b, b...)
}

// hex adds b as a string of hex digits, read back with unhex().
func (r *jsonRows) hex(b []byte) {
	r.sep()
	r.b = append(r.b, '"')
	r.b = hex.AppendEncode(r.b, b)
	r.b = append(r.b, '"')
}

// len returns the number of rows.
func (r *jsonRows) len() int { return r.n }

// String returns the JSON text: "[]" when there is no row.
func (r *jsonRows) String() string {
	if r.n == 0 {
		return "[]"
	}
	return string(r.b) + "]]"
}
