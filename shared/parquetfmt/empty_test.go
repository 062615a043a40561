package parquetfmt

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// TestEmptyValuesWithoutBufferKeepTheMinimum writes, into one row group,
// a record whose string and binary columns are all "" with no value
// buffer (as a reader may hand them back) and a record holding "b": the
// chunk's minimum must be "", or a reader pruning by bounds would skip
// the file for the filter col = "".
func TestEmptyValuesWithoutBufferKeepTheMinimum(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	offsets := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0, 0, 0}))
	emptyStr := array.NewStringData(array.NewData(arrow.BinaryTypes.String, 2, []*memory.Buffer{nil, offsets, nil}, nil, 0, 0))
	emptyBin := array.NewBinaryData(array.NewData(arrow.BinaryTypes.Binary, 2, []*memory.Buffer{nil, offsets, nil}, nil, 0, 0))
	if emptyStr.ValueBytes() != nil {
		t.Fatal("the test's array has a value buffer; it no longer covers a nil one")
	}
	first := array.NewRecordBatch(sc, []arrow.Array{emptyStr, emptyBin}, 2)

	sb := array.NewStringBuilder(memory.DefaultAllocator)
	sb.Append("b")
	bb := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	bb.Append([]byte("b"))
	second := array.NewRecordBatch(sc, []arrow.Array{sb.NewArray(), bb.NewArray()}, 1)

	layout, err := NewLayout(sc)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := NewColumnWriter(&buf, layout, WriterProperties(memory.DefaultAllocator))
	if err != nil {
		t.Fatal(err)
	}
	c := GetColumns(layout, 0)
	for _, rec := range []arrow.RecordBatch{first, second} {
		if err := c.AppendRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteRowGroup(c); err != nil {
		t.Fatal(err)
	}
	PutColumns(c)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	rg := r.MetaData().RowGroup(0)
	for i := 0; i < 2; i++ {
		cc, err := rg.ColumnChunk(i)
		if err != nil {
			t.Fatal(err)
		}
		st, err := cc.Statistics()
		if err != nil {
			t.Fatal(err)
		}
		bs, ok := st.(*metadata.ByteArrayStatistics)
		if !ok || !bs.HasMinMax() {
			t.Fatalf("column %d: no min/max statistics", i)
		}
		if string(bs.Min()) != "" || string(bs.Max()) != "b" {
			t.Errorf("column %d: min %q max %q, want \"\" and \"b\"", i, bs.Min(), bs.Max())
		}
	}
}
