package tables

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/walfile"
)

// sqliteCatalog returns the configuration of an SQLite catalog with a local
// warehouse, both in dir.
func sqliteCatalog(dir string) config.Catalog {
	return config.Catalog{Name: "test", Properties: map[string]string{
		"type":        "sql",
		"uri":         "file:" + filepath.Join(dir, "catalog.db"),
		"sql.driver":  "sqlite",
		"sql.dialect": "sqlite",
		"warehouse":   "file://" + filepath.Join(dir, "warehouse"),
	}}
}

// openCatalog opens c and closes it when the test ends.
func openCatalog(t *testing.T, c config.Catalog) catalog.Catalog {
	t.Helper()
	cat, err := OpenCatalog(context.Background(), c)
	if err != nil {
		t.Fatalf("open catalog: %v", err)
	}
	t.Cleanup(func() {
		if cl, ok := cat.(catalog.Closer); ok {
			cl.Close()
		}
	})
	return cat
}

// writeParquet writes rows (column name to Go value, nil for null) as a
// Parquet file with the schema's field IDs, records partition in the footer
// when it is not empty, and returns the footer.
func writeParquet(t *testing.T, path string, schema *iceberg.Schema, rows []map[string]any, partition string) *metadata.FileMetaData {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(schema, nil, true, false)
	if err != nil {
		t.Fatalf("arrow schema: %v", err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, row := range rows {
		for i, f := range sc.Fields() {
			if err := appendValue(b.Field(i), row[f.Name]); err != nil {
				t.Fatalf("column %s: %v", f.Name, err)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := pqarrow.NewFileWriter(sc, out, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatalf("parquet writer: %v", err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatalf("write parquet: %v", err)
	}
	if partition != "" {
		if err := w.AppendKeyValueMetadata(walfile.MetaPartition, partition); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close parquet: %v", err)
	}
	meta, err := w.FileMetadata()
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

func appendValue(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.FixedSizeBinaryBuilder:
		b.Append(v.([]byte))
	case *extensions.UUIDBuilder:
		b.Append(v.(uuid.UUID))
	case *array.Decimal128Builder:
		b.Append(v.(iceberg.Decimal).Val)
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.(iceberg.Date)))
	case *array.Time64Builder:
		b.Append(arrow.Time64(v.(iceberg.Time)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.(iceberg.Timestamp)))
	default:
		return fmt.Errorf("no test support for builder %T", b)
	}
	return nil
}

// dec makes an iceberg.Decimal from its text at a scale.
func dec(s string, prec, scale int32) iceberg.Decimal {
	n, err := decimal.Decimal128FromString(s, prec, scale)
	if err != nil {
		panic(err)
	}
	return iceberg.Decimal{Val: n, Scale: int(scale)}
}

func globWAL(dir string) ([]string, error) {
	return filepath.Glob(filepath.Join(dir, "*-wal"))
}

// shape prints a type without its field IDs, which a table's create renumbers.
func shape(t iceberg.Type) string {
	switch t := t.(type) {
	case *iceberg.ListType:
		return "list<" + shape(t.Element) + ">"
	case *iceberg.MapType:
		return "map<" + shape(t.KeyType) + "," + shape(t.ValueType) + ">"
	case *iceberg.StructType:
		s := "struct<"
		for i, f := range t.FieldList {
			if i > 0 {
				s += ","
			}
			s += f.Name + ":" + shape(f.Type)
		}
		return s + ">"
	}
	return t.String()
}
