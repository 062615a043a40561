package maintainer

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// handoffFixture is a table of four one-row files and the hand-off note of
// one pass that compacted them, not applied yet.
func handoffFixture(t *testing.T) (*Maintainer, walfile.HandoffFile, func() []int64) {
	t.Helper()
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), nil)
	cfg.Maintenance.CompactionFanIn = 4
	for i := range int64(4) {
		appendNotes(t, cfg, []int64{i})
	}
	m, _ := newMaintainer(t, cfg)
	m.pass(context.Background())
	notes, bad, err := walfile.ListHandoffs(m.dir, "events")
	if err != nil || len(bad) > 0 || len(notes) != 1 {
		t.Fatalf("hand-offs after a pass: %d (bad %v, err %v), want 1", len(notes), bad, err)
	}
	return m, notes[0], func() []int64 { return ids(t, loadTable(t, cfg)) }
}

// testTable is the maintainer's catalog and the dataset's table loaded
// through it, which stays open for the test.
func (m *Maintainer) testTable(t *testing.T) (catalog.Catalog, *table.Table) {
	t.Helper()
	ctx := context.Background()
	cat, err := m.catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier(m.cfg.Datasets[0].TableIdent()...))
	if err != nil {
		t.Fatal(err)
	}
	return cat, tbl
}

func applyNote(t *testing.T, m *Maintainer, n walfile.HandoffFile) tables.HandoffResult {
	t.Helper()
	ctx := context.Background()
	cat, tbl := m.testTable(t)
	_, res, err := tables.ApplyHandoff(ctx, cat, tbl, n.Handoff, nil)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return res
}

// While its hand-off waits for the committer, a pass plans no new
// compaction of the same files (which are still live) and its orphan
// cleanup leaves the compacted file, which no metadata names yet, alone.
func TestHandoffWaitingBlocksReplanningAndOrphanCleanup(t *testing.T) {
	m, note, _ := handoffFixture(t)
	m.orphanAge = time.Nanosecond // everything unreferenced is old enough
	m.pass(context.Background())
	notes, _, _ := walfile.ListHandoffs(m.dir, "events")
	if len(notes) != 1 {
		t.Errorf("%d hand-offs after a second pass, want the first alone", len(notes))
	}
	objs := compactedObjects(t, loadTable(t, m.cfg))
	if len(objs) != 1 {
		t.Fatalf("compacted objects %v, want the first pass's one", objs)
	}
	if !strings.HasSuffix(note.Groups[0].File, objs[0][strings.LastIndex(objs[0], "/"):]) {
		t.Errorf("compacted object %s is not the hand-off's %s", objs[0], note.Groups[0].File)
	}
	// Once applied, the orphan cleanup runs again, and keeps the now
	// referenced file.
	if res := applyNote(t, m, note); res.Applied != 1 {
		t.Fatalf("applied %d groups, want 1", res.Applied)
	}
	os.Remove(note.Path)
	m.pass(context.Background())
	if objs := compactedObjects(t, loadTable(t, m.cfg)); len(objs) != 1 {
		t.Errorf("compacted objects after the applied pass %v, want 1", objs)
	}
}

// A committer that dies after the replace and before deleting the note
// (failpoint committer.after-replace) finds it applied at its restart:
// no second replace, no row doubled, even when the compacted file was
// compacted again since and is no longer live.
func TestHandoffAppliedOnceAfterACrash(t *testing.T) {
	m, note, rows := handoffFixture(t)
	if res := applyNote(t, m, note); res.Applied != 1 {
		t.Fatalf("first apply: %+v, want 1 applied", res)
	}
	snaps := len(loadTable(t, m.cfg).Metadata().Snapshots())
	res := applyNote(t, m, note)
	if res.Applied != 0 || res.AlreadyIn != 1 || res.Dropped != 0 {
		t.Errorf("second apply: %+v, want the group already in", res)
	}
	if got := len(loadTable(t, m.cfg).Metadata().Snapshots()); got != snaps {
		t.Errorf("%d snapshots after the second apply, want %d", got, snaps)
	}
	if got := rows(); !slices.Equal(got, []int64{0, 1, 2, 3}) {
		t.Errorf("ids %v, want [0 1 2 3]", got)
	}
}

// Another engine compacts the same files first (iceberg-go's own
// RewriteDataFiles, as a Spark job would): the hand-off can never apply,
// it is dropped, and every row is in the table once.
func TestHandoffDroppedWhenAnotherWriterReplacedItsFiles(t *testing.T) {
	m, note, rows := handoffFixture(t)
	ctx := context.Background()
	_, tbl := m.testTable(t)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	groups := []table.CompactionTaskGroup{{Tasks: tasks}}
	if _, err := tbl.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{}); err != nil {
		t.Fatalf("another engine's compaction: %v", err)
	}
	res := applyNote(t, m, note)
	if res.Applied != 0 || res.Dropped != 1 || len(res.DroppedFiles) != 1 || res.DroppedFiles[0] != note.Groups[0].File {
		t.Errorf("apply after another engine's compaction: %+v, want the group dropped", res)
	}
	if got := rows(); !slices.Equal(got, []int64{0, 1, 2, 3}) {
		t.Errorf("ids %v, want [0 1 2 3]", got)
	}
	for _, f := range liveFiles(t, loadTable(t, m.cfg)) {
		if f.FilePath() == note.Groups[0].File {
			t.Errorf("the dropped compacted file %s is live", f.FilePath())
		}
	}
}

// A compacted file deleted before its hand-off is applied (a volume or a
// bucket restored from a backup) drops the group: its rows are still in
// the files it was to replace.
func TestHandoffDroppedWhenItsFileIsGone(t *testing.T) {
	m, note, rows := handoffFixture(t)
	if err := os.Remove(strings.TrimPrefix(note.Groups[0].File, "file://")); err != nil {
		t.Fatal(err)
	}
	res := applyNote(t, m, note)
	if res.Applied != 0 || res.Dropped != 1 {
		t.Errorf("apply of a gone file: %+v, want the group dropped", res)
	}
	if got := rows(); !slices.Equal(got, []int64{0, 1, 2, 3}) {
		t.Errorf("ids %v, want [0 1 2 3]", got)
	}
}

// A hand-off written for a table since dropped and recreated under the
// same name never applies to the new one.
func TestHandoffDroppedForARecreatedTable(t *testing.T) {
	m, note, _ := handoffFixture(t)
	ctx := context.Background()
	cat, err := m.catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.DropTable(ctx, catalog.ToIdentifier(m.cfg.Datasets[0].TableIdent()...)); err != nil {
		t.Fatal(err)
	}
	appendNotes(t, m.cfg, []int64{7}) // creates the new table
	res := applyNote(t, m, note)
	if res.Applied != 0 || res.Dropped != 1 {
		t.Errorf("apply to a recreated table: %+v, want the group dropped", res)
	}
	if got := ids(t, loadTable(t, m.cfg)); !slices.Equal(got, []int64{7}) {
		t.Errorf("ids of the new table %v, want [7]", got)
	}
}

// A pass that loaded the table before the committer applied the last note
// plans on the table as it is after the note: no second compaction of
// the files the note replaced, which the committer could only drop.
func TestCompactionPlansOnTheTableAfterTheLastNote(t *testing.T) {
	m, note, _ := handoffFixture(t)
	stale := loadTable(t, m.cfg) // the pass's table, from before the apply
	if res := applyNote(t, m, note); res.Applied != 1 {
		t.Fatalf("apply: %+v", res)
	}
	if err := os.Remove(note.Path); err != nil {
		t.Fatal(err)
	}
	cat, err := m.catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := m.compact(context.Background(), m.log, cat, stale, "events")
	if err != nil {
		t.Fatal(err)
	}
	notes, _, _ := walfile.ListHandoffs(m.dir, "events")
	if plan.groups != 0 || len(notes) != 0 {
		t.Errorf("compaction on a stale table planned %d groups, wrote %d notes; want none: the files were compacted already", plan.groups, len(notes))
	}
}
