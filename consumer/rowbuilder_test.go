package consumer

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/consumer/decode/decodetest"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
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
// extreme values, over several chunks and two batches, replays them, and
// requires the record batches AppendRow builds, the memory counted while
// buffered and given back after.
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

	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ref := array.NewRecordBuilder(mem, as)
	defer ref.Release()
	buf := newRowBuffer(mem, kinds)
	for batch, n := range []int{3000, 7} { // 3000 rows span several chunks
		for i := 0; i < n; i++ {
			row := docs[(i*7+batch)%len(docs)]
			if i%5 == 4 {
				row = make(Row, len(kinds)) // all null
			}
			AppendRow(ref, row)
			buf.append(row)
		}
		if buf.Len() != n || mem.CurrentAlloc() == 0 {
			t.Fatalf("batch %d: %d rows buffered, %d bytes counted", batch, buf.Len(), mem.CurrentAlloc())
		}
		if batch == 0 && len(buf.chunks) < 2 {
			t.Fatalf("3000 rows in %d chunk: the test does not cross chunks", len(buf.chunks))
		}
		rb := NewRowBuilder(mem, as)
		presize(rb, buf.Len(), buf.data)
		caps, dataCaps := builderCaps(rb)
		buf.replay(rb)
		// presize reserved exactly enough: replaying grew no buffer,
		// and every string and binary column's values filled its room.
		if c, d := builderCaps(rb); !slices.Equal(c, caps) || !slices.Equal(d, dataCaps) {
			t.Errorf("batch %d: replaying grew buffers: capacities %v, data %v; after presize %v, data %v", batch, c, d, caps, dataCaps)
		}
		for i, fb := range rb.fields {
			if b, ok := fb.(interface{ DataLen() int }); ok && b.DataLen() > 0 && b.DataLen() != buf.data[i] {
				t.Errorf("batch %d: column %d holds %d bytes of values, the tally %d", batch, i, b.DataLen(), buf.data[i])
			}
		}
		buf.reset()
		got := rb.NewRecordBatch()
		rb.Release()
		want := ref.NewRecordBatch()
		if !array.RecordEqual(want, got) {
			t.Errorf("batch %d differs:\nAppendRow: %v\nreplayed:  %v", batch, want, got)
		}
		want.Release()
		got.Release()
		if buf.Len() != 0 || buf.held != 0 {
			t.Fatalf("after reset: %d rows, %d bytes held", buf.Len(), buf.held)
		}
	}
}

// builderCaps gives the room of each of rb's builders: in values, and in
// value bytes for strings and binary (0 for the others).
func builderCaps(rb *RowBuilder) (caps, dataCaps []int) {
	for _, fb := range rb.fields {
		caps = append(caps, fb.Cap())
		d := 0
		if b, ok := fb.(interface{ DataCap() int }); ok {
			d = b.DataCap()
		}
		dataCaps = append(dataCaps, d)
	}
	return caps, dataCaps
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
