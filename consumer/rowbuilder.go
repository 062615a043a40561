package consumer

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// RowBuilder buffers decoded rows in Arrow builders until they become a
// record batch (one Parquet row group of a segment).
//
// It fills null columns lazily: a row appends only its non-null values,
// and the nulls a column owes are appended in one AppendNulls call when
// the column next gets a value, or when the batch is built. Wide, sparse
// rows (200 columns of which 40 are set) then cost 40 builder calls
// instead of 200. The record batches are the same as those of a plain
// RecordBuilder given every value, nulls included (the tests check it).
type RowBuilder struct {
	b      *array.RecordBuilder
	fields []array.Builder
	filled []int // rows appended to each field so far, nulls included
	rows   int
	sized  bool // Presize reserved room that no row has used yet
}

// NewRowBuilder returns a RowBuilder for schema, which must be ArrowSchema
// of the schema the rows are decoded with.
func NewRowBuilder(mem memory.Allocator, schema *arrow.Schema) *RowBuilder {
	b := array.NewRecordBuilder(mem, schema)
	return &RowBuilder{b: b, fields: b.Fields(), filled: make([]int, len(b.Fields()))}
}

// Append adds one decoded row. A row that does not match the schema is a
// programming error and panics.
func (rb *RowBuilder) Append(row Row) {
	if len(row) != len(rb.fields) {
		panic(fmt.Sprintf("consumer: RowBuilder: row has %d values, builder has %d fields", len(row), len(rb.fields)))
	}
	for i, v := range row {
		if v == nil {
			continue
		}
		fb := rb.fields[i]
		if gap := rb.rows - rb.filled[i]; gap > 0 {
			fb.AppendNulls(gap)
		}
		appendValue(fb, v)
		rb.filled[i] = rb.rows + 1
	}
	rb.rows++
	rb.sized = false
}

// Len is the number of rows appended since the last batch.
func (rb *RowBuilder) Len() int { return rb.rows }

// NewRecordBatch pads every column with the nulls it still owes and
// returns the rows appended since the last batch; the builder is then
// empty. The caller releases the batch.
func (rb *RowBuilder) NewRecordBatch() arrow.RecordBatch {
	for i, fb := range rb.fields {
		if gap := rb.rows - rb.filled[i]; gap > 0 {
			fb.AppendNulls(gap)
		}
		rb.filled[i] = 0
	}
	rb.rows = 0
	return rb.b.NewRecordBatch()
}

// Presize reserves room for another batch like rec in every column, so a
// busy segment's next batch grows no buffer (each doubling copies what the
// column holds). Only segments that filled a whole batch call it: the
// room is held until the next batch, and an idle segment should not hold
// memory it will not use.
func (rb *RowBuilder) Presize(rec arrow.RecordBatch) {
	n := int(rec.NumRows())
	rb.sized = rb.rows == 0
	for i, fb := range rb.fields {
		fb.Reserve(n)
		switch b := fb.(type) {
		case *array.StringBuilder:
			if col, ok := rec.Column(i).(*array.String); ok {
				b.ReserveData(len(col.ValueBytes()))
			}
		case *array.BinaryBuilder:
			if col, ok := rec.Column(i).(*array.Binary); ok {
				b.ReserveData(len(col.ValueBytes()))
			}
		}
	}
}

// Presized reports whether the builder holds room reserved by Presize and
// no rows.
func (rb *RowBuilder) Presized() bool { return rb.sized }

// Unsize gives back the room Presize reserved, when no row has been
// appended since: building an empty batch resets every builder.
func (rb *RowBuilder) Unsize() {
	if rb.sized && rb.rows == 0 {
		rb.b.NewRecordBatch().Release()
	}
	rb.sized = false
}

// Release frees the builders' memory.
func (rb *RowBuilder) Release() { rb.b.Release() }
