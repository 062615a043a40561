package bloom

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// column is one Iceberg column of the canonical-encoding test: a value as
// Arrow's JSON reader takes it, the canonical bytes, and query texts that
// must encode to the same bytes.
type column struct {
	typ     iceberg.Type
	json    string
	want    string
	queries []string
}

var columns = []column{
	{iceberg.PrimitiveTypes.String, `"héllo wörld "`, "héllo wörld ", []string{"héllo wörld "}},
	{iceberg.PrimitiveTypes.Int32, `42`, "42", []string{"42", "+42", " 42 "}},
	{iceberg.PrimitiveTypes.Int64, `-9000000000`, "-9000000000", []string{"-9000000000"}},
	{iceberg.PrimitiveTypes.Bool, `true`, "true", []string{"true", "TRUE", "1", "t"}},
	{iceberg.PrimitiveTypes.Float32, `0.1`, "0.1", []string{"0.1", "1e-1", ".1"}},
	{iceberg.PrimitiveTypes.Float64, `-0.0`, "0", []string{"0", "-0", "0.0"}},
	{iceberg.PrimitiveTypes.Float64, `3.141592653589793`, "3.141592653589793", []string{"3.141592653589793"}},
	{iceberg.DecimalTypeOf(9, 2), `"-12.3"`, "-12.30", []string{"-12.3", "-12.30", "-12.300", "-012.3"}},
	{iceberg.DecimalTypeOf(38, 0), `"12345678901234567890123456789"`, "12345678901234567890123456789", []string{"12345678901234567890123456789"}},
	{iceberg.DecimalTypeOf(5, 3), `"0.05"`, "0.050", []string{".05", "0.05", "+0.050"}},
	{iceberg.PrimitiveTypes.Date, `"2024-02-29"`, "2024-02-29", []string{"2024-02-29", " 2024-02-29"}},
	{iceberg.PrimitiveTypes.Time, `"13:14:15.123456"`, "13:14:15.123456", []string{"13:14:15.123456"}},
	{iceberg.PrimitiveTypes.Time, `"13:14:15"`, "13:14:15.000000", []string{"13:14:15", "13:14:15.0"}},
	{iceberg.PrimitiveTypes.Timestamp, `"2024-03-01T10:11:12.123456"`, "2024-03-01T10:11:12.123456Z",
		[]string{"2024-03-01T10:11:12.123456Z", "2024-03-01 10:11:12.123456", "2024-03-01T12:11:12.123456+02:00"}},
	{iceberg.PrimitiveTypes.TimestampTz, `"2024-03-01T10:11:12.5Z"`, "2024-03-01T10:11:12.500000Z",
		[]string{"2024-03-01T10:11:12.5Z", "2024-03-01T11:11:12.500+01:00", "2024-03-01 10:11:12.5"}},
	{iceberg.PrimitiveTypes.TimestampTz, `"2024-03-01T00:00:00Z"`, "2024-03-01T00:00:00.000000Z", []string{"2024-03-01"}},
	{iceberg.PrimitiveTypes.TimestampTzNs, `"2024-03-01T10:11:12.123456789Z"`, "2024-03-01T10:11:12.123456789Z",
		[]string{"2024-03-01T10:11:12.123456789Z"}},
	{iceberg.PrimitiveTypes.UUID, `"550e8400-e29b-41d4-a716-446655440000"`, "\x55\x0e\x84\x00\xe2\x9b\x41\xd4\xa7\x16\x44\x66\x55\x44\x00\x00",
		[]string{"550e8400-e29b-41d4-a716-446655440000", "{550E8400-E29B-41D4-A716-446655440000}", "550e8400e29b41d4a716446655440000"}},
	{iceberg.PrimitiveTypes.Binary, `"AQID/w=="`, "\x01\x02\x03\xff", []string{"010203ff", "010203FF", "0x010203ff"}},
	{iceberg.FixedTypeOf(4), `"AQIDBA=="`, "\x01\x02\x03\x04", []string{"01020304"}},
}

// TestCanonicalThroughParquet writes each column to Parquet as the consumer
// does (Arrow schema from the Iceberg schema, with field IDs), reads it back
// as the uploader does, and checks that the stored value, the documented
// bytes and every query spelling agree. A null row must not be encoded.
func TestCanonicalThroughParquet(t *testing.T) {
	var fields []iceberg.NestedField
	for i, c := range columns {
		fields = append(fields, iceberg.NestedField{ID: i + 1, Name: fmt.Sprintf("c%d", i), Type: c.typ})
	}
	sc, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, fields...), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	var cols []arrow.Array
	for i, c := range columns {
		arr, _, err := array.FromJSON(mem, sc.Field(i).Type, strings.NewReader("["+c.json+", null]"))
		if err != nil {
			t.Fatalf("column %d (%s): %v", i, c.typ, err)
		}
		defer arr.Release()
		cols = append(cols, arr)
	}
	rec := array.NewRecordBatch(sc, cols, 2)
	defer rec.Release()

	// The in-memory arrays and the ones read back from Parquet must agree.
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()

	for i, c := range columns {
		t.Run(fmt.Sprintf("%s %s", c.typ, c.json), func(t *testing.T) {
			read := tbl.Column(i).Data().Chunk(0)
			for name, arr := range map[string]arrow.Array{"written": cols[i], "read back": read} {
				got, ok, err := AppendValue(nil, arr, 0)
				if err != nil || !ok {
					t.Fatalf("%s %s: ok %v, %v", name, arr.DataType(), ok, err)
				}
				if string(got) != c.want {
					t.Fatalf("%s %s: encoded %q, want %q", name, arr.DataType(), got, c.want)
				}
				if _, ok, err := AppendValue(nil, arr, 1); ok || err != nil {
					t.Fatalf("%s: null encoded (ok %v, %v)", name, ok, err)
				}
			}
			for _, q := range c.queries {
				got, err := QueryValue(c.typ.String(), q)
				if err != nil {
					t.Fatalf("query %q: %v", q, err)
				}
				if string(got) != c.want {
					t.Fatalf("query %q for %s: %q, want %q", q, c.typ, got, c.want)
				}
			}
		})
	}
}

func TestDictionaryColumn(t *testing.T) {
	mem := memory.DefaultAllocator
	b := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String})
	defer b.Release()
	sb := b.(*array.BinaryDictionaryBuilder)
	sb.AppendString("acme")
	sb.AppendNull()
	sb.AppendString("acme")
	arr := b.NewArray()
	defer arr.Release()
	got, ok, err := AppendValue([]byte("prefix:"), arr, 2)
	if err != nil || !ok || string(got) != "prefix:acme" {
		t.Fatalf("got %q %v %v", got, ok, err)
	}
	if _, ok, _ := AppendValue(nil, arr, 1); ok {
		t.Fatal("null dictionary entry encoded")
	}
}

func TestQueryValueRejects(t *testing.T) {
	cases := []struct{ typ, text string }{
		{"decimal(9,2)", "1.234"},
		{"decimal(4,2)", "123.4"},
		{"decimal(9,2)", "1e3"},
		{"decimal(9,2)", "."},
		{"int", "3000000000"},
		{"long", "12abc"},
		{"boolean", "yes"},
		{"date", "2024-02-30"},
		{"time", "13:14:15.1234567"},
		{"timestamp", "2024-03-01T10:11:12.1234567Z"},
		{"timestamptz", "yesterday"},
		{"uuid", "not-a-uuid"},
		{"binary", "xyz"},
		{"fixed[4]", "010203"},
		{"list<int>", "1"},
	}
	for _, c := range cases {
		t.Run(c.typ+" "+c.text, func(t *testing.T) {
			if got, err := QueryValue(c.typ, c.text); err == nil {
				t.Fatalf("accepted as %q", got)
			}
		})
	}
}

func TestUnsupportedColumn(t *testing.T) {
	arr, _, err := array.FromJSON(memory.DefaultAllocator, arrow.ListOf(arrow.PrimitiveTypes.Int32), strings.NewReader(`[[1,2]]`))
	if err != nil {
		t.Fatal(err)
	}
	defer arr.Release()
	if _, _, err := AppendValue(nil, arr, 0); err == nil {
		t.Fatal("list column encoded")
	}
}

func FuzzQueryValue(f *testing.F) {
	for _, c := range columns {
		for _, q := range c.queries {
			f.Add(c.typ.String(), q)
		}
	}
	f.Fuzz(func(t *testing.T, typ, text string) {
		v, err := QueryValue(typ, text)
		if err != nil {
			return
		}
		// A canonical value given again as a query of a textual type is
		// a fixed point.
		switch strings.ToLower(strings.ReplaceAll(typ, " ", "")) {
		case "uuid", "binary":
			return
		}
		if strings.HasPrefix(strings.ToLower(typ), "fixed") {
			return
		}
		again, err := QueryValue(typ, string(v))
		if err != nil || !bytes.Equal(again, v) {
			t.Fatalf("%s %q -> %q -> %q, %v", typ, text, v, again, err)
		}
	})
}
