package sqlite

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// jsonRows builds the one text argument of a set-based statement: a JSON
// array of rows, each a JSON array of fields, read in SQL with
// jsonb_each(?) and value ->> n. Integers go as JSON numbers, Tags (valid
// UTF-8 by job.Tag.Validate) as JSON strings, and arbitrary bytes (Failure
// Detail, Job Output) as hex digits that the statement turns back with
// unhex(), so no byte is ever re-encoded on the way. Pulling fields out of
// every row costs; a batch that needs one value per job uses jsonObject.
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

// jsonObject builds the one text argument of a set-based statement that
// reads its batch keyed by job id: a JSON object whose keys are the ids
// and whose values are what the statement needs of each job, read in SQL
// with json_each(?) as CAST(key AS INTEGER) and value. A scalar value needs
// no parsing per row, which is what makes this shape cheaper than
// jsonRows. Keys must be unique; the caller sees to it.
type jsonObject struct {
	b []byte
	n int
}

func (o *jsonObject) key(id int64) {
	if o.n == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, '"')
	o.b = strconv.AppendInt(o.b, id, 10)
	o.b = append(o.b, '"', ':')
}

// int adds id → v.
func (o *jsonObject) int(id, v int64) {
	o.key(id)
	o.b = strconv.AppendInt(o.b, v, 10)
}

// pair adds id → [a, b], read as value ->> 0 and value ->> 1.
func (o *jsonObject) pair(id, a, b int64) {
	o.key(id)
	o.b = append(o.b, '[')
	o.b = strconv.AppendInt(o.b, a, 10)
	o.b = append(o.b, ',')
	o.b = strconv.AppendInt(o.b, b, 10)
	o.b = append(o.b, ']')
}

// hex adds id → b as a string of hex digits, read back with unhex(value).
func (o *jsonObject) hex(id int64, b []byte) {
	o.key(id)
	o.b = append(o.b, '"')
	o.b = hex.AppendEncode(o.b, b)
	o.b = append(o.b, '"')
}

// len returns the number of keys.
func (o *jsonObject) len() int { return o.n }

// full reports whether the object has grown past maxBatchText, the point
// where a caller carrying large values (payloads, outputs) writes it out
// and starts another, so a batch of large blobs never sits in memory as
// one text several times its size.
func (o *jsonObject) full() bool { return len(o.b) >= maxBatchText }

// reset empties the object for reuse.
func (o *jsonObject) reset() { o.b, o.n = o.b[:0], 0 }

// maxBatchText bounds the text of a jsonObject of large values.
const maxBatchText = 4 << 20

// String returns the JSON text: "{}" when there is no key.
func (o *jsonObject) String() string {
	if o.n == 0 {
		return "{}"
	}
	return string(o.b) + "}"
}

// countDeltas gathers the changes a statement that flips count_flip made
// to the Monitor's counts (migrations/0005_count_flip.sql), by Queue and
// state, for Store.addCounts.
type countDeltas []countDelta

type countDelta struct {
	queue string
	state int64
	n     int64
}

// add adds n to the count of Queue queue in state; queue is copied only
// when new to d.
func (d *countDeltas) add(queue []byte, state, n int64) {
	for i := range *d {
		if c := &(*d)[i]; c.state == state && c.queue == string(queue) {
			c.n += n
			return
		}
	}
	*d = append(*d, countDelta{string(queue), state, n})
}

// move counts n jobs of Queue queue leaving state from for state to.
func (d *countDeltas) move(queue []byte, from, to, n int64) {
	d.add(queue, from, -n)
	d.add(queue, to, n)
}
