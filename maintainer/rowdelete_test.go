package maintainer

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// deletedID is the row another engine deletes in these tests: the second
// of the eight segments' three.
const deletedID = 4

// deleteFixture is a table of eight segments of three rows each (ids
// 0..23) whose delete mode is mode, and the hand-off note of the
// maintainer's pass that compacted all eight (fan-in 8), not applied yet.
func deleteFixture(t *testing.T, mode string) (*config.Config, walfile.HandoffFile) {
	t.Helper()
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), map[string]string{table.WriteDeleteModeKey: mode})
	cfg.Maintenance.CompactionFanIn = 8
	for i := range int64(8) {
		appendNotes(t, cfg, []int64{3 * i, 3*i + 1, 3*i + 2})
	}
	m, _ := newMaintainer(t, cfg)
	m.pass(context.Background())
	notes, bad, err := walfile.ListHandoffs(m.dir, "events")
	if err != nil || len(bad) > 0 || len(notes) != 1 || len(notes[0].Groups) != 1 || len(notes[0].Groups[0].Replaced) != 8 {
		t.Fatalf("hand-offs after a pass: %+v (bad %v, err %v), want one group of the eight segments", notes, bad, err)
	}
	return cfg, notes[0]
}

// idsBut is 0..23 without the deleted row.
func idsBut(deleted int64) []int64 {
	var out []int64
	for id := range int64(24) {
		if id != deleted {
			out = append(out, id)
		}
	}
	return out
}

// openTable is the dataset's table through a catalog that stays open
// until the test ends, so that a transaction on it can commit.
func openTable(t *testing.T, cfg *config.Config) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat, err := tables.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeCat(cat) })
	tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier(cfg.Datasets[0].TableIdent()...))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// deleteRow deletes the row id as another engine's DELETE would, with
// iceberg-go's own Transaction.Delete: by the table's write.delete.mode,
// a position delete file (merge-on-read) or a rewrite of the segment that
// holds it (copy-on-write).
func deleteRow(t *testing.T, cfg *config.Config, id int64) {
	t.Helper()
	tx := openTable(t, cfg).NewTransaction()
	if err := tx.Delete(context.Background(), iceberg.EqualTo(iceberg.Reference("id"), id), nil); err != nil {
		t.Fatalf("delete id %d: %v", id, err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatalf("commit the delete of id %d: %v", id, err)
	}
}

// deleteRowByEquality deletes the row id with an equality delete on the
// id column (a streaming upsert's delete), written and committed with
// iceberg-go's WriteEqualityDeletes and RowDelta.
func deleteRowByEquality(t *testing.T, cfg *config.Config, id int64) {
	t.Helper()
	ctx := context.Background()
	tbl := openTable(t, cfg)
	field, ok := tbl.Schema().FindFieldByName("id")
	if !ok {
		t.Fatal("no id column")
	}
	sc, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, field), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.Append(id)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, 1)
	defer rec.Release()
	records := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
	tx := tbl.NewTransaction()
	files, err := tx.WriteEqualityDeletes(ctx, []int{field.ID}, records)
	if err != nil {
		t.Fatalf("write the equality delete: %v", err)
	}
	if err := tx.NewRowDelta(nil).AddDeletes(files...).Commit(ctx); err != nil {
		t.Fatalf("stage the equality delete: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit the equality delete: %v", err)
	}
}

// deleteFiles counts the distinct delete files of each kind that the
// current snapshot applies to some data file.
func deleteFiles(t *testing.T, cfg *config.Config) (pos, eq int) {
	t.Helper()
	tasks, err := loadTable(t, cfg).Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	posFiles, eqFiles := map[string]bool{}, map[string]bool{}
	for _, task := range tasks {
		for _, f := range slices.Concat(task.DeleteFiles, task.DeletionVectorFiles) {
			posFiles[f.FilePath()] = true
		}
		for _, f := range task.EqualityDeleteFiles {
			eqFiles[f.FilePath()] = true
		}
	}
	return len(posFiles), len(eqFiles)
}

// Another engine deletes one row of a segment after the maintainer
// planned and wrote the compaction of it, before the committer applies
// the hand-off. The compacted file still holds the row: applying it would
// bring the row back. The group is dropped; the deleted row stays deleted
// and every other row is in the table once.
func TestCompactionNeverResurrectsADeletedRow(t *testing.T) {
	cases := []struct {
		name string
		mode string
		// del deletes the row; inFlight runs it between the staging of
		// the replace and its first commit instead of before the apply.
		del      func(t *testing.T, cfg *config.Config, id int64)
		inFlight bool
		// wantPos and wantEq are the delete files the delete leaves
		// applying to the segments: what makes the case the one it says.
		wantPos, wantEq int
		// control is the case that drops the group for a file no
		// longer live, not for its deletes.
		control bool
	}{
		{name: "merge-on-read position delete", mode: table.WriteModeMergeOnRead, del: deleteRow, wantPos: 1},
		{name: "equality delete", mode: table.WriteModeMergeOnRead, del: deleteRowByEquality, wantEq: 1},
		{name: "position delete during the replace", mode: table.WriteModeMergeOnRead, del: deleteRow, inFlight: true, wantPos: 1},
		// The control: the segment is rewritten without the row, so the
		// input is no longer live, which was always checked.
		{name: "copy-on-write delete", mode: table.WriteModeCopyOnWrite, del: deleteRow, control: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, note := deleteFixture(t, tc.mode)
			var before func(int)
			if tc.inFlight {
				before = func(attempt int) {
					if attempt == 1 {
						tc.del(t, cfg, deletedID)
					}
				}
			} else {
				tc.del(t, cfg, deletedID)
			}
			if !tc.inFlight {
				if pos, eq := deleteFiles(t, cfg); pos != tc.wantPos || eq != tc.wantEq {
					t.Fatalf("the delete left %d position and %d equality delete files applying, want %d and %d", pos, eq, tc.wantPos, tc.wantEq)
				}
				if got, want := ids(t, loadTable(t, cfg)), idsBut(deletedID); !slices.Equal(got, want) {
					t.Fatalf("ids after the delete %v, want %v", got, want)
				}
			}

			res := commitHandoffs(t, cfg, before)

			if res.Applied != 0 || res.Dropped != 1 || !slices.Equal(res.DroppedFiles, []string{note.Groups[0].File}) {
				t.Errorf("hand-off result %+v, want its one group dropped", res)
			}
			if want := map[bool]int{false: 1, true: 0}[tc.control]; res.DroppedForDeletes != want {
				t.Errorf("groups dropped for their deletes %d, want %d", res.DroppedForDeletes, want)
			}
			tbl := loadTable(t, cfg)
			if got, want := ids(t, tbl), idsBut(deletedID); !slices.Equal(got, want) {
				t.Errorf("ids after the committer applied the hand-off %v, want %v (id %d deleted)", got, want, deletedID)
			}
			for _, f := range liveFiles(t, tbl) {
				if f.FilePath() == note.Groups[0].File {
					t.Errorf("the compacted file %s, which holds the deleted row, is live", f.FilePath())
				}
			}
			if tc.inFlight {
				if pos, eq := deleteFiles(t, cfg); pos != 1 || eq != 0 {
					t.Errorf("the delete during the replace left %d position and %d equality delete files applying, want 1 and 0", pos, eq)
				}
			}
		})
	}
}

// The planner leaves files with deletes out of its groups: the compacted
// file would carry the deleted rows, or a newer data sequence number than
// an equality delete. Here an equality delete applies to one of nine
// files (the others' statistics rule the id out); the eight others are
// compacted, and the row stays deleted.
func TestCompactionPlansNoFileWithDeletes(t *testing.T) {
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), nil)
	cfg.Maintenance.CompactionFanIn = 8
	for i := range int64(9) {
		appendNotes(t, cfg, []int64{3 * i, 3*i + 1, 3*i + 2})
	}
	deleteRowByEquality(t, cfg, deletedID)
	tasks, err := loadTable(t, cfg).Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	withDeletes := map[string]bool{}
	for _, task := range tasks {
		if len(task.EqualityDeleteFiles) > 0 {
			withDeletes[task.File.FilePath()] = true
		}
	}
	if len(withDeletes) != 1 {
		t.Fatalf("%d files with an equality delete applying, want 1", len(withDeletes))
	}
	m, _ := newMaintainer(t, cfg)
	m.pass(context.Background())
	notes, _, err := walfile.ListHandoffs(m.dir, "events")
	if err != nil || len(notes) != 1 || len(notes[0].Groups) != 1 {
		t.Fatalf("hand-offs %+v (err %v), want one group", notes, err)
	}
	g := notes[0].Groups[0]
	for _, p := range g.Replaced {
		if withDeletes[p] {
			t.Errorf("the group replaces %s, which has a delete file", p)
		}
	}
	if len(g.Replaced) != 8 {
		t.Errorf("the group replaces %d files, want the 8 without deletes", len(g.Replaced))
	}
	if res := commitHandoffs(t, cfg, nil); res.Applied != 1 {
		t.Errorf("hand-off result %+v, want the group applied", res)
	}
	want := make([]int64, 0, 26)
	for id := range int64(27) {
		if id != deletedID {
			want = append(want, id)
		}
	}
	if got := ids(t, loadTable(t, cfg)); !slices.Equal(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}
}
