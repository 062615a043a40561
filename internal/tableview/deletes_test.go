package tableview

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
)

// describe shows a table's delete files: how many of each kind, the most
// in one partition, their records, and the partitions that have them.
// Here a table of the fixture's shape gets the first append and an
// equality delete of one key in the partition acme/2024-03-01.
func TestDescribeShowsDeleteFiles(t *testing.T) {
	if fixture.err != nil {
		t.Fatalf("set up the table: %v", fixture.err)
	}
	b, err := os.ReadFile(fixture.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	yaml := strings.Replace(string(b), "- name: clicks\n    topic: clicks\n    table: web.clicks", "- name: orders\n    topic: orders\n    table: web.orders", 1)
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := tables.OpenCatalog(ctx(t), cfg.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.(catalog.Closer).Close()
	tbl, err := tables.Load(ctx(t), cat, cfg.Datasets[0])
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = appendRows(ctx(t), tbl, append1, nil); err != nil {
		t.Fatal(err)
	}
	// An equality delete of event_id a1, with the partition's source
	// columns, so that it lands in a1's partition.
	field, _ := tbl.Schema().FindFieldByName("event_id")
	tenant, _ := tbl.Schema().FindFieldByName("tenant")
	ts, _ := tbl.Schema().FindFieldByName("ts")
	sc, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, field, tenant, ts), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(`[{"event_id": "a1", "tenant": "acme", "ts": "2024-03-01T10:00:00Z"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	tx := tbl.NewTransaction()
	files, err := tx.WriteEqualityDeletes(ctx(t), []int{field.ID}, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) })
	if err != nil {
		t.Fatalf("write the equality delete: %v", err)
	}
	if err := tx.NewRowDelta(nil).AddDeletes(files...).Commit(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx(t)); err != nil {
		t.Fatalf("commit the equality delete: %v", err)
	}

	v, err := Open(ctx(t), cfg, "orders")
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	d, err := v.Describe(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	x := d.Deletes
	if x == nil || x.Files() != 1 || x.EqualityFiles != 1 || x.MaxPartitionFiles != 1 || x.DeletedRecords != 1 || len(x.Partitions) != 1 {
		t.Fatalf("deletes %+v, want one equality delete file of one key, in one partition", x)
	}
	if p := x.Partitions[0]; p.DataFiles != 1 || p.Rows != 3 || !strings.Contains(p.Partition, `"acme"`) {
		t.Errorf("partition with the delete %+v, want acme's of one data file of 3 rows", p)
	}
	var text bytes.Buffer
	if err := WriteDescription(&text, d, FormatText); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{"delete files", "1 (0 position, 1 equality, 0 deletion vectors), at most 1 in a partition"},
		{"deleted records", "1"},
		{x.Partitions[0].Partition, "1", "1", "1", "3"},
	} {
		if !hasLine(text.String(), want...) {
			t.Errorf("text lacks a line %q:\n%s", want, text.String())
		}
	}
}
