package maintainer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
)

// wideConfig is a dataset in cat of two columns, an id and a free-text
// note, the second high-cardinality: what the consumer's dictionary
// fallback is for.
func wideConfig(dir string, cat config.Catalog, props map[string]string) *config.Config {
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
ingestion: {wal: {dir: %q}}
kafka: {brokers: ["127.0.0.1:1"]}
catalog: %s
datasets:
  - name: events
    topic: events
    table: up.events
    customMapping: {id: id, note: note}
    create:
      columns: [{name: id, type: long, required: true}, {name: note, type: string}]
`, dir, catalogYAML(cat))))
	if err != nil {
		panic(err)
	}
	cfg.Datasets[0].Create.Properties = props
	return cfg
}

// appendNotes makes one append of the ids, each with a random 64-character
// note, and returns the appended file's size.
func appendNotes(t testing.TB, cfg *config.Config, ids []int64) int64 {
	t.Helper()
	buf := make([]byte, 32)
	next := appendFile(t, cfg, []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, len(ids), func(b *array.RecordBuilder, i int) {
		b.Field(0).(*array.Int64Builder).Append(ids[i])
		rand.Read(buf)
		b.Field(1).(*array.StringBuilder).Append(hex.EncodeToString(buf))
	})
	n, err := strconv64(next.CurrentSnapshot().Summary.Properties["added-files-size"])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// appendFile commits one append of n rows of the columns fields, each
// row filled by fill, into the first dataset's table, as another writer
// of the table would; it returns the table after the commit.
func appendFile(t testing.TB, cfg *config.Config, fields []arrow.Field, n int, fill func(b *array.RecordBuilder, i int)) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat, err := tables.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer closeCat(cat)
	tbl, err := tables.Load(ctx, cat, cfg.Datasets[0])
	if err != nil {
		t.Fatal(err)
	}
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range n {
		fill(b, i)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	tx := tbl.NewTransaction()
	if err := tx.AppendTable(ctx, at, int64(n), nil); err != nil {
		t.Fatal(err)
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func strconv64(s string) (int64, error) {
	var n int64
	_, err := fmt.Sscan(s, &n)
	return n, err
}

// setSortOrder gives the table the order id DESC, nulls last.
func setSortOrder(t *testing.T, cfg *config.Config) int {
	t.Helper()
	ctx := context.Background()
	cat, err := tables.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer closeCat(cat)
	tbl, err := tables.Load(ctx, cat, cfg.Datasets[0])
	if err != nil {
		t.Fatal(err)
	}
	id, ok := tbl.Schema().FindFieldByName("id")
	if !ok {
		t.Fatal("no id column")
	}
	order, err := table.NewSortOrder(1, []table.SortField{{SourceIDs: []int{id.ID}, Transform: iceberg.IdentityTransform{}, Direction: table.SortDESC, NullOrder: table.NullsLast}})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.ReplaceSortOrder(order); err != nil {
		t.Fatal(err)
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return next.SortOrder().OrderID()
}

// liveFiles is the current snapshot's data files.
func liveFiles(t *testing.T, tbl *table.Table) []iceberg.DataFile {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []iceberg.DataFile
	for _, task := range tasks {
		out = append(out, task.File)
	}
	return out
}

// compactedObjects lists the maintainer's files in the table's data
// directory, whatever refers to them.
func compactedObjects(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	var out []string
	root := strings.TrimPrefix(tbl.Location(), "file://")
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), CompactedPrefix) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// The compacted file is written as the consumer writes segments (zstd,
// statistics, the 64 KiB dictionary fallback, the table's field ids) and
// in the table's sort order, and the manifest says so; the replace
// changes no row.
func TestCompactionWritesLikeTheConsumerInSortOrder(t *testing.T) {
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), nil)
	cfg.Maintenance.CompactionFanIn = 8
	orderID := setSortOrder(t, cfg) // on the table Load creates
	var want []int64
	for i := range 10 {
		var ids []int64
		for j := range 500 {
			ids = append(ids, int64((j*7919+i*13)%5000)) // ids of every file interleave
		}
		appendNotes(t, cfg, ids)
		want = append(want, ids...)
	}
	slices.Sort(want)

	m, _ := newMaintainer(t, cfg)
	passAndCommit(t, m, cfg)
	tbl := loadTable(t, cfg)
	files := liveFiles(t, tbl)
	if len(files) != 1 {
		t.Fatalf("%d data files after compaction, want 1", len(files))
	}
	df := files[0]
	if !strings.Contains(df.FilePath(), "/"+CompactedPrefix) {
		t.Errorf("compacted file %s is not named %s*", df.FilePath(), CompactedPrefix)
	}
	if df.SortOrderID() == nil || *df.SortOrderID() != orderID {
		t.Errorf("compacted file's sort order id %v, want %d", df.SortOrderID(), orderID)
	}
	if op := tbl.CurrentSnapshot().Summary.Operation; op != table.OpReplace {
		t.Errorf("compaction snapshot operation %q, want %q", op, table.OpReplace)
	}
	// Who made it, for `ingestor table snapshots`; and Iceberg's own counts.
	sum := tbl.CurrentSnapshot().Summary.Properties
	if got := sum[tables.SummaryUpkeep]; got != tables.UpkeepCompaction {
		t.Errorf("compaction snapshot's %s = %q, want %q", tables.SummaryUpkeep, got, tables.UpkeepCompaction)
	}
	for _, k := range []string{"added-data-files", "deleted-data-files", "total-records"} {
		if sum[k] == "" {
			t.Errorf("compaction snapshot's summary has no %s: %v", k, sum)
		}
	}
	if got := ids(t, tbl); !slices.Equal(got, want) {
		t.Errorf("ids after compaction: %d rows, want %d", len(got), len(want))
	}

	r, err := file.OpenParquetFile(strings.TrimPrefix(df.FilePath(), "file://"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	meta := r.MetaData()
	schema := tbl.Schema()
	for i := 0; i < meta.Schema.NumColumns(); i++ {
		col := meta.Schema.Column(i)
		f, ok := schema.FindFieldByName(col.Name())
		if !ok || int(col.SchemaNode().FieldID()) != f.ID {
			t.Errorf("column %s: field id %d, table field %v", col.Name(), col.SchemaNode().FieldID(), f)
		}
	}
	for rg := 0; rg < meta.NumRowGroups(); rg++ {
		for c := 0; c < meta.Schema.NumColumns(); c++ {
			cc, err := meta.RowGroup(rg).ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			if cc.Compression() != compress.Codecs.Zstd {
				t.Errorf("row group %d column %d: codec %s, want zstd", rg, c, cc.Compression())
			}
			if ok, _ := cc.StatsSet(); !ok {
				t.Errorf("row group %d column %d: no statistics", rg, c)
			}
		}
	}
	// 5,000 distinct 64-character notes, 320 KB: past the 64 KiB limit
	// the note column's data pages fall back to plain encoding (the
	// default limit, 1 MiB, would keep them all in a dictionary).
	note, err := meta.RowGroup(0).ColumnChunk(1)
	if err != nil {
		t.Fatal(err)
	}
	if !plainDataPage(note.EncodingStats()) {
		t.Errorf("note column: no plain-encoded data page (%v): not the consumer's dictionary limit", note.EncodingStats())
	}
	// The rows are in the table's order, id descending, across the
	// interleaved inputs.
	got := readIDs(t, r)
	if !slices.IsSortedFunc(got, func(a, b int64) int { return int(b - a) }) {
		t.Errorf("compacted file is not sorted by id DESC: %v...", got[:min(10, len(got))])
	}
}

func plainDataPage(stats []metadata.PageEncodingStats) bool {
	for _, s := range stats {
		if s.Encoding == parquet.Encodings.Plain && s.PageType != 2 { // 2: dictionary page
			return true
		}
	}
	return false
}

// readIDs reads the id column of a Parquet file in file order.
func readIDs(t *testing.T, r *file.Reader) []int64 {
	t.Helper()
	var out []int64
	for rg := 0; rg < r.NumRowGroups(); rg++ {
		cr, err := r.RowGroup(rg).Column(0)
		if err != nil {
			t.Fatal(err)
		}
		ir := cr.(*file.Int64ColumnChunkReader)
		buf := make([]int64, r.MetaData().RowGroup(rg).NumRows())
		total := 0
		for ir.HasNext() && total < len(buf) {
			_, n, err := ir.ReadBatch(int64(len(buf)-total), buf[total:], nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			total += n
		}
		out = append(out, buf[:total]...)
	}
	return out
}

// Another writer (another pod's committer) appends between the staging of
// the hand-off's replace and its commit: the replace fails its
// requirement and is committed again on the reloaded table with the same
// file, which is not written twice; the append stays, no row lost or
// doubled.
func TestCompactionConflictCommitsTheSameFileAgain(t *testing.T) {
	forEachCatalog(t, func(t *testing.T, dir string, cat config.Catalog) {
		cfg := wideConfig(dir, cat, nil)
		cfg.Maintenance.CompactionFanIn = 4
		var want []int64
		for i := range int64(4) {
			appendNotes(t, cfg, []int64{i})
			want = append(want, i)
		}
		m, _ := newMaintainer(t, cfg)
		m.pass(context.Background())
		var attempts []int
		res := commitHandoffs(t, cfg, func(attempt int) {
			attempts = append(attempts, attempt)
			if attempt == 1 && len(attempts) == 1 {
				appendNotes(t, cfg, []int64{100}) // another pod's committer, first
			}
		})
		want = append(want, 100)
		if res.Applied != 1 || res.Attempts != 2 {
			t.Errorf("hand-off applied %d groups in %d attempts, want 1 in 2", res.Applied, res.Attempts)
		}
		if !slices.Equal(attempts, []int{1, 2}) {
			t.Errorf("commit attempts %v, want [1 2]", attempts)
		}
		tbl := loadTable(t, cfg)
		if got := ids(t, tbl); !slices.Equal(got, want) {
			t.Errorf("ids %v, want %v", got, want)
		}
		if got := len(liveFiles(t, tbl)); got != 2 {
			t.Errorf("%d live files, want 2 (the compacted one and the append's)", got)
		}
		if got := compactedObjects(t, tbl); len(got) != 1 {
			t.Errorf("compacted objects %v, want exactly one: the retry rewrote the data", got)
		}
		if got := testutil.ToFloat64(m.metrics.failures.WithLabelValues("events", stepCompact)); got != 0 {
			t.Errorf("compaction failures %v, want 0", got)
		}
	})
}

// A stream of small appends with a pass after each: files merge level by
// level, so each byte is rewritten about once per level (three here),
// not at every pass as a bin-pack of everything small would (about
// eleven times here), and few small files wait.
func TestCompactionRewritesEachByteOncePerLevel(t *testing.T) {
	dir := t.TempDir()
	const target = 4 << 20
	cfg := wideConfig(dir, sqliteCatalog(t, dir), map[string]string{table.WriteTargetFileSizeBytesKey: fmt.Sprint(target)})
	const fanIn = 4
	cfg.Maintenance.CompactionFanIn = fanIn
	m, _ := newMaintainer(t, cfg)
	var appended int64
	var want []int64
	id := int64(0)
	const n = 64
	for range n {
		ids := make([]int64, 500)
		for j := range ids {
			ids[j] = id
			id++
		}
		want = append(want, ids...)
		appended += appendNotes(t, cfg, ids)
		passAndCommit(t, m, cfg)
	}
	tbl := loadTable(t, cfg)
	rewritten := testutil.ToFloat64(m.metrics.rewrittenBytes.WithLabelValues("events"))
	// Files of about 20 KB are level 2 of a 4 MiB target at fan-in 4;
	// merged by four they climb one level each time: three rewrites.
	levels := float64(level(appended/n, target, fanIn) + 1)
	t.Logf("appended %d bytes, rewrote %.0f (%.2f per byte), %d levels", appended, rewritten, rewritten/float64(appended), int(levels))
	if wa := rewritten / float64(appended); wa > levels+0.2 {
		t.Errorf("rewrote %.0f bytes for %d appended: %.2f per byte, want at most %.0f (one per level)", rewritten, appended, wa, levels)
	}
	if rewritten == 0 {
		t.Error("nothing compacted")
	}
	small := 0
	for _, f := range liveFiles(t, tbl) {
		if f.FileSizeBytes() < target/2 {
			small++
		}
	}
	if limit := int(levels) * (fanIn - 1); small > limit {
		t.Errorf("%d small files left, want at most %d (fan-in - 1 per level)", small, limit)
	}
	if got := ids(t, tbl); !slices.Equal(got, want) {
		t.Errorf("ids after compaction: %d rows, want %d", len(got), len(want))
	}
}

// An object under the table's location that no metadata refers to is
// deleted once older than the margin, in the data and the metadata
// directory alike (what a crash during expiry or compaction leaves); a
// just-written one, like a segment the committer has not appended yet, is
// not; no referenced file goes.
func TestOrphanCleanupDeletesOnlyOldOrphans(t *testing.T) {
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), nil)
	cfg.Maintenance.CompactionFanIn = 0
	for i := range int64(3) {
		appendNotes(t, cfg, []int64{i})
	}
	tbl := loadTable(t, cfg)
	root := strings.TrimPrefix(tbl.Location(), "file://")
	old := time.Now().Add(-73 * time.Hour)
	write := func(rel string, at time.Time) string {
		p := filepath.Join(root, rel)
		if err := os.WriteFile(p, []byte("orphan"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oldData := write("data/"+CompactedPrefix+"left-by-a-crash.parquet", old)
	oldMeta := write("metadata/left-by-expiry-m0.avro", old)
	fresh := write("data/uploaded-not-yet-appended.parquet", time.Now())

	m, reg := newMaintainer(t, cfg)
	m.orphanAge = 72 * time.Hour
	m.pass(context.Background())
	for _, p := range []string{oldData, oldMeta} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("old orphan %s not deleted", filepath.Base(p))
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a just-written object was deleted: %v", err)
	}
	after := loadTable(t, cfg)
	for _, f := range liveFiles(t, after) {
		if _, err := os.Stat(strings.TrimPrefix(f.FilePath(), "file://")); err != nil {
			t.Errorf("live data file deleted: %v", err)
		}
	}
	if got := ids(t, after); !slices.Equal(got, []int64{0, 1, 2}) {
		t.Errorf("ids %v, want [0 1 2]", got)
	}
	if got := testutil.ToFloat64(m.metrics.orphanFiles.WithLabelValues("events")); got != 2 {
		t.Errorf("orphans deleted %v, want 2", got)
	}
	if n, err := testutil.GatherAndCount(reg, "ingestor_maintainer_orphan_files_deleted_total"); err != nil || n != 1 {
		t.Errorf("orphan metric: %d series, %v", n, err)
	}
	// Not again within the interval: the listing is the costly part.
	write("data/second.parquet", old)
	m.pass(context.Background())
	if _, err := os.Stat(filepath.Join(root, "data/second.parquet")); err != nil {
		t.Errorf("the cleanup ran again within its interval: %v", err)
	}
}
