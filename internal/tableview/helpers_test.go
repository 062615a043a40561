package tableview

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
)

// fixture is a table in an SQLite catalog with its warehouse in Azurite,
// holding two appends with known rows, made with the committer's
// snapshot summary fields.
var fixture struct {
	cfg      *config.Config
	cfgPath  string
	segments [2]uuid.UUID
	err      error
}

// The rows of the two appends: 3 + 2 rows in two partitions, then 4 rows
// in the first partition again. 9 rows, 3 data files.
const (
	append1 = `[
{"event_id": "a1", "tenant": "acme", "ts": "2024-03-01T10:00:00Z", "user": {"id": 7, "agent": "curl"}, "tags": ["x", "y"], "amount": 1.5},
{"event_id": "a2", "tenant": "acme", "ts": "2024-03-01T11:00:00Z", "user": null, "tags": [], "amount": null},
{"event_id": "a3", "tenant": "acme", "ts": "2024-03-01T12:00:00Z", "user": {"id": 8, "agent": null}, "tags": null, "amount": 2},
{"event_id": "g1", "tenant": "globex", "ts": "2024-03-02T00:30:00Z", "user": {"id": 9, "agent": "go"}, "tags": ["z"], "amount": 3.25},
{"event_id": "g2", "tenant": "globex", "ts": "2024-03-02T23:59:59Z", "user": null, "tags": null, "amount": null}
]`
	append2 = `[
{"event_id": "a4", "tenant": "acme", "ts": "2024-03-01T13:00:00Z", "user": null, "tags": null, "amount": null},
{"event_id": "a5", "tenant": "acme", "ts": "2024-03-01T14:00:00Z", "user": null, "tags": null, "amount": null},
{"event_id": "a6", "tenant": "acme", "ts": "2024-03-01T15:00:00Z", "user": null, "tags": null, "amount": null},
{"event_id": "a7", "tenant": "acme", "ts": "2024-03-01T16:00:00Z", "user": null, "tags": null, "amount": null}
]`
	totalRows = 9
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tableview")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	az, err := setUp(dir)
	fixture.err = err
	code := m.Run()
	if az != nil {
		az.Stop()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func setUp(dir string) (*devenv.Azurite, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	az, err := devenv.StartAzurite(ctx, filepath.Join(dir, "azurite"))
	if err != nil {
		return nil, err
	}
	if err := az.CreateContainer(ctx, "warehouse"); err != nil {
		return az, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, `ingestion: {wal: {dir: %q}}
kafka: {brokers: ["127.0.0.1:9092"]}
catalog:
  name: test
  type: sql
  uri: "file:%s"
  sql.driver: sqlite
  sql.dialect: sqlite
  warehouse: %q
`, filepath.Join(dir, "wal"), filepath.Join(dir, "catalog.db"), az.Location("warehouse", "wh"))
	for k, v := range az.Properties() {
		fmt.Fprintf(&b, "  %s: %q\n", k, v)
	}
	b.WriteString(`datasets:
  - name: clicks
    topic: clicks
    table: web.clicks
    customMapping: {event_id: id, tenant: t, ts: ts, user: user, tags: tags, amount: amount}
    create:
      columns:
        - {name: event_id, type: string, required: true}
        - {name: tenant, type: string}
        - {name: ts, type: timestamptz, required: true}
        - {name: user, type: "struct<id:long,agent:string>"}
        - {name: tags, type: "list<string>"}
        - {name: amount, type: double}
      partition:
        - {column: tenant, transform: identity}
        - {column: ts, transform: day}
      properties: {write.note: "https://example.blob.core.windows.net/c?sv=2024&sig=tablepropsecret"}
`)
	fixture.cfgPath = filepath.Join(dir, "ingestor.yaml")
	if err := os.WriteFile(fixture.cfgPath, []byte(b.String()), 0o644); err != nil {
		return az, err
	}
	cfg, err := config.Load(fixture.cfgPath)
	if err != nil {
		return az, err
	}
	fixture.cfg = cfg
	cat, err := tables.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		return az, err
	}
	defer cat.(catalog.Closer).Close()
	tbl, err := tables.Load(ctx, cat, cfg.Datasets[0])
	if err != nil {
		return az, err
	}
	for i, rows := range []string{append1, append2} {
		fixture.segments[i] = uuid.New()
		if tbl, err = appendRows(ctx, tbl, rows, tables.SnapshotProperties("clicks", []uuid.UUID{fixture.segments[i]})); err != nil {
			return az, fmt.Errorf("append %d: %w", i+1, err)
		}
	}
	return az, nil
}

// appendRows appends JSON rows to tbl with iceberg-go's writer, which
// writes one data file per partition.
func appendRows(ctx context.Context, tbl *table.Table, rows string, props map[string]string) (*table.Table, error) {
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, err
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(rows))
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	return tbl.Append(ctx, rdr, props)
}

// openView opens the fixture's table.
func openView(t *testing.T) *View {
	t.Helper()
	if fixture.err != nil {
		t.Fatalf("set up the table: %v", fixture.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := Open(ctx, fixture.cfg, "clicks")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return v
}
