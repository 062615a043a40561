package parquetfmt

import (
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Columns holds one row group of a flat table as the Parquet column
// chunk writers take it: for each column its present values, packed
// densely in a slice of the column's physical type, and one definition
// level a row (1 present, 0 null). A sparse column costs one level per
// row and nothing per null beyond it: no Arrow array, no validity bitmap.
//
// Byte-array and fixed-length values are slices that point into memory
// the caller keeps alive until the row group is written (a compaction's
// Arrow records), or into the column's own blocks (AppendBytesCopy,
// AppendFixedCopy: a segment's encoded rows, which are row-major).
// Columns are reused across row groups (GetColumns, PutColumns), so a
// busy segment's next row group grows no slice.
type Columns struct {
	Cols []Column
	// Rows is the row count: every column's Defs has this length.
	Rows int
}

// Column is one leaf column's values and definition levels. Only the
// slice of the column's physical type is used.
type Column struct {
	Defs    []int16
	Int32   []int32
	Int64   []int64
	Float32 []float32
	Float64 []float64
	Bool    []bool
	Bytes   []parquet.ByteArray
	Fixed   []parquet.FixedLenByteArray
	// fixed holds the bytes of values converted for the file (decimals,
	// big-endian), which Fixed points into once the row group is complete.
	fixed []byte
	// width is the byte width of a fixed-length value; 0 otherwise.
	width int
	// blocks hold the copies of the column's byte values (copyValue), in
	// row order; cur is the block being filled.
	blocks [][]byte
	cur    int
}

// A column's copied values go to blocks of its own, the first minBlock
// bytes and each next one twice the last, up to maxBlock (a value longer
// than that gets a block of its size): a one-row file of a wide table
// costs a few KB a column, a row group of 16,384 rows a few blocks.
// PutColumns keeps some of them per Columns (SetKeptBlockBytes).
const (
	minBlock = 4 << 10
	maxBlock = 256 << 10
)

// keptBlockBytes is how many bytes of blocks a pooled Columns keeps for
// the next row group (SetKeptBlockBytes).
var keptBlockBytes atomic.Int64

func init() { keptBlockBytes.Store(DefaultKeptBlockBytes) }

// DefaultKeptBlockBytes is what a pooled Columns keeps of its blocks
// unless SetKeptBlockBytes says otherwise.
const DefaultKeptBlockBytes = 8 << 20

// SetKeptBlockBytes sets how many bytes of blocks each pooled Columns
// keeps for the next row group: the pool holds up to four, outside the
// caller's memory budget, so a process with a small budget keeps less
// (the consumer keeps a sixty-fourth of its budget, at most the default).
func SetKeptBlockBytes(n int64) { keptBlockBytes.Store(max(n, 0)) }

// AppendBytesCopy adds a copy of v as the column's next byte-array value.
//
// Why copy: a flat table's segment buffers its rows row-major (a wide
// row's values of 200 columns side by side), and the chunk writer reads
// one column at a time. Pointing into the rows, every value of a wide
// row group's column is a cache miss (the next one is a row, 1.5 KB,
// away), paid again by the dictionary's hashing and by the plain page's
// copy. The copy reads the rows in order and lays each column's values
// out one after the other.
func (col *Column) AppendBytesCopy(v []byte) {
	col.Bytes = append(col.Bytes, col.copyValue(v))
}

// AppendFixedCopy adds a copy of v as the column's next fixed-length
// value (its width, unchecked here: the writer checks it).
func (col *Column) AppendFixedCopy(v []byte) {
	col.Fixed = append(col.Fixed, col.copyValue(v))
}

// copyValue copies v to the end of the column's blocks and returns the
// copy, capped at its length. Blocks never move once allocated, so the
// copies stay valid until PutColumns.
func (col *Column) copyValue(v []byte) []byte {
	for col.cur < len(col.blocks) {
		b := col.blocks[col.cur]
		if cap(b)-len(b) >= len(v) {
			n := len(b)
			b = append(b, v...)
			col.blocks[col.cur] = b
			return b[n:len(b):len(b)]
		}
		col.cur++
	}
	size := minBlock
	if k := len(col.blocks); k > 0 {
		size = min(2*cap(col.blocks[k-1]), maxBlock)
	}
	b := append(make([]byte, 0, max(size, len(v))), v...)
	col.blocks = append(col.blocks, b)
	col.cur = len(col.blocks) - 1
	return b[:len(v):len(v)]
}

// freeColumns keeps the Columns of the last row groups written, with
// their slices' room, for the next. Not a sync.Pool: the writer allocates
// enough for a collection to pass between two row groups, and a pool
// emptied by it made every row group grow its slices again (a tenth of
// a wide row group's cost). Four are as many as a rotation writes at
// once (the consumer's finishParallel): with two, half of a rotation's
// segments allocated their slices and blocks afresh, and copying the
// byte values cost a rotation of 64 wide files more than it saved. Each
// holds a row group's values and levels and its blocks up to
// SetKeptBlockBytes (a few MB for a wide one), outside the memory budget.
var freeColumns = make(chan *Columns, 4)

// GetColumns returns empty Columns for rows rows of layout, every
// definition level 0 (null), reusing those of an earlier row group.
func GetColumns(layout *Layout, rows int) *Columns {
	var c *Columns
	select {
	case c = <-freeColumns:
	default:
		c = new(Columns)
	}
	n := len(layout.leaves)
	if cap(c.Cols) < n {
		c.Cols = append(c.Cols[:cap(c.Cols)], make([]Column, n-cap(c.Cols))...)
	}
	c.Cols = c.Cols[:n]
	c.Rows = rows
	for i := range c.Cols {
		col := &c.Cols[i]
		col.width = layout.leaves[i].width
		if cap(col.Defs) < rows {
			col.Defs = make([]int16, rows)
		} else {
			col.Defs = col.Defs[:rows]
			clear(col.Defs)
		}
	}
	return c
}

// PutColumns empties c and keeps it for the next GetColumns. Nothing may
// refer to c's values after.
func PutColumns(c *Columns) {
	c.empty()
	select {
	case freeColumns <- c:
	default:
	}
}

// empty drops c's values and keeps the room of its slices. It goes
// through every column c has room for, not only the current layout's: a
// narrower layout hides the columns of a wider one that used c before,
// and their blocks count too.
func (c *Columns) empty() {
	kept, keep := 0, int(keptBlockBytes.Load())
	c.Cols = c.Cols[:cap(c.Cols)]
	for i := range c.Cols {
		col := &c.Cols[i]
		clear(col.Bytes) // no reference left into the caller's memory
		clear(col.Fixed)
		col.Int32, col.Int64, col.Float32, col.Float64 = col.Int32[:0], col.Int64[:0], col.Float32[:0], col.Float64[:0]
		col.Bool, col.Bytes, col.Fixed, col.fixed = col.Bool[:0], col.Bytes[:0], col.Fixed[:0], col.fixed[:0]
		// The blocks are kept for the next row group up to keep bytes in
		// all: a wide row group's copies are tens of MB, which the pool
		// would otherwise hold outside the memory budget.
		for k := range col.blocks {
			if kept += cap(col.blocks[k]); kept > keep {
				clear(col.blocks[k:])
				col.blocks = col.blocks[:k]
				break
			}
			col.blocks[k] = col.blocks[k][:0]
		}
		col.cur = 0
	}
	c.Rows = 0
}

// AppendDecimal adds a decimal128 value (hi, lo: its two's complement
// halves) as the file stores it: big-endian, in the column's fixed
// width (the precision's minimal byte count), as pqarrow does.
func (col *Column) AppendDecimal(hi int64, lo uint64) {
	var be [16]byte
	for i := 0; i < 8; i++ {
		be[i] = byte(uint64(hi) >> (56 - 8*i))
		be[8+i] = byte(lo >> (56 - 8*i))
	}
	col.fixed = append(col.fixed, be[16-col.width:]...)
}

// sealFixed points Fixed at the converted values of fixed, now that no
// append moves them any more.
func (col *Column) sealFixed() {
	if len(col.fixed) == 0 || col.width == 0 {
		return
	}
	for off := 0; off+col.width <= len(col.fixed); off += col.width {
		col.Fixed = append(col.Fixed, col.fixed[off:off+col.width:off+col.width])
	}
}

// present is the number of values of col, of whatever type.
func (col *Column) present(t parquet.Type) int {
	switch t {
	case parquet.Types.Int32:
		return len(col.Int32)
	case parquet.Types.Int64:
		return len(col.Int64)
	case parquet.Types.Float:
		return len(col.Float32)
	case parquet.Types.Double:
		return len(col.Float64)
	case parquet.Types.Boolean:
		return len(col.Bool)
	case parquet.Types.ByteArray:
		return len(col.Bytes)
	case parquet.Types.FixedLenByteArray:
		return len(col.Fixed)
	}
	return 0
}

// leaf is what Columns and the writer need to know of a column.
type leaf struct {
	path     string
	typ      parquet.Type
	width    int  // fixed-length byte width
	required bool // no definition levels: every row has a value
}

func leavesOf(sc *schema.Schema) ([]leaf, error) {
	out := make([]leaf, sc.NumColumns())
	for i := range out {
		c := sc.Column(i)
		if c.MaxRepetitionLevel() != 0 || c.MaxDefinitionLevel() > 1 || len(c.ColumnPath()) != 1 {
			return nil, fmt.Errorf("column %s is nested: only flat columns are written from Columns", c.Path())
		}
		out[i] = leaf{path: c.Path(), typ: c.PhysicalType(), required: c.MaxDefinitionLevel() == 0}
		if c.PhysicalType() == parquet.Types.FixedLenByteArray {
			out[i].width = c.TypeLength()
		}
	}
	return out, nil
}
