package parquetfmt

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
)

// AppendRecord adds rec's rows to c, after its c.Rows rows: the
// maintainer's rewrite reads Arrow records and writes them as the
// consumer writes its segments. Byte values point into rec's buffers:
// the caller keeps rec until c is written. rec must have the layout's
// schema.
func (c *Columns) AppendRecord(rec arrow.RecordBatch) error {
	if int(rec.NumCols()) != len(c.Cols) {
		return fmt.Errorf("record has %d columns, the row group %d", rec.NumCols(), len(c.Cols))
	}
	base, n := c.Rows, int(rec.NumRows())
	c.Rows += n
	for i, arr := range rec.Columns() {
		col := &c.Cols[i]
		col.Defs = append(col.Defs, make([]int16, n)...)
		defs := col.Defs[base:]
		for r := 0; r < n; r++ {
			if arr.IsValid(r) {
				defs[r] = 1
			}
		}
		if err := col.appendArray(arr); err != nil {
			return fmt.Errorf("column %s: %w", rec.Schema().Field(i).Name, err)
		}
	}
	return nil
}

// appendArray appends the present values of arr.
func (col *Column) appendArray(arr arrow.Array) error {
	valid := arr.IsValid
	switch a := arr.(type) {
	case *array.String:
		data, offs := a.ValueBytes(), a.ValueOffsets()
		for r := 0; r < a.Len(); r++ {
			if valid(r) {
				b, e := offs[r]-offs[0], offs[r+1]-offs[0]
				col.Bytes = append(col.Bytes, present(data[b:e:e]))
			}
		}
	case *array.Binary:
		for r := 0; r < a.Len(); r++ {
			if valid(r) {
				col.Bytes = append(col.Bytes, present(a.Value(r)))
			}
		}
	case *array.FixedSizeBinary:
		for r := 0; r < a.Len(); r++ {
			if valid(r) {
				col.Fixed = append(col.Fixed, a.Value(r))
			}
		}
	case *extensions.UUIDArray:
		st := a.Storage().(*array.FixedSizeBinary)
		for r := 0; r < a.Len(); r++ {
			if valid(r) {
				col.Fixed = append(col.Fixed, st.Value(r))
			}
		}
	case *array.Int32:
		col.Int32 = appendValid(col.Int32, a.Int32Values(), valid)
	case *array.Date32:
		for r, v := range a.Date32Values() {
			if valid(r) {
				col.Int32 = append(col.Int32, int32(v))
			}
		}
	case *array.Int64:
		col.Int64 = appendValid(col.Int64, a.Int64Values(), valid)
	case *array.Time64:
		for r, v := range a.Time64Values() {
			if valid(r) {
				col.Int64 = append(col.Int64, int64(v))
			}
		}
	case *array.Timestamp:
		for r, v := range a.TimestampValues() {
			if valid(r) {
				col.Int64 = append(col.Int64, int64(v))
			}
		}
	case *array.Float32:
		col.Float32 = appendValid(col.Float32, a.Float32Values(), valid)
	case *array.Float64:
		col.Float64 = appendValid(col.Float64, a.Float64Values(), valid)
	case *array.Boolean:
		for r := 0; r < a.Len(); r++ {
			if valid(r) {
				col.Bool = append(col.Bool, a.Value(r))
			}
		}
	case *array.Decimal128:
		if len(col.Fixed) > 0 {
			return fmt.Errorf("decimal values after sealed ones")
		}
		for r := 0; r < a.Len(); r++ {
			if valid(r) {
				v := a.Value(r)
				col.AppendDecimal(v.HighBits(), v.LowBits())
			}
		}
	default:
		return fmt.Errorf("no Parquet column values for Arrow type %s", arr.DataType())
	}
	return nil
}

// empty is the present empty value. An array whose values are all
// empty may have no value buffer, so its values slice to nil, and
// arrow-go's byte-array statistics take a nil value for "no value yet":
// a row group that also holds "b" from another record would then say
// its minimum is "b" while it holds "", and a reader pruning by the
// bounds would skip the file for the filter col = "".
var empty = []byte{}

// present returns b, or empty for nil.
func present(b []byte) []byte {
	if b == nil {
		return empty
	}
	return b
}

func appendValid[T any](dst, src []T, valid func(int) bool) []T {
	for r, v := range src {
		if valid(r) {
			dst = append(dst, v)
		}
	}
	return dst
}
