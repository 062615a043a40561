package consumer

import (
	"bytes"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/consumer/decode/decodetest"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/icewal/ingestor/shared/parquetfmt"
)

// TestRowBuilderMatchesAppendRow appends the same rows (every type, nulls
// at the top level and nested, rows where a column is null for several
// rows in a row and at the end of a batch) through AppendRow and through
// the lazily null-filling RowBuilder, over three batches with a presize
// between them, and requires equal record batches and no leaked memory.
func TestRowBuilderMatchesAppendRow(t *testing.T) {
	docs, as := decodeAllTypes(t, decodetest.AllTypesSchema(), decodetest.AllTypesMapping())
	empty := make(Row, len(docs[0])) // every column null
	batches := [][]Row{
		{docs[0], empty, empty, docs[1], docs[2], docs[3], empty},
		{empty, empty, empty},
		{docs[3], docs[0], empty, docs[0]},
	}

	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ref := array.NewRecordBuilder(mem, as)
	defer ref.Release()
	rb := NewRowBuilder(mem, as)
	defer rb.Release()

	for bi, rows := range batches {
		for _, row := range rows {
			AppendRow(ref, row)
			rb.Append(row)
		}
		if rb.Len() != len(rows) {
			t.Fatalf("batch %d: Len %d, want %d", bi, rb.Len(), len(rows))
		}
		want := ref.NewRecordBatch()
		got := rb.NewRecordBatch()
		if !array.RecordEqual(want, got) {
			t.Errorf("batch %d differs:\nAppendRow:  %v\nRowBuilder: %v", bi, want, got)
		}
		for i, col := range got.Columns() {
			if err := checkArray(col); err != nil {
				t.Errorf("batch %d column %d: %v", bi, i, err)
			}
		}
		before := mem.CurrentAlloc()
		rb.Presize(got)
		if !rb.Presized() || mem.CurrentAlloc() <= before {
			t.Fatalf("batch %d: Presize reserved nothing (%d bytes before, %d after)", bi, before, mem.CurrentAlloc())
		}
		want.Release()
		got.Release()
	}
	// An idle segment gives the room back when the memory budget asks.
	rb.Unsize()
	if rb.Presized() || mem.CurrentAlloc() != 0 {
		t.Fatalf("after Unsize: presized %v, %d bytes held, want none", rb.Presized(), mem.CurrentAlloc())
	}
}

// TestRowBufferMatchesAppendRow encodes rows of every flat type (the
// first 15 columns of allTypesSchema: strings, integers, floats, booleans,
// dates, times, timestamps, decimals, binary, fixed, uuid), with nulls and
// extreme values, over several chunks, sets the first part aside in a
// spill file as the memory budget does, and writes the row group a
// segment writes from the spill and the buffer. Read back, the file must
// hold the record batch AppendRow builds from the same rows (the old
// path), in order; the memory counted while buffered is given back.
func TestRowBufferMatchesAppendRow(t *testing.T) {
	full := decodetest.AllTypesSchema()
	flat := iceberg.NewSchema(0, full.Fields()[:15]...)
	mapping := map[string]string{}
	for k, v := range decodetest.AllTypesMapping() {
		if _, ok := flat.FindFieldByName(k); ok {
			mapping[k] = v
		}
	}
	docs, as := decodeAllTypes(t, flat, mapping)
	kinds, ok := flatKinds(as)
	if !ok {
		t.Fatal("flatKinds: the primitive columns are not flat")
	}
	fullArrow, err := ArrowSchema(full)
	if err != nil {
		t.Fatal(err)
	}
	if _, isFlat := flatKinds(fullArrow); isFlat {
		t.Fatal("flatKinds: a schema with structs, lists and maps is flat")
	}
	layout, err := parquetfmt.NewLayout(as)
	if err != nil {
		t.Fatal(err)
	}

	checked := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer checked.AssertSize(t, 0)
	// The segment lets its rows go (the buffer's chunks, the spill's
	// block) before the row group is written: nothing in the row group
	// may point into them, which scribbling on freed memory shows.
	mem := scribbling{checked}
	ref := array.NewRecordBuilder(mem, as)
	defer ref.Release()
	buf := newRowBuffer(mem, kinds)
	cases := []struct {
		name          string
		rows, spilled int
	}{
		{"rows over several chunks", 3000, 0},
		{"spilled rows then buffered ones", 2500, 1800},
		{"a few rows", 7, 0},
	}
	for bi, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := createSpill(t.TempDir(), "t", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer sp.remove()
			for i := 0; i < tc.rows; i++ {
				row := docs[(i*7+bi)%len(docs)]
				if i%5 == 4 { // every optional column null
					row = slices.Clone(row)
					for j, f := range flat.Fields() {
						if !f.Required {
							row[j] = nil
						}
					}
				}
				AppendRow(ref, row)
				buf.append(row)
				if i+1 == tc.spilled {
					if err := sp.write(buf); err != nil {
						t.Fatal(err)
					}
					buf.reset()
				}
			}
			if tc.rows >= 3000 && len(buf.chunks) < 2 {
				t.Fatalf("%d rows in %d chunk: the test does not cross chunks", tc.rows, len(buf.chunks))
			}
			c := parquetfmt.GetColumns(layout, tc.rows)
			if err := sp.fill(c, kinds, mem); err != nil {
				t.Fatal(err)
			}
			if n := buf.fill(c, tc.spilled); n != tc.rows {
				t.Fatalf("filled %d rows, want %d", n, tc.rows)
			}
			buf.reset()
			var out bytes.Buffer
			w, err := parquetfmt.NewColumnWriter(&out, layout, writerProps(mem, false))
			if err != nil {
				t.Fatal(err)
			}
			if err := w.WriteRowGroup(c); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			parquetfmt.PutColumns(c)
			if buf.Len() != 0 || buf.held != 0 {
				t.Fatalf("after reset: %d rows, %d bytes held", buf.Len(), buf.held)
			}
			got := readParquet(t, out.Bytes())
			want := ref.NewRecordBatch()
			defer want.Release()
			if !array.RecordEqual(want, got) {
				t.Errorf("rows differ:\nAppendRow: %v\nwritten:   %v", want, got)
			}
		})
	}
}

// readParquet reads a whole Parquet file into one record batch.
func readParquet(t *testing.T, data []byte) arrow.RecordBatch {
	t.Helper()
	r, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, -1)
	defer tr.Release()
	if !tr.Next() {
		t.Fatal("no rows read")
	}
	rec := tr.RecordBatch()
	rec.Retain()
	t.Cleanup(rec.Release)
	return rec
}

// decodeAllTypes decodes allTypesDocs with schema and mapping, and returns
// the rows and the schema's Arrow schema.
func decodeAllTypes(t *testing.T, schema *iceberg.Schema, mapping map[string]string) ([]Row, *arrow.Schema) {
	t.Helper()
	d, err := decode.New(schema, mapping)
	if err != nil {
		t.Fatal(err)
	}
	as, err := ArrowSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	var rows []Row
	for _, doc := range decodetest.AllTypesDocs {
		row, err := d.DecodeInto(nil, []byte(doc))
		if err != nil {
			t.Fatalf("decode %s: %v", doc, err)
		}
		rows = append(rows, row)
	}
	return rows, as
}

// scribbling overwrites memory as it is freed.
type scribbling struct{ memory.Allocator }

func (s scribbling) Free(b []byte) {
	for i := range b {
		b[i] = 0xff
	}
	s.Allocator.Free(b)
}
