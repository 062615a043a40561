package inspect

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// testColumns are the columns of the test table, the demo's shape: flat,
// nested and list columns, so that nested field IDs show.
var testColumns = []config.Column{
	{Name: "event_id", Type: "string", Required: true},
	{Name: "tenant", Type: "string"},
	{Name: "ts", Type: "timestamptz", Required: true},
	{Name: "user", Type: "struct<id:long,agent:string>"},
	{Name: "tags", Type: "list<string>"},
}

// testPartition partitions by tenant and by day of ts.
var testPartition = []config.PartitionField{
	{Column: "tenant", Transform: "identity"},
	{Column: "ts", Transform: "day"},
}

// testSchema returns the table's schema and spec as the tables package
// builds them from a create block.
func testSchema(t *testing.T) (*iceberg.Schema, iceberg.PartitionSpec) {
	t.Helper()
	sc, err := tables.BuildSchema(testColumns)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := tables.BuildSpec(sc, testPartition)
	if err != nil {
		t.Fatal(err)
	}
	return sc, spec
}

// writeSegment writes a WAL segment at path the way the consumer does: the
// Arrow schema with Iceberg field IDs, zstd, the Arrow schema stored, the
// partition values under walfile.MetaPartition (unless partition is
// empty), and one row group per batch of JSON rows.
func writeSegment(t *testing.T, path string, schema *iceberg.Schema, partition string, batches ...string) {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(schema, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithStats(true))
	// Like the consumer's countingWriter, a wrapper without Close keeps
	// the writer's Close from closing the file before its fsync.
	w, err := pqarrow.NewFileWriter(sc, struct{ io.Writer }{f}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if partition != "" {
		if err := w.AppendKeyValueMetadata(walfile.MetaPartition, partition); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range batches {
		rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(b))
		if err != nil {
			t.Fatalf("rows %s: %v", b, err)
		}
		err = w.Write(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// Two batches of rows of the test schema, partition tenant=acme and
// day 2024-03-01 (19783 days after the epoch).
const (
	batch1 = `[
{"event_id": "e1", "tenant": "acme", "ts": "2024-03-01T10:00:00Z", "user": {"id": 7, "agent": "curl"}, "tags": ["a", "b"]},
{"event_id": "e2", "tenant": "acme", "ts": "2024-03-01T11:00:00Z", "user": null, "tags": []},
{"event_id": "e3", "tenant": "acme", "ts": "2024-03-01T12:00:00Z", "user": {"id": 8, "agent": null}, "tags": null}
]`
	batch2 = `[
{"event_id": "e4", "tenant": "acme", "ts": "2024-03-01T23:59:59.999999Z", "user": {"id": 9, "agent": "go"}, "tags": ["c"]},
{"event_id": "e5", "tenant": "acme", "ts": "2024-03-01T00:00:00Z", "user": null, "tags": null}
]`
	acmeDay = `{"1000":"acme","1001":19783}`
)

var testUUID = uuid.MustParse("0b8f3a52-6a0e-4f4e-9d1c-2f1f7c1d9e11")

// readyName is the ready name of the test segment.
func readyName() walfile.Name {
	return walfile.Name{State: walfile.Ready, Topic: "web_clicks", Partition: 3, Start: 100, End: 104, UUID: testUUID}
}

// testConfig returns a configuration whose dataset reads topic web_clicks
// into table web.clicks, with an SQLite catalog and file warehouse in dir.
func testConfig(t *testing.T, dir string) *config.Config {
	t.Helper()
	doc := `
ingestion: {wal: {dir: ` + filepath.Join(dir, "wal") + `}}
kafka: {brokers: ["127.0.0.1:9092"]}
catalog:
  name: test
  type: sql
  uri: "file:` + filepath.Join(dir, "catalog.db") + `"
  sql.driver: sqlite
  sql.dialect: sqlite
  warehouse: "file://` + filepath.Join(dir, "warehouse") + `"
datasets:
  - name: clicks
    topic: web_clicks
    table: web.clicks
    customMapping: {event_id: id, tenant: t, ts: ts, user: user, tags: tags}
    create:
      columns:
        - {name: event_id, type: string, required: true}
        - {name: tenant, type: string}
        - {name: ts, type: timestamptz, required: true}
        - {name: user, type: "struct<id:long,agent:string>"}
        - {name: tags, type: "list<string>"}
      partition:
        - {column: tenant, transform: identity}
        - {column: ts, transform: day}
`
	cfg, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// createTable creates the dataset's table in the configured catalog, as
// the roles do at start.
func createTable(t *testing.T, cfg *config.Config) *table.Table {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cat, err := tables.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.(catalog.Closer).Close()
	tbl, err := tables.Load(ctx, cat, cfg.Datasets[0])
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
