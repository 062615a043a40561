package consumer

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/consumer/decode/decodetest"
)

// TestAppendRoundTripParquet decodes documents with every type, appends
// the rows to a RecordBuilder, writes a zstd Parquet file, reads it back and
// compares every value.
func TestAppendRoundTripParquet(t *testing.T) {
	rows, as := decodeAllTypes(t, decodetest.AllTypesSchema(), decodetest.AllTypesMapping())
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := array.NewRecordBuilder(mem, as)
	defer b.Release()
	for _, row := range rows {
		AppendRow(b, row)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	for i, col := range rec.Columns() {
		if err := checkArray(col); err != nil {
			t.Fatalf("column %d: %v", i, err)
		}
	}

	path := filepath.Join(t.TempDir(), "rows.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(as, f,
		parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithAllocator(mem)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	rf, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	tbl, err := pqarrow.ReadTable(context.Background(), rf, parquet.NewReaderProperties(mem), pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if int(tbl.NumRows()) != len(rows) || int(tbl.NumCols()) != as.NumFields() {
		t.Fatalf("read %d rows %d columns", tbl.NumRows(), tbl.NumCols())
	}
	for c := 0; c < int(tbl.NumCols()); c++ {
		name := tbl.Schema().Field(c).Name
		if name != as.Field(c).Name {
			t.Fatalf("column %d is %s, want %s", c, name, as.Field(c).Name)
		}
		var got []any
		for _, chunk := range tbl.Column(c).Data().Chunks() {
			for i := 0; i < chunk.Len(); i++ {
				got = append(got, arrowValue(t, chunk, i))
			}
		}
		for r, row := range rows {
			if !reflect.DeepEqual(got[r], row[c]) {
				t.Errorf("row %d column %s: read %#v, wrote %#v", r, name, got[r], row[c])
			}
		}
	}
	// Spot checks that the decoded values are the intended ones, so that
	// the round trip is not comparing two wrong things.
	if rows[0][11] != decodetest.BigDecimal("-12345678901234567890123456781234567890") ||
		!reflect.DeepEqual(rows[0][20], []any{[]any{"click", arrow.Timestamp(1764505496123000), decode.MapValue{Keys: []any{"x", "y"}, Values: []any{decimal128.FromI64(125), nil}}}, []any{"view", nil, nil}, nil}) ||
		rows[0][21] != int64(3) || rows[2][15] != nil || rows[3][5] != false {
		t.Errorf("decoded values are off: %#v", rows[0])
	}
}

// checkArray checks the lengths and offsets of an array and its children.
func checkArray(arr arrow.Array) error {
	if v, ok := arr.(interface{ ValidateFull() error }); ok {
		if err := v.ValidateFull(); err != nil {
			return err
		}
	}
	switch a := arr.(type) {
	case *array.Struct:
		for f := 0; f < a.NumField(); f++ {
			if a.Field(f).Len() != a.Len() {
				return fmt.Errorf("struct field %d has %d values, struct %d", f, a.Field(f).Len(), a.Len())
			}
			if err := checkArray(a.Field(f)); err != nil {
				return fmt.Errorf("struct field %d: %w", f, err)
			}
		}
	case *array.Map:
		if a.Keys().Len() != a.Items().Len() {
			return fmt.Errorf("map has %d keys and %d items", a.Keys().Len(), a.Items().Len())
		}
		if err := checkArray(a.Keys()); err != nil {
			return err
		}
		return checkArray(a.Items())
	case *array.List:
		if a.Len() > 0 {
			if _, end := a.ValueOffsets(a.Len() - 1); int(end) > a.ListValues().Len() {
				return fmt.Errorf("list offsets end at %d beyond %d values", end, a.ListValues().Len())
			}
		}
		return checkArray(a.ListValues())
	}
	return nil
}

// arrowValue reads element i of arr back into the Row representation.
func arrowValue(t *testing.T, arr arrow.Array, i int) any {
	t.Helper()
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.String:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.Date32:
		return a.Value(i)
	case *array.Time64:
		return a.Value(i)
	case *array.Timestamp:
		return a.Value(i)
	case *array.Decimal128:
		return a.Value(i)
	case *array.Binary:
		return append([]byte{}, a.Value(i)...)
	case *array.FixedSizeBinary:
		return append([]byte{}, a.Value(i)...)
	case *extensions.UUIDArray:
		return a.Value(i)
	case *array.Struct:
		out := make([]any, a.NumField())
		for f := range out {
			out[f] = arrowValue(t, a.Field(f), i)
		}
		return out
	case *array.Map:
		start, end := a.ValueOffsets(i)
		m := decode.MapValue{Keys: []any{}, Values: []any{}}
		for j := int(start); j < int(end); j++ {
			m.Keys = append(m.Keys, arrowValue(t, a.Keys(), j))
			m.Values = append(m.Values, arrowValue(t, a.Items(), j))
		}
		return m
	case *array.List:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := int(start); j < int(end); j++ {
			out = append(out, arrowValue(t, a.ListValues(), j))
		}
		return out
	}
	t.Fatalf("unexpected array type %T (%s)", arr, arr.DataType())
	return nil
}

func TestAppendRowPanicsOnMismatch(t *testing.T) {
	as, err := ArrowSchema(decodetest.OneColumn(iceberg.PrimitiveTypes.Int32, false))
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for name, row := range map[string]Row{"short row": {}, "wrong type": {"x"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: AppendRow did not panic", name)
				}
			}()
			AppendRow(b, row)
		}()
	}
}

// BenchmarkDecodeAppend measures decode and AppendRow together, the part of
// the decode -> Parquet path that this file owns.
func BenchmarkDecodeAppend(b *testing.B) {
	s, m := decodetest.NarrowSchema()
	d, err := decode.New(s, m)
	if err != nil {
		b.Fatal(err)
	}
	as, err := ArrowSchema(s)
	if err != nil {
		b.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer rb.Release()
	payload := []byte(decodetest.NarrowEvent)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		row, err := d.DecodeInto(nil, payload)
		if err != nil {
			b.Fatal(err)
		}
		AppendRow(rb, row)
		if n++; n == 8192 {
			rb.NewRecordBatch().Release()
			n = 0
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkDecodeToParquet measures the whole decode -> Arrow -> Parquet
// (zstd) path for the narrow event, in batches of 8192 rows, as an estimate
// for the segment writer, whose own settings may differ.
func BenchmarkDecodeToParquet(b *testing.B) {
	s, m := decodetest.NarrowSchema()
	d, err := decode.New(s, m)
	if err != nil {
		b.Fatal(err)
	}
	as, err := ArrowSchema(s)
	if err != nil {
		b.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(as, io.Discard,
		parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)),
		pqarrow.NewArrowWriterProperties())
	if err != nil {
		b.Fatal(err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer rb.Release()
	payload := []byte(decodetest.NarrowEvent)
	flush := func() {
		rec := rb.NewRecordBatch()
		defer rec.Release()
		if err := w.WriteBuffered(rec); err != nil {
			b.Fatal(err)
		}
	}
	n := 0
	for b.Loop() {
		row, err := d.DecodeInto(nil, payload)
		if err != nil {
			b.Fatal(err)
		}
		AppendRow(rb, row)
		if n++; n == 8192 {
			flush()
			n = 0
		}
	}
	flush()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// AppendRow appends one decoded row to b, whose schema must be
// ArrowSchema of the schema the row was decoded with, every value in turn,
// nulls included: the plain use of arrow-go that the tests hold RowBuilder
// and rowBuffer to, and the naive path of the benchmarks. Every Row a
// Decoder returns can be appended. A row that does not match the builder (a
// wrong length or a value of the wrong Go type, which only hand-built rows
// can have) is a programming error and panics.
func AppendRow(b *array.RecordBuilder, row Row) {
	fields := b.Fields()
	if len(row) != len(fields) {
		panic(fmt.Sprintf("consumer: AppendRow: row has %d values, builder has %d fields", len(row), len(fields)))
	}
	for i, fb := range fields {
		appendValue(fb, row[i])
	}
}
