package tables

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/config"
)

// sample is one source column type with a value of it and the transforms
// that apply to it.
type sample struct {
	name, typ  string
	value      any
	transforms []string
}

var samples = []sample{
	{"b", "boolean", true, []string{"identity"}},
	{"i", "int", int32(-7), []string{"identity", "bucket[16]", "truncate[10]"}},
	{"l", "long", int64(1234567890123), []string{"identity", "bucket[16]", "truncate[100]"}},
	{"f", "float", float32(1.5), []string{"identity"}},
	{"d", "double", -2.25, []string{"identity"}},
	{"s", "string", "héllo wörld", []string{"identity", "bucket[16]", "truncate[3]"}},
	{"bin", "binary", []byte{0, 1, 2, 255}, []string{"identity", "bucket[16]", "truncate[2]"}},
	{"u", "uuid", uuid.MustParse("3f2c9c2e-8f7a-4a51-9d43-6c4c1b1e2a10"), []string{"identity", "bucket[16]"}},
	{"dec", "decimal(9,2)", dec("-123.45", 9, 2), []string{"identity", "bucket[16]", "truncate[50]"}},
	{"dt", "date", iceberg.Date(19876), []string{"identity", "year", "month", "day", "bucket[16]"}},
	{"tm", "time", iceberg.Time(3723000123), []string{"identity", "bucket[16]"}},
	{"ts", "timestamp", iceberg.Timestamp(1717243323456789), []string{"identity", "year", "month", "day", "hour", "bucket[16]"}},
	{"tstz", "timestamptz", iceberg.Timestamp(-86400000001), []string{"identity", "year", "month", "day", "hour", "bucket[16]"}},
	{"fx", "fixed[4]", []byte{9, 8, 7, 6}, []string{"identity", "bucket[16]"}},
}

// literal makes the Iceberg literal of a sample value of type typ.
func literal(typ string, v any) iceberg.Literal {
	switch v := v.(type) {
	case bool:
		return iceberg.NewLiteral(v)
	case int32:
		return iceberg.NewLiteral(v)
	case int64:
		return iceberg.NewLiteral(v)
	case float32:
		return iceberg.NewLiteral(v)
	case float64:
		return iceberg.NewLiteral(v)
	case string:
		return iceberg.NewLiteral(v)
	case []byte:
		if strings.HasPrefix(typ, "fixed") {
			return iceberg.FixedLiteral(v)
		}
		return iceberg.NewLiteral(v)
	case uuid.UUID:
		return iceberg.NewLiteral(v)
	case iceberg.Decimal:
		return iceberg.NewLiteral(v)
	case iceberg.Date:
		return iceberg.NewLiteral(v)
	case iceberg.Time:
		return iceberg.NewLiteral(v)
	case iceberg.Timestamp:
		return iceberg.NewLiteral(v)
	}
	panic(fmt.Sprintf("no literal for %T", v))
}

// transformed returns what the consumer records for v under tr: the
// transform's result as Literal.Any() gives it.
func transformed(t *testing.T, tr iceberg.Transform, typ string, v any) any {
	t.Helper()
	if v == nil {
		return nil
	}
	out := tr.Apply(iceberg.Optional[iceberg.Literal]{Valid: true, Val: literal(typ, v)})
	if !out.Valid {
		t.Fatalf("%s(%v) gave no value", tr, v)
	}
	return out.Val.Any()
}

// wantDecoded is the Go value DecodePartition must return for a consumer value.
func wantDecoded(tr iceberg.Transform, v any) any {
	if d, ok := v.(iceberg.Date); ok {
		if _, ok := tr.(iceberg.DayTransform); ok {
			return int32(d)
		}
	}
	return v
}

func sameValue(a, b any) bool {
	if fa, ok := a.(float32); ok {
		if fb, ok := b.(float32); ok && math.IsNaN(float64(fa)) && math.IsNaN(float64(fb)) {
			return true
		}
	}
	if fa, ok := a.(float64); ok {
		if fb, ok := b.(float64); ok && math.IsNaN(fa) && math.IsNaN(fb) {
			return true
		}
	}
	return reflect.DeepEqual(a, b)
}

func TestTablesPartitionRoundTrip(t *testing.T) {
	all := append([]sample{}, samples...)
	all = append(all,
		sample{"fnan", "float", float32(math.NaN()), []string{"identity"}},
		sample{"dinf", "double", math.Inf(-1), []string{"identity"}},
		sample{"dpinf", "double", math.Inf(1), []string{"identity"}},
		sample{"snull", "string", nil, []string{"identity", "bucket[4]", "truncate[2]"}},
		sample{"tsnull", "timestamptz", nil, []string{"day", "hour"}},
		sample{"big", "decimal(38,10)", dec("-1234567890123456789012345678.0123456789", 38, 10), []string{"identity", "truncate[7]"}},
		sample{"lmax", "long", int64(math.MaxInt64), []string{"identity"}},
		sample{"empty", "string", "", []string{"identity"}},
	)
	for _, s := range all {
		for _, trs := range s.transforms {
			t.Run(s.name+" "+trs, func(t *testing.T) {
				schema, err := BuildSchema([]config.Column{{Name: s.name, Type: s.typ}})
				if err != nil {
					t.Fatal(err)
				}
				spec, err := BuildSpec(schema, []config.PartitionField{{Column: s.name, Transform: trs, Name: "p"}})
				if err != nil {
					t.Fatal(err)
				}
				tr := spec.Field(0).Transform
				v := transformed(t, tr, s.typ, s.value)
				enc, err := EncodePartition(map[int]any{1000: v})
				if err != nil {
					t.Fatalf("encode %T %v: %v", v, v, err)
				}
				got, err := DecodePartition(spec, schema, enc)
				if err != nil {
					t.Fatalf("decode %s: %v", enc, err)
				}
				if want := wantDecoded(tr, v); !sameValue(got[1000], want) {
					t.Fatalf("round trip of %T %v through %s gave %T %v, want %T %v", v, v, enc, got[1000], got[1000], want, want)
				}
				if _, ok := got[1000]; !ok {
					t.Fatalf("decode %s lost field 1000", enc)
				}
			})
		}
	}
}

func TestTablesDecodePartitionErrors(t *testing.T) {
	schema, err := BuildSchema([]config.Column{{Name: "ts", Type: "timestamptz"}, {Name: "s", Type: "string"}, {Name: "x", Type: "fixed[2]"}})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := BuildSpec(schema, []config.PartitionField{{Column: "ts", Transform: "day"}, {Column: "s", Transform: "identity"}, {Column: "x", Transform: "identity"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, wantErr string }{
		{`{"1000":1,"1001":"a"}`, "no value for field 1002 (x)"},
		{`{"1000":1,"1001":"a","1002":"AAA=","1003":2}`, "field 1003 is not in spec"},
		{`{"1000":"x","1001":"a","1002":"AAA="}`, "want an integer for date"},
		{`{"1000":1.5,"1001":"a","1002":"AAA="}`, "want an integer for date"},
		{`{"1000":3000000000,"1001":"a","1002":"AAA="}`, "want an integer for date"},
		{`{"1000":1,"1001":5,"1002":"AAA="}`, "want a string for string"},
		{`{"1000":1,"1001":"a","1002":"AAAA"}`, "want 2 bytes for fixed[2], got 3"},
		{`not json`, "decode partition"},
	} {
		if _, err := DecodePartition(spec, schema, tc.in); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("DecodePartition(%s) error %v, want %q", tc.in, err, tc.wantErr)
		}
	}
	if _, err := EncodePartition(map[int]any{1000: struct{}{}}); err == nil {
		t.Errorf("EncodePartition of a struct succeeded")
	}
	// A spec without fields takes an empty object.
	got, err := DecodePartition(*iceberg.UnpartitionedSpec, schema, "{}")
	if err != nil || len(got) != 0 {
		t.Errorf("DecodePartition(unpartitioned, {}) = %v, %v", got, err)
	}
}

// TestTablesPartitionCommit adds a real file partitioned by every transform
// over every type to a real table, with the partition values decoded from
// its footer, and reads them back from the manifests: it proves the decoded
// Go types are the ones iceberg-go writes correctly.
//
// iceberg-go v0.7.0 cannot write a manifest for a spec with two decimal
// partition fields (BuildSpec refuses it), so each decimal transform gets
// its own table.
func TestTablesPartitionCommit(t *testing.T) {
	for _, decTransform := range []string{"identity", "truncate[50]"} {
		t.Run("decimal "+decTransform, func(t *testing.T) {
			testPartitionCommit(t, decTransform)
		})
	}
}

func testPartitionCommit(t *testing.T, decTransform string) {
	ctx := context.Background()
	dir := t.TempDir()
	cat := openCatalog(t, sqliteCatalog(dir))
	d := config.Dataset{Name: "all", Table: "ns.all_types", Create: &config.CreateTable{}}
	row := map[string]any{}
	typs := map[string]string{}
	for _, s := range samples {
		if s.name == "dec" {
			s.transforms = []string{decTransform, "bucket[16]"}
		}
		d.Create.Columns = append(d.Create.Columns, config.Column{Name: s.name, Type: s.typ})
		row[s.name], typs[s.name] = s.value, s.typ
		for _, tr := range s.transforms {
			col := s.name
			switch tr {
			case "year", "month", "day", "hour":
				// Iceberg allows one time transform per column: give each
				// its own copy of the column.
				col = s.name + "_for_" + tr
				d.Create.Columns = append(d.Create.Columns, config.Column{Name: col, Type: s.typ})
				row[col], typs[col] = s.value, s.typ
			}
			name := s.name + "_" + strings.NewReplacer("[", "", "]", "").Replace(tr)
			d.Create.Partition = append(d.Create.Partition, config.PartitionField{Column: col, Transform: tr, Name: name})
		}
	}
	tbl, err := Load(ctx, cat, d)
	if err != nil {
		t.Fatal(err)
	}
	schema, spec := tbl.Schema(), tbl.Spec()

	// What the consumer does: transform the row's values and encode them.
	values := map[int]any{}
	for _, f := range spec.Fields() {
		src, _ := schema.FindFieldByID(f.SourceID())
		values[f.FieldID] = transformed(t, f.Transform, typs[src.Name], row[src.Name])
	}
	enc, err := EncodePartition(values)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "warehouse", "seg.parquet")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	meta := writeParquet(t, path, schema, []map[string]any{row}, enc)

	// What the committer does: decode the footer and add the file.
	footer := meta.KeyValueMetadata().FindValue("ingestor.partition")
	if footer == nil {
		t.Fatal("no partition in footer")
	}
	pv, err := DecodePartition(spec, schema, *footer)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	df, err := table.DataFileFromMetadata(table.DataFileArgs{
		Schema: schema, Spec: spec, Format: iceberg.ParquetFile, Metadata: meta,
		FilePath: "file://" + path, FileSize: st.Size(), Content: iceberg.EntryContentData,
		PartitionValues: pv, Properties: tbl.Properties(), FormatVersion: tbl.Metadata().Version(),
	})
	if err != nil {
		t.Fatalf("data file: %v", err)
	}
	id := uuid.New()
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(ctx, []iceberg.DataFile{df}, SnapshotProperties("all", []uuid.UUID{id}), table.WithoutDuplicateCheck()); err != nil {
		t.Fatalf("add data files: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}

	tbl, err = Load(ctx, cat, d)
	if err != nil {
		t.Fatal(err)
	}
	if !FilesInTable(tbl)[id] {
		t.Errorf("FilesInTable does not have %s", id)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 {
		t.Fatalf("%d files in table, want 1", len(tasks))
	}
	got := tasks[0].File.Partition()
	for _, f := range spec.Fields() {
		// Compare through the encoding, which normalizes Go types that
		// stand for the same value (int32 and iceberg.Date, say).
		w, _ := EncodePartition(map[int]any{f.FieldID: values[f.FieldID]})
		g, err := EncodePartition(map[int]any{f.FieldID: normalizeRead(got[f.FieldID])})
		if err != nil {
			t.Errorf("field %s: read back %T: %v", f.Name, got[f.FieldID], err)
			continue
		}
		if w != g {
			t.Errorf("field %s: table has %s, want %s", f.Name, g, w)
		}
	}
	arr, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer arr.Release()
	if arr.NumRows() != 1 {
		t.Errorf("scan returned %d rows, want 1", arr.NumRows())
	}
}

// normalizeRead maps values read back from a manifest to the types
// EncodePartition takes.
func normalizeRead(v any) any {
	switch v := v.(type) {
	case [16]byte:
		return uuid.UUID(v)
	}
	return v
}
