package maintainer

import (
	"context"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/bloom"
	"github.com/icewal/ingestor/shared/storage"
	"github.com/icewal/ingestor/shared/walfile"
)

// listHookIO runs after once the listing of the orphan cleanup has
// returned: a commit landing between the listing and the deletes.
type listHookIO struct {
	icebergio.IO
	after func()
}

func (l listHookIO) WalkDir(root string, fn iofs.WalkDirFunc) error {
	err := l.IO.(icebergio.ListableIO).WalkDir(root, fn)
	l.after()
	return err
}

// dataObjects is the names of the objects in the table's data directory.
func dataObjects(t *testing.T, tbl *table.Table) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	root := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data")
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out[p] = true
		}
		return nil
	})
	return out
}

// age sets an object's times to at, as days of waiting would.
func age(t *testing.T, p string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

// An object the committer appends while the orphan cleanup runs, after
// the table the pass holds was loaded and after the cleanup's listing,
// is kept, however old it is: here a segment that waited four days for
// its append (a committer outage longer than the margin). Every row reads
// back. An old orphan stored again after the listing is kept too.
func TestOrphanCleanupKeepsWhatACommitNamesAfterItsListing(t *testing.T) {
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), nil)
	cfg.Maintenance.CompactionFanIn = 0
	appendNotes(t, cfg, []int64{0})
	m, _ := newMaintainer(t, cfg)
	m.orphanAge = 72 * time.Hour
	ctx := context.Background()
	cat, tbl := m.testTable(t)

	// The waiting segment: written into the data directory, not yet
	// named by any metadata, four days old.
	before := dataObjects(t, tbl)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(1)
	b.Field(1).(*array.StringBuilder).Append("waited four days")
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	tx := tbl.NewTransaction()
	if err := tx.AppendTable(ctx, at, 1, nil); err != nil {
		t.Fatal(err)
	}
	var segment string
	for p := range dataObjects(t, tbl) {
		if !before[p] {
			segment = p
		}
	}
	if segment == "" {
		t.Fatal("the staged append wrote no data file")
	}
	age(t, segment, time.Now().Add(-96*time.Hour))
	// And an old orphan the uploader stores again after the listing (a
	// retry of the same name): the new object is not the one listed.
	reuploaded := filepath.Join(filepath.Dir(segment), "7d0c2a4e-9b1f-4e8a-8c3d-5f6a7b8c9d0e.parquet")
	if err := os.WriteFile(reuploaded, []byte("first upload"), 0o644); err != nil {
		t.Fatal(err)
	}
	age(t, reuploaded, time.Now().Add(-96*time.Hour))

	appended := false
	view := wrapFS(cat, tbl, func(_ context.Context, inner icebergio.IO) icebergio.IO {
		return listHookIO{IO: inner, after: func() {
			if appended {
				return
			}
			appended = true
			if err := os.WriteFile(reuploaded, []byte("second upload"), 0o644); err != nil {
				t.Error(err)
			}
			if _, err := tx.Commit(ctx); err != nil {
				t.Errorf("the committer's append: %v", err)
			}
		}}
	})
	if _, _, err := m.deleteOrphans(ctx, cat, view); err != nil {
		t.Fatal(err)
	}
	if !appended {
		t.Fatal("the listing never ran")
	}
	if _, err := os.Stat(segment); err != nil {
		t.Fatalf("the segment appended after the listing was deleted: %v", err)
	}
	if got := ids(t, loadTable(t, cfg)); !slices.Equal(got, []int64{0, 1}) {
		t.Errorf("ids %v, want [0 1]", got)
	}
	if b, err := os.ReadFile(reuploaded); err != nil || string(b) != "second upload" {
		t.Errorf("the object stored again after the listing: %q, %v", b, err)
	}
	if got := testutil.ToFloat64(m.metrics.orphansKept.WithLabelValues("events", keptChanged)); got != 1 {
		t.Errorf("kept (changed) %v, want 1", got)
	}
}

// Bloom-filter sidecars live as long as their data: the sidecar of a
// live data file older than the margin stays, and so does the sidecar of
// a stored data file no metadata names yet (a segment waiting for its
// append); the sidecar of a data file that is gone, and the sidecar of an
// old orphan data file deleted in the same pass, go. A segment whose
// ready file is still in the WAL directory stays, however old its
// object: the committer has not appended it yet.
func TestOrphanCleanupKeepsSidecarsOfStoredData(t *testing.T) {
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), nil)
	cfg.Maintenance.CompactionFanIn = 0
	appendNotes(t, cfg, []int64{0})
	tbl := loadTable(t, cfg)
	live := liveFiles(t, tbl)
	if len(live) != 1 {
		t.Fatalf("%d live files, want 1", len(live))
	}
	// Every object of the table is four days old to the maintainer's
	// clock, metadata included, but the segment waiting for its append.
	old := time.Now()
	livePath := strings.TrimPrefix(live[0].FilePath(), "file://")
	dataDir := filepath.Dir(livePath)
	write := func(name string, at time.Time) string {
		t.Helper()
		p := filepath.Join(dataDir, name)
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		age(t, p, at)
		return p
	}
	sidecarOf := func(data string) string {
		return bloom.SidecarName(strings.TrimSuffix(data, ".parquet"), "note")
	}
	liveSidecar := write(filepath.Base(sidecarOf(livePath)), old)
	waiting := write("0c5a8f0e-4a2b-4f59-9a55-0d1f4c1b7a10.parquet", time.Now().Add(96*time.Hour))
	waitingSidecar := write(filepath.Base(sidecarOf(waiting)), old)
	goneSidecar := write(filepath.Base(sidecarOf(filepath.Join(dataDir, "5e0b8f7c-27d4-4d44-8b4e-3a8e2c5b9f01.parquet"))), old)
	orphan := write(CompactedPrefix+"left-by-a-crash.parquet", old)
	orphanSidecar := write(filepath.Base(sidecarOf(orphan)), old)
	// A segment uploaded four days ago whose ready file is still in the
	// WAL directory: the committer has been down since.
	seg := walfile.Name{State: walfile.Ready, Topic: "events", Partition: 0, Start: 0, End: 9, UUID: uuid.New()}
	if err := os.WriteFile(filepath.Join(cfg.Ingestion.WAL.Dir, seg.String()), []byte("rows"), 0o644); err != nil {
		t.Fatal(err)
	}
	segment := write(seg.UUID.String()+".parquet", old)
	segmentSidecar := write(filepath.Base(sidecarOf(segment)), old)

	m, _ := newMaintainer(t, cfg)
	m.orphanAge = 72 * time.Hour
	m.now = func() time.Time { return time.Now().Add(96 * time.Hour) }
	m.pass(context.Background())
	for _, p := range []string{livePath, liveSidecar, waiting, waitingSidecar, segment, segmentSidecar} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s deleted: %v", filepath.Base(p), err)
		}
	}
	for _, p := range []string{goneSidecar, orphan, orphanSidecar} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s not deleted", filepath.Base(p))
		}
	}
	if got := testutil.ToFloat64(m.metrics.orphanFiles.WithLabelValues("events")); got != 3 {
		t.Errorf("orphans deleted %v, want 3", got)
	}
	if got := testutil.ToFloat64(m.metrics.orphansKept.WithLabelValues("events", keptSidecar)); got != 2 {
		t.Errorf("kept (sidecar) %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.metrics.orphansKept.WithLabelValues("events", keptWaiting)); got != 1 {
		t.Errorf("kept (waiting) %v, want 1", got)
	}
	if got := ids(t, loadTable(t, cfg)); !slices.Equal(got, []int64{0}) {
		t.Errorf("ids %v, want [0]", got)
	}
}

// On Azure the same holds through the store's listing and a delete
// conditional on the ETag listed: a live file and its sidecar stay, an
// orphan stored again after the listing stays, a plain old orphan goes. Azure sets an object's time
// itself, so the maintainer's clock is moved four days on instead.
func TestOrphanCleanupOnAzure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	a, err := devenv.StartAzurite(ctx, filepath.Join(dir, "azurite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop() })
	if err := a.CreateContainer(ctx, "warehouse"); err != nil {
		t.Fatal(err)
	}
	cat := sqliteCatalog(t, dir)
	for k, v := range a.Properties() {
		cat.Properties[k] = v
	}
	cat.Properties["warehouse"] = a.Location("warehouse", "wh")
	cfg := wideConfig(dir, cat, nil)
	cfg.Maintenance.CompactionFanIn = 0
	appendNotes(t, cfg, []int64{0})
	store := storage.Open(cat.Properties)
	t.Cleanup(func() { store.(interface{ CloseIdleConnections() }).CloseIdleConnections() })
	put := func(loc, body string) {
		t.Helper()
		if err := store.Put(ctx, loc, strings.NewReader(body), int64(len(body))); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(loc string) bool {
		t.Helper()
		rc, err := store.Get(ctx, loc)
		if err != nil {
			return false
		}
		rc.Close()
		return true
	}

	m, _ := newMaintainer(t, cfg)
	m.orphanAge = 72 * time.Hour
	m.now = func() time.Time { return time.Now().Add(96 * time.Hour) }
	icat, tbl := m.testTable(t)
	live := liveFiles(t, tbl)[0].FilePath()
	liveSidecar := bloom.SidecarName(strings.TrimSuffix(live, ".parquet"), "note")
	put(liveSidecar, "sidecar")
	dataDir := live[:strings.LastIndex(live, "/")]
	orphan := dataDir + "/" + CompactedPrefix + "left-by-a-crash.parquet"
	put(orphan, "orphan")
	reuploaded := dataDir + "/7d0c2a4e-9b1f-4e8a-8c3d-5f6a7b8c9d0e.parquet"
	put(reuploaded, "first upload")
	appended := false
	view := wrapFS(icat, tbl, func(_ context.Context, inner icebergio.IO) icebergio.IO {
		return listHookIO{IO: inner, after: func() {
			if !appended {
				appended = true
				put(reuploaded, "second upload")
			}
		}}
	})
	if _, _, err := m.deleteOrphans(ctx, icat, view); err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{live, liveSidecar, reuploaded} {
		if !exists(loc) {
			t.Errorf("%s deleted", loc)
		}
	}
	if exists(orphan) {
		t.Errorf("old orphan %s not deleted", orphan)
	}
	if got := testutil.ToFloat64(m.metrics.orphansKept.WithLabelValues("events", keptChanged)); got != 1 {
		t.Errorf("kept (changed) %v, want 1", got)
	}
	if got := ids(t, loadTable(t, cfg)); !slices.Equal(got, []int64{0}) {
		t.Errorf("ids %v, want [0]", got)
	}
}
