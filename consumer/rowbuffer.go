package consumer

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/parquetfmt"
)

// colKind is how rowBuffer encodes a column's values.
type colKind uint8

const (
	kindString colKind = iota + 1
	kindBinary
	kindFixed
	kindInt32
	kindInt64
	kindFloat32
	kindFloat64
	kindBool
	kindDate32
	kindTime64
	kindTimestamp
	kindDecimal
	kindUUID
)

// flatKinds returns the encoding of each column of schema, and false when
// a column is nested (struct, list, map): such tables buffer their rows
// in Arrow builders instead.
func flatKinds(schema *arrow.Schema) ([]colKind, bool) {
	kinds := make([]colKind, schema.NumFields())
	for i, f := range schema.Fields() {
		switch f.Type.(type) {
		case *arrow.StringType:
			kinds[i] = kindString
		case *arrow.BinaryType:
			kinds[i] = kindBinary
		case *arrow.FixedSizeBinaryType:
			kinds[i] = kindFixed
		case *arrow.Int32Type:
			kinds[i] = kindInt32
		case *arrow.Int64Type:
			kinds[i] = kindInt64
		case *arrow.Float32Type:
			kinds[i] = kindFloat32
		case *arrow.Float64Type:
			kinds[i] = kindFloat64
		case *arrow.BooleanType:
			kinds[i] = kindBool
		case *arrow.Date32Type:
			kinds[i] = kindDate32
		case *arrow.Time64Type:
			kinds[i] = kindTime64
		case *arrow.TimestampType:
			kinds[i] = kindTimestamp
		case *arrow.Decimal128Type:
			kinds[i] = kindDecimal
		case *extensions.UUIDType:
			kinds[i] = kindUUID
		default:
			return nil, false
		}
	}
	return kinds, true
}

// Chunks of a rowBuffer start small, so that thousands of open segments
// holding a few rows each cost little, and double up to maxChunk.
const (
	minChunk = 4 << 10
	maxChunk = 256 << 10
)

// rowBuffer holds a segment's rows of a flat table until they become a
// row group, encoded compactly: for each non-null value its column number
// and its bytes, a row ending with a zero. Sparse wide rows take about a
// third of their Arrow size (Arrow keeps 8 bytes for every null number
// and grows its buffers by doubling), so a memory budget holds three
// times the rows and the row groups are that much larger; and an open
// segment has no builders until it is written. The chunks come from the
// segment's allocator, so the memory budget counts them.
type rowBuffer struct {
	mem    memory.Allocator
	kinds  []colKind
	chunks [][]byte // allocated from mem, full length
	used   []int    // bytes used in each chunk
	next   int      // size of the next chunk
	held   int64    // bytes of all chunks
	rows   int
}

// encodeBufs holds the buffers rows are encoded in before they are copied
// into a chunk, shared by all segments rather than one per open segment.
var encodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func newRowBuffer(mem memory.Allocator, kinds []colKind) *rowBuffer {
	return &rowBuffer{mem: mem, kinds: kinds, next: minChunk}
}

// append encodes one decoded row. A value of the wrong Go type for its
// column is a programming error and panics.
func (r *rowBuffer) append(row Row) {
	if len(row) != len(r.kinds) {
		panic(fmt.Sprintf("consumer: rowBuffer: row has %d values, schema has %d columns", len(row), len(r.kinds)))
	}
	// The row is encoded straight into the free end of the last chunk;
	// only a row that does not fit there goes through a shared buffer
	// and into a new chunk (put): one copy of its bytes less per row.
	var b []byte
	var bp *[]byte
	last := len(r.chunks) - 1
	if last >= 0 {
		b = r.chunks[last][r.used[last]:r.used[last]:len(r.chunks[last])]
	} else {
		bp = encodeBufs.Get().(*[]byte)
		defer encodeBufs.Put(bp)
		b = (*bp)[:0]
	}
	for i, v := range row {
		if v == nil {
			continue
		}
		b = binary.AppendUvarint(b, uint64(i)+1)
		switch r.kinds[i] {
		case kindString:
			s := v.(string)
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		case kindBinary:
			x := v.([]byte)
			b = binary.AppendUvarint(b, uint64(len(x)))
			b = append(b, x...)
		case kindFixed:
			x := v.([]byte)
			b = binary.AppendUvarint(b, uint64(len(x)))
			b = append(b, x...)
		case kindInt32:
			b = binary.AppendVarint(b, int64(v.(int32)))
		case kindInt64:
			b = binary.AppendVarint(b, v.(int64))
		case kindFloat32:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v.(float32)))
		case kindFloat64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.(float64)))
		case kindBool:
			if v.(bool) {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case kindDate32:
			b = binary.AppendVarint(b, int64(v.(arrow.Date32)))
		case kindTime64:
			b = binary.AppendVarint(b, int64(v.(arrow.Time64)))
		case kindTimestamp:
			b = binary.AppendVarint(b, int64(v.(arrow.Timestamp)))
		case kindDecimal:
			n := v.(decimal128.Num)
			b = binary.LittleEndian.AppendUint64(b, uint64(n.HighBits()))
			b = binary.LittleEndian.AppendUint64(b, n.LowBits())
		case kindUUID:
			u := v.(uuid.UUID)
			b = append(b, u[:]...)
		}
	}
	b = append(b, 0)
	r.rows++
	if bp != nil {
		*bp = b
		r.put(b)
		return
	}
	if c := r.chunks[last]; len(b) <= len(c)-r.used[last] && &c[r.used[last]] == &b[0] {
		r.used[last] += len(b) // encoded in place
		return
	}
	r.put(b) // outgrew the chunk: b is a copy made by append
}

// put copies one encoded row into the last chunk, or a new one.
func (r *rowBuffer) put(b []byte) {
	if n := len(r.chunks); n > 0 && len(r.chunks[n-1])-r.used[n-1] >= len(b) {
		r.used[n-1] += copy(r.chunks[n-1][r.used[n-1]:], b)
		return
	}
	size := max(r.next, len(b))
	r.next = min(2*r.next, maxChunk)
	c := r.mem.Allocate(size)
	r.held += int64(len(c))
	r.chunks = append(r.chunks, c)
	r.used = append(r.used, copy(c, b))
}

// Len is the number of rows buffered.
func (r *rowBuffer) Len() int { return r.rows }

// fill puts the buffered rows into c from row on and returns the row
// after them. c holds copies of the byte values: the buffer may be reset
// before c is written.
func (r *rowBuffer) fill(c *parquetfmt.Columns, row int) int {
	for ci, ch := range r.chunks {
		row = fillEncoded(c, r.kinds, ch[:r.used[ci]], row)
	}
	return row
}

// writeBlocks writes the buffered rows to w as blocks, one a chunk: the
// chunk's length as a uvarint, then its bytes. A row never spans two
// chunks, so each block replays alone (fillEncoded).
func (r *rowBuffer) writeBlocks(w io.Writer) (int64, error) {
	var n int64
	var hdr [binary.MaxVarintLen64]byte
	for ci, c := range r.chunks {
		p := c[:r.used[ci]]
		m, err := w.Write(hdr[:binary.PutUvarint(hdr[:], uint64(len(p)))])
		n += int64(m)
		if err != nil {
			return n, err
		}
		m, err = w.Write(p)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// fillEncoded puts the whole rows encoded in p into c from row on, and
// returns the row after them: per value one definition level and one
// copy into the column's typed slice, byte values into the column's
// blocks (parquetfmt.Column.AppendBytesCopy), so that nothing in c
// points into p once it returns.
func fillEncoded(c *parquetfmt.Columns, kinds []colKind, p []byte, row int) int {
	for len(p) > 0 {
		for {
			col, n := binary.Uvarint(p)
			p = p[n:]
			if col == 0 {
				break
			}
			i := int(col - 1)
			cc := &c.Cols[i]
			cc.Defs[row] = 1
			switch kinds[i] {
			case kindString, kindBinary:
				l, n := binary.Uvarint(p)
				end := n + int(l)
				cc.AppendBytesCopy(p[n:end])
				p = p[end:]
			case kindFixed:
				l, n := binary.Uvarint(p)
				end := n + int(l)
				cc.AppendFixedCopy(p[n:end])
				p = p[end:]
			case kindInt32, kindDate32:
				v, n := binary.Varint(p)
				cc.Int32 = append(cc.Int32, int32(v))
				p = p[n:]
			case kindInt64, kindTime64, kindTimestamp:
				v, n := binary.Varint(p)
				cc.Int64 = append(cc.Int64, v)
				p = p[n:]
			case kindFloat32:
				cc.Float32 = append(cc.Float32, math.Float32frombits(binary.LittleEndian.Uint32(p)))
				p = p[4:]
			case kindFloat64:
				cc.Float64 = append(cc.Float64, math.Float64frombits(binary.LittleEndian.Uint64(p)))
				p = p[8:]
			case kindBool:
				cc.Bool = append(cc.Bool, p[0] == 1)
				p = p[1:]
			case kindDecimal:
				cc.AppendDecimal(int64(binary.LittleEndian.Uint64(p)), binary.LittleEndian.Uint64(p[8:]))
				p = p[16:]
			case kindUUID:
				cc.AppendFixedCopy(p[:16])
				p = p[16:]
			default:
				panic(fmt.Sprintf("consumer: rowBuffer: unknown column kind %d", kinds[i]))
			}
		}
		row++
	}
	return row
}

// reset gives every chunk back; the buffer is empty.
func (r *rowBuffer) reset() {
	for _, c := range r.chunks {
		r.mem.Free(c)
	}
	clear(r.chunks) // no reference left to the freed chunks
	r.chunks, r.used = r.chunks[:0], r.used[:0]
	r.held, r.rows, r.next = 0, 0, minChunk
}
