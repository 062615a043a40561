package consumer

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/config"
)

// newWideWriter is a writer for a 203-column flat table (event_id,
// tenant, ts and 200 optional strings), partitioned by tenant.
func newWideWriter(t *testing.T, wal config.WAL) (*writer, *commitLog) {
	t.Helper()
	fields := []iceberg.NestedField{
		{ID: 1, Name: "event_id", Type: iceberg.PrimitiveTypes.String, Required: true},
		{ID: 2, Name: "tenant", Type: iceberg.PrimitiveTypes.String},
		{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	}
	mapping := map[string]string{"event_id": "id", "tenant": "tenant", "ts": "ts"}
	for i := 0; i < 200; i++ {
		name := fmt.Sprintf("c%03d", i)
		fields = append(fields, iceberg.NestedField{ID: 10 + i, Name: name, Type: iceberg.PrimitiveTypes.String})
		mapping[name] = name
	}
	schema := iceberg.NewSchema(0, fields...)
	spec := iceberg.NewPartitionSpecID(0,
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "tenant", Transform: iceberg.IdentityTransform{}})
	wal.Dir = t.TempDir()
	ds := config.Dataset{Name: "clicks", Topic: "clicks_v1", CustomMapping: mapping}
	cl := &commitLog{dir: wal.Dir}
	w, err := newWriter(ds, wal, schema, &spec, discardLogger(), newMetrics(newRegistry()), newBudgetAllocator(), cl.commit)
	if err != nil {
		t.Fatal(err)
	}
	return w, cl
}

// wideEvent sets 40 of the 200 columns, about 2.4 KB of JSON.
func wideEvent(i int, tenant string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":"e%d","tenant":%q,"ts":"2026-11-30T10:00:00Z"`, i, tenant)
	for k := 0; k < 40; k++ {
		fmt.Fprintf(&b, `,"c%03d":"%d-%s"`, (i*7+k*5)%200, i, strings.Repeat("v", 40))
	}
	b.WriteString("}")
	return []byte(b.String())
}

// TestBudgetSpillsRowsWithoutWriters opens 400 segments of a 203-column
// table and fills them past the budget's flush mark: the rows go to spill
// files, no segment makes a Parquet file or writer before rotation, no
// partition rotates for memory, and every row reaches a file once.
func TestBudgetSpillsRowsWithoutWriters(t *testing.T) {
	ctx := context.Background()
	const budget = 16 << 20 // flush mark 4 MiB; the rows are about 8 MiB encoded
	w, _ := newWideWriter(t, config.WAL{MemoryBudgetBytes: budget, MaxFileSizeBytes: 64 << 20,
		MaxFileAgeMinutes: 5, MaxOpenSegmentsPerPartition: 256})
	// Only the rows count here: the test process's own heap is larger
	// than this small budget. The whole path measures the real heap
	// (docs/benchmarks.md, 1,600 open segments).
	w.heap = func() (uint64, uint64) { return 0, 0 }
	const rows = 8000
	for i := 0; i < rows; i++ {
		must(t, w.record(ctx, int32(i%8), int64(i/8), wideEvent(i, fmt.Sprintf("tenant-%02d", (i/8)%50))))
	}
	if got := w.openSegments(); got != 400 {
		t.Fatalf("open segments = %d, want 400", got)
	}
	if testutil.ToFloat64(w.m.budgetFlushes.WithLabelValues("clicks")) == 0 {
		t.Fatal("the budget spilled no rows")
	}
	spilled := 0
	for _, st := range w.parts {
		for _, seg := range st.segs {
			if seg.w != nil || seg.cols != nil || seg.f != nil {
				t.Fatalf("segment %s has a Parquet file or writer with %d rows, under a row group", seg.name, seg.rows)
			}
			if seg.sp != nil {
				spilled++
			}
		}
	}
	if spilled == 0 {
		t.Fatal("no segment has a spill file")
	}
	if peak := w.mem.Peak(); peak > budget/2 {
		t.Fatalf("peak buffered memory %d over half the budget %d", peak, budget)
	}
	t.Logf("%d of 400 segments spilled; peak buffered memory %d bytes", spilled, w.mem.Peak())

	must(t, w.rotate(ctx, nil, TriggerShutdown))
	ids := map[string]int{}
	for _, f := range readyFiles(t, w.dir) {
		checkSegmentFile(t, f)
		for _, id := range readStrings(t, f.Path, "event_id") {
			ids[id]++
		}
	}
	if len(ids) != rows {
		t.Fatalf("files hold %d distinct rows, want %d", len(ids), rows)
	}
	for id, n := range ids {
		if n != 1 {
			t.Fatalf("row %s is in the files %d times", id, n)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(w.dir, "active_*")); len(left) != 0 {
		t.Fatalf("%d active or spill files left after rotation", len(left))
	}
	if cur := w.mem.Current(); cur != 0 {
		t.Fatalf("%d bytes still held after every segment closed", cur)
	}
}
