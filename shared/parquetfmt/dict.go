package parquetfmt

import (
	"bytes"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// dictEncoder is the part of arrow-go's dictionary encoder that takes a
// dictionary made by the caller (the encoder type itself is internal to
// arrow-go; pqarrow uses the same methods for Arrow dictionary arrays).
type dictEncoder interface {
	PutDictionary(arrow.Array) error
	NumEntries() int
}

// dictScratch is what writeDictBytes reuses from chunk to chunk.
type dictScratch struct {
	ids   map[string]int32
	idx   []int32
	valid []byte
}

// writeDictBytes writes a byte-array chunk with a dictionary built here
// rather than by arrow-go: one Go map lookup a value instead of arrow-go's
// memo table (an xxh3 hash and a probe a value), and statistics from the
// distinct values rather than a comparison a value. It returns false,
// having written nothing, when the dictionary would pass limit bytes (as
// arrow-go counts them: each value and 4 bytes): the caller then writes
// the chunk plain, as arrow-go would have fallen back to.
func (w *ColumnWriter) writeDictBytes(cw *file.ByteArrayColumnChunkWriter, col *Column, rows int, limit int) (bool, error) {
	enc, ok := cw.CurrentEncoder().(dictEncoder)
	if !ok || enc.NumEntries() != 0 {
		return false, nil
	}
	d := &w.dict
	if d.ids == nil {
		d.ids = make(map[string]int32)
	}
	clear(d.ids)
	d.idx = append(d.idx[:0], make([]int32, rows)...)
	d.valid = append(d.valid[:0], make([]byte, bitutil.BytesForBits(int64(rows)))...)
	var (
		data     []byte
		offsets  = []int32{0}
		size     int
		min, max []byte
		j        int
	)
	for r, def := range col.Defs {
		if def == 0 {
			continue
		}
		v := col.Bytes[j]
		j++
		id, seen := d.ids[string(v)]
		if !seen {
			id = int32(len(offsets) - 1)
			if size += len(v) + 4; size >= limit {
				return false, nil
			}
			d.ids[string(v)] = id
			data = append(data, v...)
			offsets = append(offsets, int32(len(data)))
			if id == 0 || bytes.Compare(v, min) < 0 {
				min = v
			}
			if id == 0 || bytes.Compare(v, max) > 0 {
				max = v
			}
		}
		d.idx[r] = id
		bitutil.SetBit(d.valid, r)
	}
	dict := array.NewBinaryData(array.NewData(arrow.BinaryTypes.Binary, len(offsets)-1,
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offsets)), memory.NewBufferBytes(data)}, nil, 0, 0))
	defer dict.Release()
	if err := enc.PutDictionary(dict); err != nil {
		return false, err
	}
	if enc.NumEntries() != dict.Len() {
		return false, fmt.Errorf("dictionary of %d values became %d entries", dict.Len(), enc.NumEntries())
	}
	// The statistics a plain write would have gathered, from the
	// distinct values: the same counts, min and max.
	if st := cw.PageStatistics(); st != nil {
		present := int64(len(col.Bytes))
		st.IncNulls(int64(rows) - present)
		st.IncNumValues(present)
		if present > 0 {
			st.(*metadata.ByteArrayStatistics).SetMinMax(parquet.ByteArray(min), parquet.ByteArray(max))
		}
	}
	indices := array.NewInt32Data(array.NewData(arrow.PrimitiveTypes.Int32, rows,
		[]*memory.Buffer{memory.NewBufferBytes(d.valid), memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(d.idx))}, nil, rows-len(col.Bytes), 0))
	defer indices.Release()
	return true, cw.WriteDictIndices(indices, col.Defs, nil)
}
