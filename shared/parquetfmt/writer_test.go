package parquetfmt

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// everyFlatType is a table with a column of every flat type the
// consumer decodes into.
func everyFlatType(t testing.TB) *arrow.Schema {
	t.Helper()
	types := []iceberg.Type{
		iceberg.PrimitiveTypes.String, iceberg.PrimitiveTypes.String, iceberg.PrimitiveTypes.Binary,
		iceberg.FixedTypeOf(4), iceberg.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.Int64,
		iceberg.PrimitiveTypes.Float32, iceberg.PrimitiveTypes.Float64, iceberg.PrimitiveTypes.Bool,
		iceberg.PrimitiveTypes.Date, iceberg.PrimitiveTypes.Time, iceberg.PrimitiveTypes.Timestamp,
		iceberg.PrimitiveTypes.TimestampTz, iceberg.PrimitiveTypes.TimestampNs,
		iceberg.DecimalTypeOf(9, 2), iceberg.DecimalTypeOf(18, 4), iceberg.DecimalTypeOf(38, 10),
		iceberg.PrimitiveTypes.UUID, iceberg.PrimitiveTypes.Int64,
	}
	var fields []iceberg.NestedField
	for i, ty := range types {
		// The last column is required: no definition levels.
		fields = append(fields, iceberg.NestedField{ID: 100 + i, Name: fmt.Sprintf("c%02d", i), Type: ty, Required: i == len(types)-1})
	}
	sc, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, fields...), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// randomRecord fills sc with rows rows: each column with its own share
// of nulls, some columns of few distinct values (dictionaries pay),
// others all distinct.
func randomRecord(t testing.TB, sc *arrow.Schema, rows int, seed uint64) arrow.RecordBatch {
	t.Helper()
	rnd := rand.New(rand.NewPCG(seed, 7))
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i, fb := range b.Fields() {
		nullEvery := []int{0, 2, 3, 50, 7}[i%5]
		if !sc.Field(i).Nullable {
			nullEvery = 0
		}
		lowCard := i%2 == 0
		for r := 0; r < rows; r++ {
			if nullEvery > 0 && rnd.IntN(nullEvery) == 0 {
				fb.AppendNull()
				continue
			}
			n := rnd.Int64()
			if lowCard {
				n %= 37
			}
			switch fb := fb.(type) {
			case *array.StringBuilder:
				if n%37 == 5 { // empty strings count in min and max
					fb.Append("")
					continue
				}
				fb.Append(fmt.Sprintf("value-%d-%s", n, strings.Repeat("x", int(uint64(n)%20))))
			case *array.BinaryBuilder:
				fb.Append([]byte(fmt.Sprint(n)))
			case *array.FixedSizeBinaryBuilder:
				fb.Append([]byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)})
			case *array.Int32Builder:
				fb.Append(int32(n))
			case *array.Int64Builder:
				fb.Append(n)
			case *array.Float32Builder:
				fb.Append(float32(n%100000) / 7)
			case *array.Float64Builder:
				fb.Append(float64(n) / 3)
			case *array.BooleanBuilder:
				fb.Append(n%2 == 0)
			case *array.Date32Builder:
				fb.Append(arrow.Date32(n % 40000))
			case *array.Time64Builder:
				fb.Append(arrow.Time64(uint64(n) % 86_400_000_000))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(n % 4_000_000_000_000_000))
			case *array.Decimal128Builder:
				p := fb.Type().(*arrow.Decimal128Type).Precision
				lim := decimal128.GetScaleMultiplier(int(p))
				v := decimal128.FromI64(n)
				if p > 18 {
					v = v.Mul(decimal128.FromI64(rnd.Int64()))
				}
				_, v = v.Div(lim) // the remainder: |v| < 10^p
				fb.Append(v)
			case *extensions.UUIDBuilder:
				var u uuid.UUID
				for k := range u {
					u[k] = byte(rnd.Uint32())
				}
				if lowCard {
					u = uuid.UUID{byte(n)}
				}
				fb.Append(u)
			default:
				t.Fatalf("no values for %T", fb)
			}
		}
	}
	return b.NewRecordBatch()
}

var testKV = [][2]string{{"ingestor.partition", `{"1000":"tenant-7"}`}, {"ingestor.table", "db.events"}}

// writePqarrow writes recs as pqarrow does today, one row group each.
func writePqarrow(t testing.TB, sc *arrow.Schema, recs []arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, WriterProperties(memory.DefaultAllocator), ArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range testKV {
		if err := w.AppendKeyValueMetadata(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeColumns writes recs through ColumnWriter, one row group each.
func writeColumns(t testing.TB, sc *arrow.Schema, recs []arrow.RecordBatch) []byte {
	t.Helper()
	layout, err := NewLayout(sc)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := NewColumnWriter(&buf, layout, WriterProperties(memory.DefaultAllocator))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range testKV {
		if err := w.AppendKeyValueMetadata(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, rec := range recs {
		c := GetColumns(layout, 0)
		if err := c.AppendRecord(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteRowGroup(c); err != nil {
			t.Fatal(err)
		}
		PutColumns(c)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestColumnWriterMatchesPqarrow writes the same rows through the column
// writer and through pqarrow and checks that a reader sees the same
// file: Parquet schema with field ids and logical types, key-value
// metadata (ARROW:schema included, byte for byte), per-chunk statistics,
// every value, and a size within 5 %.
func TestColumnWriterMatchesPqarrow(t *testing.T) {
	sc := everyFlatType(t)
	cases := []struct {
		name string
		rows []int // one row group each
	}{
		{"one small row group", []int{100}},
		{"row groups of a segment", []int{16384, 16384, 3000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var recs []arrow.RecordBatch
			for i, n := range tc.rows {
				rec := randomRecord(t, sc, n, uint64(i+1))
				defer rec.Release()
				recs = append(recs, rec)
			}
			old, neu := writePqarrow(t, sc, recs), writeColumns(t, sc, recs)
			ro, err := file.NewParquetReader(bytes.NewReader(old))
			if err != nil {
				t.Fatal(err)
			}
			rn, err := file.NewParquetReader(bytes.NewReader(neu))
			if err != nil {
				t.Fatalf("read the column writer's file: %v", err)
			}
			if a, b := printSchema(ro.MetaData().Schema), printSchema(rn.MetaData().Schema); a != b {
				t.Fatalf("schema differs:\npqarrow:\n%s\ncolumns:\n%s", a, b)
			}
			if a, b := kvString(ro.MetaData().KeyValueMetadata()), kvString(rn.MetaData().KeyValueMetadata()); a != b {
				t.Fatalf("key-value metadata differs:\npqarrow: %s\ncolumns: %s", a, b)
			}
			if ro.NumRowGroups() != rn.NumRowGroups() {
				t.Fatalf("row groups: pqarrow %d, columns %d", ro.NumRowGroups(), rn.NumRowGroups())
			}
			for g := 0; g < ro.NumRowGroups(); g++ {
				mo, mn := ro.MetaData().RowGroup(g), rn.MetaData().RowGroup(g)
				if mo.NumRows() != mn.NumRows() {
					t.Fatalf("row group %d: pqarrow %d rows, columns %d", g, mo.NumRows(), mn.NumRows())
				}
				for c := 0; c < mo.NumColumns(); c++ {
					co, _ := mo.ColumnChunk(c)
					cn, _ := mn.ColumnChunk(c)
					if a, b := statsString(t, co), statsString(t, cn); a != b {
						t.Errorf("row group %d column %s statistics: pqarrow %s, columns %s", g, sc.Field(c).Name, a, b)
					}
					// Low-cardinality strings keep a dictionary (built by
					// the writer itself); all-distinct ones are plain.
					if tc.rows[g] >= dictMinValues && sc.Field(c).Type.ID() == arrow.STRING {
						if want := c%2 == 0; cn.HasDictionaryPage() != want {
							t.Errorf("row group %d column %s: dictionary page %v, want %v", g, sc.Field(c).Name, cn.HasDictionaryPage(), want)
						}
					}
					if cn.Compression() != co.Compression() {
						t.Errorf("column %s compression: pqarrow %s, columns %s", sc.Field(c).Name, co.Compression(), cn.Compression())
					}
				}
			}
			to, tn := readTable(t, old), readTable(t, neu)
			if !to.Schema().Equal(tn.Schema()) {
				t.Fatalf("arrow schema read back differs:\npqarrow: %s\ncolumns: %s", to.Schema(), tn.Schema())
			}
			for c := 0; c < int(to.NumCols()); c++ {
				if !array.ChunkedEqual(to.Column(c).Data(), tn.Column(c).Data()) {
					t.Errorf("column %s: values read back differ", sc.Field(c).Name)
				}
			}
			t.Logf("pqarrow %d bytes, columns %d bytes", len(old), len(neu))
			if float64(len(neu)) > 1.05*float64(len(old)) {
				t.Errorf("column writer's file is %d bytes, pqarrow's %d: more than 5 %% larger", len(neu), len(old))
			}
		})
	}
}

func printSchema(sc *schema.Schema) string {
	var b strings.Builder
	schema.PrintSchema(sc.Root(), &b, 2)
	return b.String()
}

func kvString(kv metadata.KeyValueMetadata) string {
	var b strings.Builder
	for _, e := range kv {
		fmt.Fprintf(&b, "%s=%q;", e.Key, *e.Value)
	}
	return b.String()
}

func statsString(t *testing.T, c *metadata.ColumnChunkMetaData) string {
	t.Helper()
	ok, err := c.StatsSet()
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return "none"
	}
	s, err := c.Statistics()
	if err != nil {
		t.Fatal(err)
	}
	out := fmt.Sprintf("values=%d nulls=%d", s.NumValues(), s.NullCount())
	if s.HasMinMax() {
		out += fmt.Sprintf(" min=%x max=%x", s.EncodeMin(), s.EncodeMax())
	}
	return out
}

func readTable(t *testing.T, data []byte) arrow.Table {
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
	t.Cleanup(tbl.Release)
	return tbl
}
