package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
)

// TestTableHealth builds a small table in Azurite with a SQLite catalog,
// as the soak run's table is, commits three appends of known files to it
// and checks that the health a checkpoint reports counts what was
// committed: metadata versions, manifests, data files, small files per
// partition, the files each scan plan returns and the bytes written.
func TestTableHealth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	az, err := devenv.StartAzurite(ctx, filepath.Join(t.TempDir(), "azurite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { az.Stop() })
	if err := az.CreateContainer(ctx, "warehouse"); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{
		"type": "sql", "uri": "file:" + filepath.Join(t.TempDir(), "catalog.db"),
		"sql.driver": "sqlite", "sql.dialect": "sqlite",
		"warehouse": az.Location("warehouse", "wh"),
	}
	for k, v := range az.Properties() {
		props[k] = v
	}
	spec := iceberg.NewPartitionSpec(
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "tenant", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1001, Name: "ts_hour", Transform: iceberg.HourTransform{}})
	tbl := eventsTable(t, props, catalog.WithPartitionSpec(&spec))

	hour := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	// Three appends: tenant a in two hours, tenant b in one. Each append
	// writes one file per partition it touches.
	appends := [][]struct {
		tenant string
		at     time.Time
		rows   int
	}{
		{{"a", hour, 10}, {"b", hour, 5}},
		{{"a", hour.Add(90 * time.Minute), 7}},
		{{"a", hour.Add(10 * time.Minute), 3}, {"b", hour.Add(20 * time.Minute), 4}},
	}
	seq := 0
	for _, rowsOf := range appends {
		var ids, tenants []string
		var tss []arrow.Timestamp
		for _, r := range rowsOf {
			for range r.rows {
				ids = append(ids, fmt.Sprintf("e%d", seq))
				tenants = append(tenants, r.tenant)
				tss = append(tss, arrow.Timestamp(r.at.UnixMicro()))
				seq++
			}
		}
		tx := tbl.NewTransaction()
		if err := tx.AppendTable(ctx, arrowTable(t, ids, tenants, tss), 1024, nil); err != nil {
			t.Fatal(err)
		}
		if tbl, err = tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}

	list := func(ctx context.Context, location string) ([]object, error) {
		blobs, err := az.ListBlobs(ctx, location)
		out := make([]object, len(blobs))
		for i, b := range blobs {
			out[i] = object{path: b.Location, size: b.Size}
		}
		return out, err
	}
	h, err := tableHealth(ctx, tbl, list, tenantHour{tenant: "a", hour: hour})
	if err != nil {
		t.Fatal(err)
	}
	// The created table's metadata.json and one per append, a manifest
	// list and a manifest per append (fast appends never merge).
	checks := []struct {
		name      string
		got, want int64
	}{
		{"snapshots", int64(h.Snapshots), 3},
		{"manifests", int64(h.Manifests), 3},
		{"metadata.json files", int64(h.MetadataJSONFiles), 4},
		{"metadata dir files", int64(h.MetadataDirFiles), 4 + 3 + 3},
		{"data files", int64(h.DataFiles), 5},
		{"partitions", int64(h.Partitions), 3},
		{"small files", int64(h.SmallFiles), 5},
		{"small files in the fullest partition (a, 10h)", int64(h.SmallFilesMaxPerPartition), 2},
		{"files in the fullest partition", int64(h.FilesMaxPerPartition), 2},
		{"files per partition, tenths", int64(10 * h.FilesPerPartition), 17},
		{"small files, percent", int64(h.SmallFilesPct), 100},
		{"files planned for the table", int64(h.ScanPlanTableFiles), 5},
		{"files planned for a/10h", int64(h.ScanPlanPartitionFiles), 2},
		{"target file size", h.TargetFileSizeBytes, table.WriteTargetFileSizeBytesDefault},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
	if h.ScanPartition != "a/2026-12-01T10" {
		t.Errorf("scan partition %q", h.ScanPartition)
	}

	// Sizes: the current metadata.json is the newest of the listed ones,
	// and the data bytes are what the appends say they added.
	objs, err := list(ctx, tbl.MetadataLocation())
	if err != nil || len(objs) != 1 || objs[0].size != h.MetadataJSONBytes || h.MetadataJSONBytes == 0 {
		t.Errorf("metadata.json %d bytes, listed %+v (%v)", h.MetadataJSONBytes, objs, err)
	}
	if h.MetadataDirBytes <= h.MetadataJSONBytes {
		t.Errorf("metadata dir %d bytes, not more than its metadata.json's %d", h.MetadataDirBytes, h.MetadataJSONBytes)
	}
	if p := h.FileSizeBytes; !(0 < p["p10"] && p["p10"] <= p["p50"] && p["p50"] <= p["p90"]) {
		t.Errorf("file size quantiles %v", p)
	}
	var w writeLedger
	w.add(tbl)
	w.add(tbl) // a snapshot seen twice counts once
	w.fill(h, -1)
	if h.BytesAppended != h.DataBytes || h.BytesRewritten != 0 || h.WriteAmplification != 1 || h.RewriteSource != "snapshots" {
		t.Errorf("appended %d (data %d), rewritten %d, amplification %v from %s; want the data bytes, 0, 1 from snapshots",
			h.BytesAppended, h.DataBytes, h.BytesRewritten, h.WriteAmplification, h.RewriteSource)
	}
	// The maintainer's counter, where it exists, counts the rewrites.
	w.fill(h, float64(2*h.BytesAppended))
	if h.WriteAmplification != 3 || h.RewriteSource != "metric" {
		t.Errorf("with the metric: amplification %v from %s, want 3 from metric", h.WriteAmplification, h.RewriteSource)
	}
}

func arrowTable(t *testing.T, ids, tenants []string, tss []arrow.Timestamp) arrow.Table {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: devenv.ColumnID, Type: arrow.BinaryTypes.String},
		{Name: devenv.ColumnTenant, Type: arrow.BinaryTypes.String},
		{Name: devenv.ColumnTS, Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues(ids, nil)
	b.Field(1).(*array.StringBuilder).AppendValues(tenants, nil)
	b.Field(2).(*array.TimestampBuilder).AppendValues(tss, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	tb := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	t.Cleanup(tb.Release)
	return tb
}

func TestCommitDurations(t *testing.T) {
	log := strings.Join([]string{
		`{"time":"2026-12-01T21:00:00Z","level":"INFO","msg":"committed","role":"committer","dataset":"bench","files":6,"rows":1400,"snapshot":1,"attempts":1,"duration_ms":41}`,
		`{"time":"2026-12-01T21:00:00Z","level":"INFO","msg":"committer started"}`,
		`2026-12-01T21:00:01Z [committer] {"level":"INFO","msg":"committed","files":2,"duration_ms":312}`,
		`{"level":"INFO","msg":"segment rotated","file":"committed"}`,
		`not json "committed"`,
		"",
	}, "\n")
	got := commitDurations([]byte(log))
	if len(got) != 2 || got[0] != 41 || got[1] != 312 {
		t.Errorf("commitDurations = %v, want [41 312]", got)
	}
}

// eventsTable creates bench.events, of the bench's id, tenant and ts
// columns, in the SQL catalog of props; the catalog closes with the test.
func eventsTable(t *testing.T, props map[string]string, opts ...catalog.CreateTableOpt) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat, err := tables.OpenCatalog(ctx, config.Catalog{Name: "bench", Properties: props})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, ok := cat.(catalog.Closer); ok {
			c.Close()
		}
	})
	if err := cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil); err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: devenv.ColumnID, Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 2, Name: devenv.ColumnTenant, Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: devenv.ColumnTS, Type: iceberg.PrimitiveTypes.TimestampTz, Required: true})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"bench", "events"}, schema, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
