package maintainer

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// database/sql's connection opener lives as long as the *sql.DB
		// that iceberg-go's catalog keeps in a package cache of dialects.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
	)
}

// testConfig is one dataset in cat whose table the committer would
// create with props (on top of the ingestor's upkeep properties).
func testConfig(dir string, cat config.Catalog, props map[string]string) *config.Config {
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
ingestion: {wal: {dir: %q}}
kafka: {brokers: ["127.0.0.1:1"]}
catalog: %s
datasets:
  - name: events
    topic: events
    table: up.events
    customMapping: {id: id}
    create:
      columns: [{name: id, type: long, required: true}]
`, dir, catalogYAML(cat))))
	if err != nil {
		panic(err)
	}
	cfg.Datasets[0].Create.Properties = props
	return cfg
}

// appendRows makes n appends of one row each, ids first..first+n-1, the
// way a committer at a short interval grows a table.
func appendRows(t *testing.T, cfg *config.Config, first, n int64) {
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
	for id := first; id < first+n; id++ {
		if tbl, err = appendID(ctx, tbl, id); err != nil {
			t.Fatal(err)
		}
	}
}

// appendID commits one append of a file holding the one row id.
func appendID(ctx context.Context, tbl *table.Table, id int64) (*table.Table, error) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.Append(id)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, 1)
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	tx := tbl.NewTransaction()
	if err := tx.AppendTable(ctx, at, 1, nil); err != nil {
		return nil, err
	}
	return tx.Commit(ctx)
}

func closeCat(cat catalog.Catalog) {
	if c, ok := cat.(catalog.Closer); ok {
		c.Close()
	}
}

func loadTable(t testing.TB, cfg *config.Config) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat, err := tables.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer closeCat(cat)
	tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier(cfg.Datasets[0].TableIdent()...))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// ids scans the table's id column, sorted.
func ids(t *testing.T, tbl *table.Table) []int64 {
	t.Helper()
	at, err := tbl.Scan(table.WithSelectedFields("id")).ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	var out []int64
	for _, c := range at.Column(0).Data().Chunks() {
		out = append(out, c.(*array.Int64).Int64Values()...)
	}
	slices.Sort(out)
	return out
}

// commitHandoffs does the committer's part of a compaction: it applies
// the maintainer's hand-off notes in cfg's WAL directory with
// tables.ApplyHandoff, as committer.applyHandoffs does after an append,
// and deletes them. It returns what the notes came to together.
func commitHandoffs(t *testing.T, cfg *config.Config, beforeCommit func(attempt int)) tables.HandoffResult {
	t.Helper()
	ctx := context.Background()
	notes, bad, err := walfile.ListHandoffs(cfg.Ingestion.WAL.Dir, cfg.Datasets[0].Name)
	if err != nil || len(bad) > 0 {
		t.Fatalf("list hand-offs: %v, bad %v", err, bad)
	}
	cat, err := tables.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer closeCat(cat)
	var sum tables.HandoffResult
	for _, n := range notes {
		tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier(cfg.Datasets[0].TableIdent()...))
		if err != nil {
			t.Fatal(err)
		}
		_, res, err := tables.ApplyHandoff(ctx, cat, tbl, n.Handoff, beforeCommit)
		if err != nil {
			t.Fatalf("apply hand-off %s: %v", n.ID, err)
		}
		sum.Applied += res.Applied
		sum.AlreadyIn += res.AlreadyIn
		sum.Dropped += res.Dropped
		sum.DroppedForDeletes += res.DroppedForDeletes
		sum.DroppedFiles = append(sum.DroppedFiles, res.DroppedFiles...)
		sum.DeleteFilesRemoved += res.DeleteFilesRemoved
		sum.Attempts += res.Attempts
		if err := os.Remove(n.Path); err != nil {
			t.Fatal(err)
		}
	}
	return sum
}

// passAndCommit is a maintainer's pass followed by the committer's
// application of its hand-offs.
func passAndCommit(t *testing.T, m *Maintainer, cfg *config.Config) tables.HandoffResult {
	t.Helper()
	m.pass(context.Background())
	return commitHandoffs(t, cfg, nil)
}

func newMaintainer(t *testing.T, cfg *config.Config) (*Maintainer, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := New(cfg, role.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.closeCatalog)
	return m, reg
}

// metadataFiles counts the metadata.json versions in the table's
// metadata directory.
func metadataFiles(t *testing.T, tbl *table.Table) int {
	t.Helper()
	dir := strings.TrimPrefix(tbl.Location(), "file://") + "/metadata"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".metadata.json") {
			n++
		}
	}
	return n
}

// A table that kept every snapshot and one manifest per append: one pass
// expires by the table's history.expire.* properties, merges the
// manifests, changes no row, and reports the table's health.
func TestMaintainerExpiresAndMergesManifests(t *testing.T) {
	forEachCatalog(t, func(t *testing.T, dir string, cat config.Catalog) {
		cfg := testConfig(dir, cat, map[string]string{
			table.MaxSnapshotAgeMsKey:     "1",
			table.MinSnapshotsToKeepKey:   "3",
			table.ManifestMergeEnabledKey: "false",
			// No file is small: this test is about metadata only.
			table.WriteTargetFileSizeBytesKey: "1",
		})
		cfg.Maintenance.MaxManifests = 5
		const n = 30
		appendRows(t, cfg, 0, n)
		before := loadTable(t, cfg)
		if got := len(before.Metadata().Snapshots()); got != n {
			t.Fatalf("%d snapshots before upkeep, want %d", got, n)
		}
		// The ingestor's upkeep properties bound the metadata.json versions
		// without the maintainer.
		if got, limit := metadataFiles(t, before), 20+1; got > limit {
			t.Errorf("%d metadata.json versions after %d commits, want at most %d", got, n, limit)
		}

		m, reg := newMaintainer(t, cfg)
		m.pass(context.Background())

		after := loadTable(t, cfg)
		// Three kept by expiry, plus the manifest rewrite's snapshot.
		if got := len(after.Metadata().Snapshots()); got != 4 {
			t.Errorf("%d snapshots after upkeep, want 4", got)
		}
		if got := m.dataManifests(context.Background(), after); got < 1 || got > 5 {
			t.Errorf("%d data manifests after upkeep, want 1..5", got)
		}
		want := make([]int64, n)
		for i := range want {
			want[i] = int64(i)
		}
		if got := ids(t, after); !slices.Equal(got, want) {
			t.Errorf("ids after upkeep %v, want %v", got, want)
		}
		for _, name := range []string{"ingestor_maintainer_snapshots_expired_total", "ingestor_maintainer_snapshots", "ingestor_maintainer_metadata_bytes", "ingestor_maintainer_manifests"} {
			if got, err := testutil.GatherAndCount(reg, name); err != nil || got != 1 {
				t.Errorf("%s: %d series, %v", name, got, err)
			}
		}
		if got := testutil.ToFloat64(m.metrics.expired.WithLabelValues("events")); got != n-3 {
			t.Errorf("snapshots expired %v, want %d", got, n-3)
		}
		// Each expired snapshot's manifest list is deleted after the
		// commit, through the paced deletes (deletes.go), and counted.
		if got := testutil.ToFloat64(m.metrics.expiredDeleted.WithLabelValues("events")); got < n-3 {
			t.Errorf("objects deleted after expiry %v, want at least the %d expired manifest lists", got, n-3)
		}
		fs, err := after.FS(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range before.Metadata().Snapshots()[:n-3] {
			if f, err := fs.Open(s.ManifestList); err == nil {
				f.Close()
				t.Errorf("manifest list %s of an expired snapshot still there", s.ManifestList)
			}
		}
		if got := testutil.ToFloat64(m.metrics.snapshots.WithLabelValues("events")); got != 4 {
			t.Errorf("snapshots gauge %v, want 4", got)
		}
		if got := testutil.ToFloat64(m.metrics.metadataBytes.WithLabelValues("events")); got <= 0 {
			t.Errorf("metadata bytes gauge %v, want > 0", got)
		}
		st := m.Status().Datasets["events"]
		if st.Snapshots == nil || *st.Snapshots != 4.0 || st.LastExpire == nil || st.LastManifests == nil {
			t.Errorf("status %v", st)
		}

		// The next pass expires the rewrite's parent, which is already
		// older than a millisecond; the one after has nothing to do, and
		// commits nothing.
		m.pass(context.Background())
		after = loadTable(t, cfg)
		if got := len(after.Metadata().Snapshots()); got != 3 {
			t.Errorf("%d snapshots after the second pass, want 3", got)
		}
		m.pass(context.Background())
		if got := loadTable(t, cfg).MetadataLocation(); got != after.MetadataLocation() {
			t.Errorf("an idle pass committed: metadata %s, was %s", got, after.MetadataLocation())
		}
	})
}

// Without history.expire.* the ingestor's defaults apply: snapshots older
// than the default age go (shortened here: iceberg-go's expiry reads the
// real clock), the newest DefaultMinSnapshotsToKeep stay.
func TestMaintainerDefaultRetention(t *testing.T) {
	forEachCatalog(t, func(t *testing.T, dir string, cat config.Catalog) {
		cfg := testConfig(dir, cat, map[string]string{table.WriteTargetFileSizeBytesKey: "1"})
		appendRows(t, cfg, 0, 12)
		m, _ := newMaintainer(t, cfg)
		m.pass(context.Background())
		if got := len(loadTable(t, cfg).Metadata().Snapshots()); got != 12 {
			t.Errorf("%d snapshots after upkeep of a fresh table, want all 12", got)
		}
		time.Sleep(10 * time.Millisecond)
		m.maxSnapshotAge = 5 * time.Millisecond
		m.pass(context.Background())
		if got := len(loadTable(t, cfg).Metadata().Snapshots()); got != DefaultMinSnapshotsToKeep {
			t.Errorf("%d snapshots after upkeep of an old table, want %d", got, DefaultMinSnapshotsToKeep)
		}
	})
}

// The committer appends between the maintainer's staging of an expiry and
// its commit: the expiry's commit fails its requirement, is staged again
// on the reloaded table and lands; the append is kept, no row lost or
// doubled.
func TestMaintainerRetriesAConflict(t *testing.T) {
	forEachCatalog(t, func(t *testing.T, dir string, cat config.Catalog) {
		cfg := testConfig(dir, cat, map[string]string{
			table.MaxSnapshotAgeMsKey:   "1",
			table.MinSnapshotsToKeepKey: "2",
		})
		appendRows(t, cfg, 0, 6)
		time.Sleep(5 * time.Millisecond)
		m, _ := newMaintainer(t, cfg)
		var attempts []int
		m.beforeCommit = func(attempt int) {
			attempts = append(attempts, attempt)
			if attempt == 1 && len(attempts) == 1 {
				appendRows(t, cfg, 6, 1) // the committer, first
			}
		}
		m.pass(context.Background())
		if !slices.Equal(attempts, []int{1, 2}) {
			t.Errorf("commit attempts %v, want [1 2]", attempts)
		}
		tbl := loadTable(t, cfg)
		if got := len(tbl.Metadata().Snapshots()); got != 2 {
			t.Errorf("%d snapshots after the retried expiry, want 2", got)
		}
		want := []int64{0, 1, 2, 3, 4, 5, 6}
		if got := ids(t, tbl); !slices.Equal(got, want) {
			t.Errorf("ids %v, want %v", got, want)
		}
		if got := testutil.ToFloat64(m.metrics.failures.WithLabelValues("events", stepExpire)); got != 0 {
			t.Errorf("expire failures %v, want 0", got)
		}
	})
}

// Twenty tiny files, one per append, in one partition: a pass merges them
// into one file of the same rows (a rewrite, no row changed), counts the
// bytes it rewrote, and the next pass leaves the merged file alone.
func TestMaintainerCompactsSmallFiles(t *testing.T) {
	forEachCatalog(t, func(t *testing.T, dir string, cat config.Catalog) {
		cfg := testConfig(dir, cat, nil)
		cfg.Maintenance.CompactionFanIn = 8
		const n = 20
		appendRows(t, cfg, 0, n)
		want := make([]int64, n)
		for i := range want {
			want[i] = int64(i)
		}
		before := loadTable(t, cfg)
		if got := len(liveFiles(t, before)); got != n {
			t.Fatalf("%d data files before compaction, want %d", got, n)
		}
		if got := ids(t, before); !slices.Equal(got, want) {
			t.Fatalf("ids before compaction %v, want %v", got, want)
		}
		m, _ := newMaintainer(t, cfg)
		m.pass(context.Background())
		// The pass only writes the files and leaves their replace to the
		// committer: the table is as it was until the committer applies it.
		if got := len(liveFiles(t, loadTable(t, cfg))); got != n {
			t.Errorf("%d data files before the committer applied the hand-off, want %d", got, n)
		}
		if res := commitHandoffs(t, cfg, nil); res.Applied != 1 || res.Dropped != 0 {
			t.Errorf("hand-off applied %d groups, dropped %d; want 1 and 0", res.Applied, res.Dropped)
		}
		tbl := loadTable(t, cfg)
		if got := len(liveFiles(t, tbl)); got != 1 {
			t.Errorf("%d data files after compaction, want 1", got)
		}
		if got := ids(t, tbl); !slices.Equal(got, want) {
			t.Errorf("ids after compaction %v, want %v", got, want)
		}
		if op := tbl.CurrentSnapshot().Summary.Operation; op != table.OpReplace {
			t.Errorf("compaction snapshot operation %q, want %q", op, table.OpReplace)
		}
		if got := testutil.ToFloat64(m.metrics.rewrittenFiles.WithLabelValues("events")); got != n {
			t.Errorf("files rewritten %v, want %d", got, n)
		}
		if got := testutil.ToFloat64(m.metrics.rewrittenBytes.WithLabelValues("events")); got <= 0 {
			t.Errorf("bytes rewritten %v, want > 0", got)
		}
		snap := tbl.CurrentSnapshot().SnapshotID
		passAndCommit(t, m, cfg)
		if got := loadTable(t, cfg).CurrentSnapshot().SnapshotID; got != snap {
			t.Errorf("a second pass rewrote the merged file again (snapshot %d, was %d)", got, snap)
		}
	})
}

// Files merge only with files of their own size level.
func TestLevel(t *testing.T) {
	const target = 128 << 20
	for _, tc := range []struct {
		size int64
		want int
	}{
		{target / 2, 0}, {target / 4, 0}, {target / 9, 0},
		{target / 17, 1}, {15 << 10, 4}, {100, 6}, {0, 8},
	} {
		if got := level(tc.size, target, 8); got != tc.want {
			t.Errorf("level(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

// A table that leaves retention to the ingestor keeps at most
// maintenance.maxSnapshots snapshots, however young: a short commit
// interval fills the hour of the default age with thousands, and each is
// metadata.json that every commit writes. A table that sets its own age
// keeps what its age says.
func TestMaintainerCapsYoungSnapshots(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  int
	}{
		{"ingestor retention", map[string]string{table.WriteTargetFileSizeBytesKey: "1"}, 12},
		{"table retention", map[string]string{table.WriteTargetFileSizeBytesKey: "1", table.MaxSnapshotAgeMsKey: "3600000"}, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachCatalog(t, func(t *testing.T, dir string, cat config.Catalog) {
				cfg := testConfig(dir, cat, tc.props)
				cfg.Maintenance.MaxSnapshots = 12
				appendRows(t, cfg, 0, 30)
				m, _ := newMaintainer(t, cfg)
				m.pass(context.Background())
				tbl := loadTable(t, cfg)
				if got := len(tbl.Metadata().Snapshots()); got != tc.want {
					t.Errorf("%d snapshots kept, want %d", got, tc.want)
				}
				if got := len(ids(t, tbl)); got != 30 {
					t.Errorf("%d rows, want 30", got)
				}
			})
		})
	}
}

// The health gauges describe the table as it is at the end of the pass,
// not as the pass loaded it: during a long pass the committer appends
// more often than the metadata.json versions it keeps, and the version
// the pass loaded is deleted.
func TestMaintainerObservesTheTableAsItIsNow(t *testing.T) {
	forEachCatalog(t, func(t *testing.T, dir string, cat config.Catalog) {
		cfg := testConfig(dir, cat, nil)
		appendRows(t, cfg, 0, 1)
		stale := loadTable(t, cfg)
		appendRows(t, cfg, 1, 25) // past write.metadata.previous-versions-max (20)
		fs, err := stale.FS(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if f, err := fs.Open(stale.MetadataLocation()); err == nil {
			f.Close()
			t.Fatalf("%s still there after 25 appends; the test needs it gone", stale.MetadataLocation())
		}
		m, _ := newMaintainer(t, cfg)
		c, err := m.catalog(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer m.closeCatalog()
		m.observe(context.Background(), m.log, "events", c, stale)

		now := loadTable(t, cfg)
		size, err := objectSize(context.Background(), now, now.MetadataLocation())
		if err != nil {
			t.Fatal(err)
		}
		if got := testutil.ToFloat64(m.metrics.metadataBytes.WithLabelValues("events")); got != float64(size) {
			t.Errorf("metadata.json gauge %v, want the current version's %d bytes", got, size)
		}
		if got := testutil.ToFloat64(m.metrics.snapshots.WithLabelValues("events")); got != 26 {
			t.Errorf("snapshots gauge %v, want 26", got)
		}
	})
}
