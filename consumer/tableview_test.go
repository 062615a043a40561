package consumer

import (
	"context"
	"encoding/json"
	itest "github.com/icewal/ingestor/internal/testutil"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// segmentSchema reads a ready file's recorded table identity and its
// columns' names and field ids.
func segmentSchema(t *testing.T, path string) (walfile.TableIdentity, map[string]int) {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var id walfile.TableIdentity
	if v := r.MetaData().KeyValueMetadata().FindValue(walfile.MetaTable); v != nil {
		if err := json.Unmarshal([]byte(*v), &id); err != nil {
			t.Fatal(err)
		}
	}
	cols := map[string]int{}
	root := r.MetaData().Schema.Root()
	for i := 0; i < root.NumFields(); i++ {
		cols[root.Field(i).Name()] = int(root.Field(i).FieldID())
	}
	return id, cols
}

// TestConsumerTakesSchemaChangeAtNextRotation: another engine adds a
// column and a partition field to the table while the consumer runs. The
// segments written after the next rotation carry the new column with its
// field id and record the new schema and spec; those written before
// record the old ones and hold the columns they had; every record is in
// exactly one file, and the change is logged.
func TestConsumerTakesSchemaChangeAtNextRotation(t *testing.T) {
	var logs itest.SyncBuffer
	e := startConsumer(t, func(c *Consumer) {
		c.tableEvery = 100 * time.Millisecond
		c.log = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	e.produce(t, 0, 30)
	waitFor(t, "30 records consumed", 20*time.Second, func() bool { return e.consumed() == 30 })
	waitFor(t, "first offsets committed", 20*time.Second, func() bool { return e.committed(t) == 30 })

	ctx := context.Background()
	cat, err := tables.OpenCatalog(ctx, e.cfg.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.(catalog.Closer).Close()
	tbl, err := cat.LoadTable(ctx, table.Identifier(e.cfg.Datasets[0].TableIdent()))
	if err != nil {
		t.Fatal(err)
	}
	old := tbl.Schema().ID
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"country"}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if err := tx.UpdateSpec(true).AddField("ts", iceberg.DayTransform{}, "ts_day").Commit(); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	country, _ := tbl.Schema().FindFieldByName("country")
	spec := tbl.Spec()
	newSpec := spec.ID()

	// Records keep coming; the change is taken at a rotation after the
	// watch saw it.
	produced := 30
	waitFor(t, "a segment written with the new schema", 30*time.Second, func() bool {
		e.produce(t, produced, 10)
		produced += 10
		for _, f := range readyFiles(t, e.cfg.Ingestion.WAL.Dir) {
			if id, _ := segmentSchema(t, f.Path); id.SchemaID == tbl.Schema().ID {
				return true
			}
		}
		time.Sleep(200 * time.Millisecond)
		return false
	})
	waitFor(t, "every offset committed", 20*time.Second, func() bool { return e.committed(t) == int64(produced) })

	var rows int64
	var before, after int
	for _, f := range readyFiles(t, e.cfg.Ingestion.WAL.Dir) {
		id, cols := segmentSchema(t, f.Path)
		switch id.SchemaID {
		case old:
			before++
			if _, ok := cols["country"]; ok || id.SpecID == newSpec {
				t.Errorf("%s records schema %d, spec %d but has columns %v", f.Name, id.SchemaID, id.SpecID, cols)
			}
		case tbl.Schema().ID:
			after++
			if cols["country"] != country.ID || id.SpecID != newSpec {
				t.Errorf("%s records schema %d, spec %d with columns %v, want country with field id %d and spec %d",
					f.Name, id.SchemaID, id.SpecID, cols, country.ID, newSpec)
			}
		default:
			t.Errorf("%s records schema %d", f.Name, id.SchemaID)
		}
		r, err := file.OpenParquetFile(f.Path, false)
		if err != nil {
			t.Fatal(err)
		}
		rows += r.NumRows()
		r.Close()
	}
	if before == 0 || after == 0 {
		t.Errorf("%d segments with the old schema, %d with the new one: want both", before, after)
	}
	if rows != int64(produced) {
		t.Errorf("ready files hold %d rows, want the %d produced, each once", rows, produced)
	}
	if !strings.Contains(logs.String(), "table schema changed; new segments use it") {
		t.Errorf("no log line of the change in:\n%s", logs.String())
	}
}

// TestConsumerKeepsItsTableWhenRecreatedWithOtherFieldIDs: the table is
// dropped and recreated with two columns' field ids swapped while the
// consumer runs. It logs the recreation and goes on writing for the table
// it had (the committer stops the appends until an operator acts), never
// for the new one with its rows' values under the other ids.
func TestConsumerKeepsItsTableWhenRecreatedWithOtherFieldIDs(t *testing.T) {
	var logs itest.SyncBuffer
	e := startConsumer(t, func(c *Consumer) {
		c.tableEvery = 100 * time.Millisecond
		c.log = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	e.produce(t, 0, 30)
	waitFor(t, "30 records consumed", 20*time.Second, func() bool { return e.consumed() == 30 })
	ctx := context.Background()
	cat, err := tables.OpenCatalog(ctx, e.cfg.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.(catalog.Closer).Close()
	ds := e.cfg.Datasets[0]
	old, err := cat.LoadTable(ctx, table.Identifier(ds.TableIdent()))
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.DropTable(ctx, table.Identifier(ds.TableIdent())); err != nil {
		t.Fatal(err)
	}
	cols := ds.Create.Columns
	swapped := ds
	c := *ds.Create
	c.Columns = []config.Column{cols[1], cols[0], cols[2]}
	swapped.Create = &c
	recreated, err := tables.Load(ctx, cat, swapped)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the recreation logged", 20*time.Second, func() bool {
		return strings.Contains(logs.String(), "the recreated table's columns carry other field ids")
	})
	produced := 30
	for range 5 {
		e.produce(t, produced, 10)
		produced += 10
		time.Sleep(300 * time.Millisecond)
	}
	waitFor(t, "every offset committed", 20*time.Second, func() bool { return e.committed(t) == int64(produced) })
	for _, f := range readyFiles(t, e.cfg.Ingestion.WAL.Dir) {
		id, _ := segmentSchema(t, f.Path)
		if id.UUID != old.Metadata().TableUUID().String() {
			t.Errorf("%s written for table %s, want the table the consumer had (%s), not the recreated %s",
				f.Name, id.UUID, old.Metadata().TableUUID(), recreated.Metadata().TableUUID())
		}
	}
	if !strings.Contains(logs.String(), `"msg":"table recreated: its UUID changed"`) {
		t.Error("the recreation is not logged")
	}
}
