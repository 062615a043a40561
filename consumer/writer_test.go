package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/walfile"
)

// The writer is tested alone, with an injected clock and a recording
// commit function in place of Kafka: the rotation rules depend on time and
// on the order of renames and commits, which a broker cannot show. The
// Kafka side of the same path runs against kfake in the e2e tests.

type commitLog struct {
	calls []map[int32]int64
	// dirAtCommit holds the ready files present when each commit ran.
	dirAtCommit [][]string
	dir         string
}

func (c *commitLog) commit(_ context.Context, _ string, offsets map[int32]int64) error {
	cp := map[int32]int64{}
	for p, o := range offsets {
		cp[p] = o
	}
	c.calls = append(c.calls, cp)
	var names []string
	files, _ := walfile.List(c.dir)
	for _, f := range files {
		if f.State == walfile.Ready {
			names = append(names, f.Name.String())
		}
	}
	c.dirAtCommit = append(c.dirAtCommit, names)
	return nil
}

// last returns the last offset committed for partition p, -1 if none.
func (c *commitLog) last(p int32) int64 {
	off := int64(-1)
	for _, call := range c.calls {
		if o, ok := call[p]; ok {
			off = o
		}
	}
	return off
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func testSchema() (*iceberg.Schema, *iceberg.PartitionSpec) {
	s := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "event_id", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 2, Name: "tenant", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	)
	spec := iceberg.NewPartitionSpecID(0,
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "tenant", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1001, Name: "ts_day", Transform: iceberg.DayTransform{}},
	)
	return s, &spec
}

func newTestWriter(t *testing.T, wal config.WAL) (*writer, *commitLog, *clock) {
	t.Helper()
	wal.Dir = t.TempDir()
	if wal.MaxFileSizeBytes == 0 {
		wal.MaxFileSizeBytes = 64 << 20
	}
	if wal.MaxFileAgeMinutes == 0 {
		wal.MaxFileAgeMinutes = 5
	}
	if wal.MaxOpenSegmentsPerPartition == 0 {
		wal.MaxOpenSegmentsPerPartition = 256
	}
	ds := config.Dataset{Name: "clicks", Topic: "clicks_v1", CustomMapping: map[string]string{
		"event_id": "id", "tenant": "meta.tenant", "ts": "meta.ts",
	}}
	schema, spec := testSchema()
	cl := &commitLog{dir: wal.Dir}
	w, err := newWriter(ds, wal, schema, spec, discardLogger(), newMetrics(newRegistry()), newBudgetAllocator(), cl.commit)
	if err != nil {
		t.Fatal(err)
	}
	ck := &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	w.now = ck.now
	return w, cl, ck
}

func event(id int, tenant string) []byte {
	return []byte(fmt.Sprintf(`{"id":"e%d","meta":{"tenant":%q,"ts":"2026-11-30T10:00:%02dZ"}}`, id, tenant, id%60))
}

func readyFiles(t *testing.T, dir string) []walfile.File {
	t.Helper()
	files, err := walfile.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []walfile.File
	for _, f := range files {
		if f.State == walfile.Ready {
			out = append(out, f)
		}
	}
	return out
}

func TestRotationTriggers(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		wal  config.WAL
		// feed writes records and triggers rotations.
		feed        func(t *testing.T, w *writer, ck *clock)
		wantTrigger string
		wantReady   int
		wantCommits []map[int32]int64
	}{
		{
			name: "size",
			wal:  config.WAL{MaxFileSizeBytes: 40 << 10},
			feed: func(t *testing.T, w *writer, _ *clock) {
				// The only segment of partition 0 reaches the size limit:
				// the partition rotates and commits (with neighbours, the
				// segment rolls alone: TestSizeRollsTheSegmentAlone).
				for i := 0; i < 20000; i++ {
					must(t, w.record(ctx, 0, int64(i), event(i, "a")))
					if len(readyFiles(t, w.dir)) > 0 {
						return
					}
				}
				t.Fatal("no size rotation after 20000 records")
			},
			wantTrigger: TriggerSize,
			wantReady:   1,
		},
		{
			name: "age",
			wal:  config.WAL{MaxFileAgeMinutes: 0.5},
			feed: func(t *testing.T, w *writer, ck *clock) {
				must(t, w.record(ctx, 0, 10, event(1, "a")))
				must(t, w.record(ctx, 1, 20, event(2, "a")))
				ck.t = ck.t.Add(29 * time.Second)
				must(t, w.rotateAged(ctx))
				if n := len(readyFiles(t, w.dir)); n != 0 {
					t.Fatalf("rotated %d files before the age limit", n)
				}
				ck.t = ck.t.Add(time.Second)
				must(t, w.rotateAged(ctx))
			},
			wantTrigger: TriggerAge,
			wantReady:   2,
			wantCommits: []map[int32]int64{{0: 11, 1: 21}},
		},
		{
			name: "open segments per partition",
			wal:  config.WAL{MaxOpenSegmentsPerPartition: 2},
			feed: func(t *testing.T, w *writer, _ *clock) {
				must(t, w.record(ctx, 3, 100, event(1, "a")))
				must(t, w.record(ctx, 3, 101, event(2, "b")))
				if n := len(readyFiles(t, w.dir)); n != 0 {
					t.Fatalf("rotated %d files at the limit", n)
				}
				must(t, w.record(ctx, 3, 102, event(3, "c")))
			},
			wantTrigger: TriggerCount,
			wantReady:   3,
			wantCommits: []map[int32]int64{{3: 103}},
		},
		{
			name: "revoke rotates only the revoked partition",
			feed: func(t *testing.T, w *writer, _ *clock) {
				must(t, w.record(ctx, 0, 5, event(1, "a")))
				must(t, w.record(ctx, 1, 7, event(2, "a")))
				must(t, w.rotate(ctx, []int32{1}, TriggerRevoke))
				if got := w.openSegments(); got != 1 {
					t.Fatalf("open segments after revoking partition 1 = %d, want 1", got)
				}
			},
			wantTrigger: TriggerRevoke,
			wantReady:   1,
			wantCommits: []map[int32]int64{{1: 8}},
		},
		{
			name: "shutdown rotates everything",
			feed: func(t *testing.T, w *writer, _ *clock) {
				must(t, w.record(ctx, 0, 5, event(1, "a")))
				must(t, w.record(ctx, 0, 6, event(2, "b")))
				must(t, w.record(ctx, 2, 9, event(3, "a")))
				must(t, w.rotate(ctx, nil, TriggerShutdown))
			},
			wantTrigger: TriggerShutdown,
			wantReady:   3,
			wantCommits: []map[int32]int64{{0: 7, 2: 10}},
		},
		{
			name: "dropped records still advance the offset",
			wal:  config.WAL{MaxFileAgeMinutes: 0.5},
			feed: func(t *testing.T, w *writer, ck *clock) {
				must(t, w.record(ctx, 0, 40, []byte(`not json`)))
				must(t, w.record(ctx, 0, 41, []byte(`{"id":"x"}`)))
				ck.t = ck.t.Add(time.Minute)
				must(t, w.rotateAged(ctx))
			},
			wantReady:   0,
			wantCommits: []map[int32]int64{{0: 42}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, cl, ck := newTestWriter(t, tc.wal)
			tc.feed(t, w, ck)
			ready := readyFiles(t, w.dir)
			if len(ready) != tc.wantReady {
				t.Fatalf("ready files = %d, want %d", len(ready), tc.wantReady)
			}
			if tc.wantCommits != nil && fmt.Sprint(cl.calls) != fmt.Sprint(tc.wantCommits) {
				t.Fatalf("commits = %v, want %v", cl.calls, tc.wantCommits)
			}
			if len(cl.calls) == 0 {
				t.Fatal("no offset commit after rotation")
			}
			// Every ready file of a rotation was renamed and visible before
			// the offset commit ran.
			if tc.wantReady > 0 && len(cl.dirAtCommit[0]) != tc.wantReady {
				t.Fatalf("ready files at commit time = %d, want %d", len(cl.dirAtCommit[0]), tc.wantReady)
			}
			// The commit covers every record of the rotated partitions.
			for _, f := range ready {
				if off := cl.calls[0][f.Partition]; off != f.End+1 && off <= f.End {
					t.Errorf("%s: committed offset %d does not cover its last offset %d", f.Name, off, f.End)
				}
			}
			for _, f := range ready {
				checkSegmentFile(t, f)
			}
		})
	}
}

// checkSegmentFile opens a ready file as a Parquet file and checks its
// rows count, its offsets and its partition metadata.
func checkSegmentFile(t *testing.T, f walfile.File) {
	t.Helper()
	r, err := file.OpenParquetFile(f.Path, false)
	if err != nil {
		t.Fatalf("open %s: %v", f.Name, err)
	}
	defer r.Close()
	if r.NumRows() == 0 {
		t.Errorf("%s has no rows", f.Name)
	}
	if r.NumRows() > f.End-f.Start+1 {
		t.Errorf("%s: %d rows for offsets %d-%d", f.Name, r.NumRows(), f.Start, f.End)
	}
	kv := r.MetaData().KeyValueMetadata()
	if v := kv.FindValue(walfile.MetaPartition); v == nil || *v == "" {
		t.Errorf("%s: no %s footer metadata", f.Name, walfile.MetaPartition)
	}
	// Every ready file has a checksum record that matches its content.
	sum, err := walfile.ReadSum(filepath.Dir(f.Path), f.UUID)
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	if err := walfile.Verify(f.Path, sum); err != nil {
		t.Error(err)
	}
}

func TestRotationRenamesBeforeCommitAndNamesOffsets(t *testing.T) {
	ctx := context.Background()
	w, cl, _ := newTestWriter(t, config.WAL{})
	// Offsets of two tenants interleave in one partition.
	for i := 0; i < 10; i++ {
		tenant := []string{"a", "b"}[i%2]
		must(t, w.record(ctx, 0, int64(100+i), event(i, tenant)))
	}
	// Segments of a few rows are in memory only: their files are made
	// at rotation.
	entries, _ := os.ReadDir(w.dir)
	var active int
	for _, e := range entries {
		if n, err := walfile.Parse(e.Name()); err == nil && n.State == walfile.Active {
			active++
		}
	}
	if active != 0 {
		t.Fatalf("active files on disk = %d before the first row group, want 0", active)
	}
	must(t, w.rotate(ctx, nil, TriggerShutdown))
	ready := readyFiles(t, w.dir)
	var ranges []string
	for _, f := range ready {
		ranges = append(ranges, fmt.Sprintf("%d-%d", f.Start, f.End))
	}
	sort.Strings(ranges)
	if fmt.Sprint(ranges) != "[100-108 101-109]" {
		t.Fatalf("ready offset ranges = %v, want [100-108 101-109]", ranges)
	}
	if fmt.Sprint(cl.calls) != "[map[0:110]]" {
		t.Fatalf("commits = %v, want [map[0:110]]", cl.calls)
	}
	left, _ := filepath.Glob(filepath.Join(w.dir, "active_*"))
	if len(left) != 0 {
		t.Fatalf("active files left after rotation: %v", left)
	}
}

func TestDiscardDeletesActiveSegments(t *testing.T) {
	ctx := context.Background()
	w, cl, _ := newTestWriter(t, config.WAL{})
	must(t, w.record(ctx, 0, 1, event(1, "a")))
	must(t, w.record(ctx, 1, 1, event(2, "a")))
	must(t, w.discard([]int32{0}))
	left, _ := filepath.Glob(filepath.Join(w.dir, "active_clicks_v1_0_*"))
	if len(left) != 0 || len(cl.calls) != 0 {
		t.Fatalf("after discard: active files %v, commits %v", left, cl.calls)
	}
	if w.openSegments() != 1 {
		t.Fatalf("open segments = %d, want 1", w.openSegments())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newRegistry() *prometheus.Registry { return prometheus.NewRegistry() }

// rowsInFiles counts the rows of the ready files in dir.
func rowsInFiles(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	for _, f := range readyFiles(t, dir) {
		r, err := file.OpenParquetFile(f.Path, false)
		if err != nil {
			t.Fatal(err)
		}
		n += r.NumRows()
		r.Close()
	}
	return n
}

// TestMemoryBudgetFlushesLargestSegments fills a few segments with large
// rows: the buffered rows go to disk as row groups before the files close,
// and the Arrow memory stays near the flush mark.
func TestMemoryBudgetFlushesLargestSegments(t *testing.T) {
	ctx := context.Background()
	const budget = 8 << 20
	w, _, _ := newTestWriter(t, config.WAL{MemoryBudgetBytes: budget})
	w.heap = func() (uint64, uint64) { return 0, 0 } // only the rows count here
	const rows = 12_000
	for i := 0; i < rows; i++ {
		p := int32(i % 4)
		tenant := fmt.Sprintf("tenant-%d", (i/4)%2)
		payload := fmt.Sprintf(`{"id":"e%d-%s","meta":{"tenant":%q,"ts":"2026-11-30T10:00:00Z"}}`, i, strings.Repeat("x", 2000), tenant)
		must(t, w.record(ctx, p, int64(i/4), []byte(payload)))
	}
	if got := w.openSegments(); got != 8 {
		t.Fatalf("open segments = %d, want 8", got)
	}
	peak := w.mem.Peak()
	t.Logf("peak arrow+parquet memory %d bytes with a budget of %d", peak, budget)
	// The flush mark is 1/4 of the budget; a builder doubling its buffer
	// can pass it by that buffer's size before the flush.
	if peak > budget/2 {
		t.Fatalf("peak memory %d is over half the budget %d", peak, budget)
	}
	if testutil.ToFloat64(w.m.budgetFlushes.WithLabelValues("clicks")) == 0 {
		t.Fatal("no early row-group flush")
	}
	must(t, w.rotate(ctx, nil, TriggerShutdown))
	if n := rowsInFiles(t, w.dir); n != rows {
		t.Fatalf("files hold %d rows, want %d", n, rows)
	}
	if cur := w.mem.Current(); cur != 0 {
		t.Fatalf("%d bytes still held after every segment closed", cur)
	}
}

// TestMemoryBudgetShedsOpenSegments opens 8 Kafka partitions x 50 tenants
// of small rows: nothing is worth flushing, and the heap the segments hold
// (here 64 KiB each, as the collector would measure it) passes the shed
// mark, so the partition with the most segments rotates, again and again,
// keeping the open segments, and so the heap, under the mark.
func TestMemoryBudgetShedsOpenSegments(t *testing.T) {
	ctx := context.Background()
	const budget = 10 << 20 // shed mark 5 MiB: 80 segments of 64 KiB
	w, cl, ck := newTestWriter(t, config.WAL{MemoryBudgetBytes: budget, MaxOpenSegmentsPerPartition: 1000})
	var gcs uint64
	w.heap = func() (uint64, uint64) {
		gcs++
		n := 0
		for _, st := range w.parts {
			n += len(st.segs)
		}
		return uint64(n) << 16, gcs
	}
	const rows = 3200
	maxOpen := 0
	for i := 0; i < rows; i++ {
		p := int32(i % 8)
		tenant := fmt.Sprintf("tenant-%03d", (i/8)%50)
		payload := fmt.Sprintf(`{"id":"e%d","meta":{"tenant":%q,"ts":"2026-11-30T10:00:00Z"}}`, i, tenant)
		must(t, w.record(ctx, p, int64(i/8), []byte(payload)))
		maxOpen = max(maxOpen, w.openSegments())
		ck.t = ck.t.Add(2 * time.Millisecond)
	}
	shed := testutil.ToFloat64(w.m.rotated.WithLabelValues("clicks", TriggerMemory))
	t.Logf("%v memory rotations, at most %d open segments", shed, maxOpen)
	if shed == 0 {
		t.Fatal("no partition rotated for memory")
	}
	// The mark is 80 segments; between two heap checks (every 100 ms,
	// 50 records here) a few more may open.
	if maxOpen > 80+50 {
		t.Fatalf("%d segments open at once, over the budget's 80", maxOpen)
	}
	must(t, w.rotate(ctx, nil, TriggerShutdown))
	if n := rowsInFiles(t, w.dir); n != rows {
		t.Fatalf("files hold %d rows, want %d", n, rows)
	}
	// Every rotation committed its partition's offsets.
	for p := int32(0); p < 8; p++ {
		if got := cl.last(p); got != rows/8 {
			t.Errorf("partition %d committed %d, want %d", p, got, rows/8)
		}
	}
}

// TestWriterNestedTable runs rows of a table with a struct column through
// the writer: such tables buffer in Arrow builders (not the encoded row
// buffer), and a busy segment presizes its builders after a full batch.
func TestWriterNestedTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "event_id", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 2, Name: "tenant", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 4, Name: "page", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 5, Name: "path", Type: iceberg.PrimitiveTypes.String},
			{ID: 6, Name: "ms", Type: iceberg.PrimitiveTypes.Int64},
		}}},
	)
	_, spec := testSchema()
	ds := config.Dataset{Name: "clicks", Topic: "clicks_v1", CustomMapping: map[string]string{
		"event_id": "id", "tenant": "meta.tenant", "ts": "meta.ts", "page": "page",
	}}
	cl := &commitLog{dir: dir}
	w, err := newWriter(ds, config.WAL{Dir: dir, MaxFileSizeBytes: 1 << 30, MaxFileAgeMinutes: 5, MaxOpenSegmentsPerPartition: 10},
		schema, spec, discardLogger(), newMetrics(newRegistry()), newBudgetAllocator(), cl.commit)
	if err != nil {
		t.Fatal(err)
	}
	const rows = flushRows + 500
	for i := 0; i < rows; i++ {
		payload := fmt.Sprintf(`{"id":"e%d","meta":{"tenant":"acme","ts":"2026-11-30T10:00:00Z"},"page":{"path":"/p/%d","ms":%d}}`, i, i%7, i)
		must(t, w.record(ctx, 0, int64(i), []byte(payload)))
		if i == flushRows-1 {
			if w.openSegments() != 1 {
				t.Fatalf("%d open segments, want 1", w.openSegments())
			}
			for _, seg := range w.parts[0].segs {
				if seg.buf != nil || seg.b == nil {
					t.Fatal("a table with a struct column buffers its rows encoded")
				}
				if !seg.b.Presized() || seg.pending != 0 {
					t.Fatalf("after a full batch: presized %v, %d rows pending; want a presized, empty builder", seg.b.Presized(), seg.pending)
				}
			}
		}
	}
	must(t, w.rotate(ctx, nil, TriggerShutdown))
	if n := rowsInFiles(t, dir); n != rows {
		t.Fatalf("files hold %d rows, want %d", n, rows)
	}
	if got := cl.last(0); got != rows {
		t.Fatalf("committed %d, want %d", got, rows)
	}
}

// openSegments counts the open segments.
func (w *writer) openSegments() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, st := range w.parts {
		n += len(st.segs)
	}
	return n
}
