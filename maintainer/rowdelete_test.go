package maintainer

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

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
func openTable(t testing.TB, cfg *config.Config) *table.Table {
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
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.Append(id)
	col := b.NewArray()
	defer col.Release()
	deleteByEquality(t, cfg, "id", col)
}

// deleteByEquality commits one equality-delete file on column, of the
// values of col.
func deleteByEquality(t *testing.T, cfg *config.Config, column string, col arrow.Array) {
	t.Helper()
	ctx := context.Background()
	tbl := openTable(t, cfg)
	field, ok := tbl.Schema().FindFieldByName(column)
	if !ok {
		t.Fatalf("no %s column", column)
	}
	sc, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, field), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, int64(col.Len()))
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

// upsert commits new versions of the rows ids as the committer does for
// an upsert dataset: a data file holding them and an equality delete on
// id for the same keys, in one row-delta snapshot, so that the delete
// removes the older versions and not the new ones (an equality delete
// applies only to files with a smaller data sequence number).
func upsert(t testing.TB, cfg *config.Config, ids ...int64) {
	t.Helper()
	ctx := context.Background()
	tbl := openTable(t, cfg)
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append("updated")
	}
	rec := b.NewRecordBatch()
	var files []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, sc, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }) {
		if err != nil {
			t.Fatalf("write the new versions of %v: %v", ids, err)
		}
		files = append(files, df)
	}
	field, _ := tbl.Schema().FindFieldByName("id")
	keySchema, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, field), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	kb := array.NewInt64Builder(memory.DefaultAllocator)
	defer kb.Release()
	kb.AppendValues(ids, nil)
	col := kb.NewArray()
	defer col.Release()
	keys := array.NewRecordBatch(keySchema, []arrow.Array{col}, int64(len(ids)))
	defer keys.Release()
	tx := tbl.NewTransaction()
	deletes, err := tx.WriteEqualityDeletes(ctx, []int{field.ID}, func(yield func(arrow.RecordBatch, error) bool) { yield(keys, nil) })
	if err != nil {
		t.Fatalf("write the equality delete of %v: %v", ids, err)
	}
	if err := tx.NewRowDelta(nil).AddRows(files...).AddDeletes(deletes...).Commit(ctx); err != nil {
		t.Fatalf("stage the upsert of %v: %v", ids, err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit the upsert of %v: %v", ids, err)
	}
}

// rowsByID scans the table: each id with its note, and how often it
// reads.
func rowsByID(t *testing.T, tbl *table.Table) (notes map[int64]string, count map[int64]int) {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	notes, count = map[int64]string{}, map[int64]int{}
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		idc, nc := rec.Column(0).(*array.Int64), rec.Column(1).(*array.String)
		for i := range idc.Len() {
			notes[idc.Value(i)] = nc.Value(i)
			count[idc.Value(i)]++
		}
	}
	return notes, count
}

// A delete that lands after the maintainer read a group's files, before
// the committer applies the hand-off, is one the compacted file does not
// hold. An equality delete (another engine's, or the ingestor's committer
// upserting a key of the group) still applies to the compacted file,
// which takes the read snapshot's data sequence number: the group is
// applied and the row stays deleted. A position delete cannot follow its
// row into the compacted file: the group is dropped, and the row stays
// deleted in its segment. Never does the deleted row read again.
func TestCompactionNeverResurrectsADeletedRow(t *testing.T) {
	cases := []struct {
		name string
		mode string
		// del deletes the row; inFlight runs it between the staging of
		// the replace and its first commit instead of before the apply.
		del      func(t *testing.T, cfg *config.Config, id int64)
		inFlight bool
		// applied: the group is committed; else it is dropped, for its
		// deletes unless control.
		applied bool
		// wantPos and wantEq are the delete files applying after the
		// apply: the delete the group does not hold stays.
		wantPos, wantEq int
		// control is the case that drops the group for a file no
		// longer live, not for its deletes.
		control bool
	}{
		{name: "position delete after the read", mode: table.WriteModeMergeOnRead, del: deleteRow, wantPos: 1},
		{name: "position delete during the replace", mode: table.WriteModeMergeOnRead, del: deleteRow, inFlight: true, wantPos: 1},
		{name: "equality delete after the read", mode: table.WriteModeMergeOnRead, del: deleteRowByEquality, applied: true, wantEq: 1},
		{name: "equality delete during the replace", mode: table.WriteModeMergeOnRead, del: deleteRowByEquality, inFlight: true, applied: true, wantEq: 1},
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
				if got, want := ids(t, loadTable(t, cfg)), idsBut(deletedID); !slices.Equal(got, want) {
					t.Fatalf("ids after the delete %v, want %v", got, want)
				}
			}

			res := commitHandoffs(t, cfg, before)

			compacted := note.Groups[0].File
			switch {
			case tc.applied:
				if res.Applied != 1 || res.Dropped != 0 {
					t.Errorf("hand-off result %+v, want its one group applied", res)
				}
			case res.Applied != 0 || res.Dropped != 1 || !slices.Equal(res.DroppedFiles, []string{compacted}):
				t.Errorf("hand-off result %+v, want its one group dropped", res)
			case res.DroppedForDeletes != map[bool]int{false: 1, true: 0}[tc.control]:
				t.Errorf("groups dropped for their deletes %d, want %d", res.DroppedForDeletes, map[bool]int{false: 1, true: 0}[tc.control])
			}
			tbl := loadTable(t, cfg)
			if got, want := ids(t, tbl), idsBut(deletedID); !slices.Equal(got, want) {
				t.Errorf("ids after the committer applied the hand-off %v, want %v (id %d deleted)", got, want, deletedID)
			}
			live := false
			for _, f := range liveFiles(t, tbl) {
				live = live || f.FilePath() == compacted
			}
			if live != tc.applied {
				t.Errorf("compacted file live %v, want %v", live, tc.applied)
			}
			if !tc.control {
				if pos, eq := deleteFiles(t, cfg); pos != tc.wantPos || eq != tc.wantEq {
					t.Errorf("%d position and %d equality delete files applying after the apply, want %d and %d", pos, eq, tc.wantPos, tc.wantEq)
				}
			}
		})
	}
}

// Compaction applies the deletes of the files it rewrites: the compacted
// file holds the live rows only, the delete files that applied only to
// its inputs leave the table in the same replace, and a scan reads
// exactly the rows it read before, each once. Here another engine's
// position delete (id 4) and equality delete (id 10), and an upsert of
// id 16 (a new version and an equality delete on its key in one
// snapshot), all land before the pass.
func TestCompactionAppliesDeletes(t *testing.T) {
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), map[string]string{table.WriteDeleteModeKey: table.WriteModeMergeOnRead})
	cfg.Maintenance.CompactionFanIn = 8
	for i := range int64(8) {
		appendNotes(t, cfg, []int64{3 * i, 3*i + 1, 3*i + 2})
	}
	deleteRow(t, cfg, 4)
	deleteRowByEquality(t, cfg, 10)
	upsert(t, cfg, 16)
	if pos, eq := deleteFiles(t, cfg); pos != 1 || eq != 2 {
		t.Fatalf("%d position and %d equality delete files applying before the pass, want 1 and 2", pos, eq)
	}
	wantNotes, wantCount := rowsByID(t, loadTable(t, cfg))
	if len(wantNotes) != 22 || wantNotes[16] != "updated" || wantCount[16] != 1 {
		t.Fatalf("before the pass the table reads %d ids, id 16 %q x%d; want 22, the update once", len(wantNotes), wantNotes[16], wantCount[16])
	}
	m, _ := newMaintainer(t, cfg)
	res := passAndCommit(t, m, cfg)
	if res.Applied == 0 || res.Dropped != 0 {
		t.Fatalf("hand-off result %+v, want its groups applied", res)
	}
	// The pass saw the table before the committer applied its replace:
	// three delete files in its one partition, deleting three rows.
	if st := m.Status().Datasets["events"]; st.DeleteFiles == nil || *st.DeleteFiles != 3 || *st.PartitionDeleteFiles != 3 || *st.DeletedRows != 3 {
		t.Errorf("status after the pass %+v, want 3 delete files, 3 in the partition, 3 deleted rows", st)
	}
	tbl := loadTable(t, cfg)
	gotNotes, gotCount := rowsByID(t, tbl)
	if !maps.Equal(gotNotes, wantNotes) || !maps.Equal(gotCount, wantCount) {
		t.Errorf("after compaction the table reads %v (counts %v), want %v (counts %v)", gotNotes, gotCount, wantNotes, wantCount)
	}
	if pos, eq := deleteFiles(t, cfg); pos != 0 || eq != 0 {
		t.Errorf("%d position and %d equality delete files applying after compaction, want none", pos, eq)
	}
	var rows int64
	files := liveFiles(t, tbl)
	for _, f := range files {
		rows += f.Count()
	}
	if rows != 22 || len(files) != 1 {
		t.Errorf("%d data files of %d rows after compaction, want one of the 22 live rows", len(files), rows)
	}
	if n := deleteFileEntries(t, tbl); n != 0 {
		t.Errorf("%d delete files left in the table's manifests, want none", n)
	}
	if got := testutil.ToFloat64(m.metrics.deletesApplied.WithLabelValues("events")); got != 3 {
		t.Errorf("ingestor_maintainer_deletes_applied_total %v, want 3 (ids 4, 10 and the old 16)", got)
	}
	m.pass(context.Background())
	if got := testutil.ToFloat64(m.metrics.deleteFiles.WithLabelValues("events")); got != 0 {
		t.Errorf("ingestor_maintainer_delete_files %v at the next pass, want 0", got)
	}
}

// deleteFileEntries counts the live delete files in the current snapshot's
// manifests, whether or not a scan attaches them to a data file.
func deleteFileEntries(t *testing.T, tbl *table.Table) int {
	t.Helper()
	files, err := tables.ReadTableFiles(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	return len(files.Deletes)
}

// deleteNoteByEquality deletes every row whose note is note, with an
// equality delete on the note column: delete files on another column
// than the upserts' key.
func deleteNoteByEquality(t *testing.T, cfg *config.Config, note string) {
	t.Helper()
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Append(note)
	col := b.NewArray()
	defer col.Release()
	deleteByEquality(t, cfg, "note", col)
}

// Compaction reads a group's delete files once and checks each file's
// rows against those the plan attached to it (groupdeletes.go), not
// through the scan's per-file merged key sets and per-file reads of
// position deletes. It must remove exactly
// the rows the scan removes: here 24 upserts of overlapping keys, so
// that each key has versions in several files and each delete applies
// to some files of the group and not others, with another engine's
// position delete among them. The compacted table reads what the table
// read before, each key once. With an equality delete on another column
// as well, the group falls back to the scan, with the same result.
func TestCompactionAppliesEqualityDeletesOncePerGroup(t *testing.T) {
	for _, otherColumn := range []bool{false, true} {
		t.Run(map[bool]string{false: "key deletes", true: "and a delete on another column"}[otherColumn], func(t *testing.T) {
			dir := t.TempDir()
			cfg := wideConfig(dir, sqliteCatalog(t, dir), map[string]string{table.WriteDeleteModeKey: table.WriteModeMergeOnRead})
			cfg.Maintenance.CompactionFanIn = 64
			appendNotes(t, cfg, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
			for i := range int64(24) {
				upsert(t, cfg, i%12, (i*5+3)%12, 12+i/3)
				if i == 9 {
					deleteRow(t, cfg, 13)
				}
			}
			if otherColumn {
				appendNotes(t, cfg, []int64{100, 101})
				deleteNoteByEquality(t, cfg, "updated")
				upsert(t, cfg, 5, 100)
			}
			tbl := loadTable(t, cfg)
			tasks, err := tbl.Scan().PlanFiles(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			fs, _ := tbl.FS(context.Background())
			gd, ok, err := readGroupDeletes(context.Background(), fs, tbl.Schema(), tasks)
			if err != nil {
				t.Fatal(err)
			}
			if ok == otherColumn {
				t.Fatalf("group deletes read here %v, want %v", ok, !otherColumn)
			}
			if ok && len(gd.files) != 25 {
				t.Fatalf("%d delete files read for the group, want the 24 upserts' and the position delete", len(gd.files))
			}
			wantNotes, wantCount := rowsByID(t, tbl)
			m, _ := newMaintainer(t, cfg)
			// An hour later: the partition is idle, and its deletes pay
			// for a rewrite whole.
			m.now = func() time.Time { return time.Now().Add(time.Hour) }
			if res := passAndCommit(t, m, cfg); res.Applied == 0 || res.Dropped != 0 {
				t.Fatalf("hand-off result %+v, want its groups applied", res)
			}
			gotNotes, gotCount := rowsByID(t, loadTable(t, cfg))
			if !maps.Equal(gotNotes, wantNotes) || !maps.Equal(gotCount, wantCount) {
				t.Errorf("after compaction the table reads %v (counts %v), want %v (counts %v)", gotNotes, gotCount, wantNotes, wantCount)
			}
			for id, n := range gotCount {
				if n != 1 {
					t.Errorf("id %d reads %d times", id, n)
				}
			}
			if pos, eq := deleteFiles(t, cfg); pos != 0 || eq != 0 {
				t.Errorf("%d position and %d equality delete files applying after compaction, want none", pos, eq)
			}
		})
	}
}

// A file reaches the writer in several records: the rows a position
// delete names are counted across them. Here a segment of 1,000 rows in
// row groups of 100, read in records of 64 rows, another engine's position deletes of rows in the first and the
// eighth group, and an upsert of a key in the fifth: compaction keeps
// exactly what the scan reads.
func TestCompactionCountsPositionsAcrossRecords(t *testing.T) {
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), map[string]string{
		table.WriteDeleteModeKey:      table.WriteModeMergeOnRead,
		table.ParquetRowGroupLimitKey: "100",
		table.ParquetBatchSizeKey:     "64",
	})
	cfg.Maintenance.CompactionFanIn = 2
	ids := make([]int64, 1000)
	for i := range ids {
		ids[i] = int64(i)
	}
	appendNotes(t, cfg, ids)
	tbl := loadTable(t, cfg)
	for _, f := range liveFiles(t, tbl) {
		fs, _ := tbl.FS(context.Background())
		src, err := fs.Open(f.FilePath())
		if err != nil {
			t.Fatal(err)
		}
		pr, err := file.NewParquetReader(src)
		if err != nil {
			t.Fatal(err)
		}
		if pr.NumRowGroups() != 10 {
			t.Fatalf("the segment has %d row groups, want 10", pr.NumRowGroups())
		}
		pr.Close()
	}
	deleteRow(t, cfg, 7)
	deleteRow(t, cfg, 777)
	upsert(t, cfg, 450)
	want, wantCount := rowsByID(t, loadTable(t, cfg))
	if len(want) != 998 || want[450] != "updated" {
		t.Fatalf("before compaction the table reads %d ids, id 450 %q; want 998, the update", len(want), want[450])
	}
	m, _ := newMaintainer(t, cfg)
	m.now = func() time.Time { return time.Now().Add(time.Hour) } // the partition idle
	if res := passAndCommit(t, m, cfg); res.Applied == 0 || res.Dropped != 0 {
		t.Fatalf("hand-off result %+v, want its groups applied", res)
	}
	got, gotCount := rowsByID(t, loadTable(t, cfg))
	if !maps.Equal(got, want) || !maps.Equal(gotCount, wantCount) {
		t.Errorf("after compaction the table reads %d ids (7: %v, 777: %v, 450: %q), want %d", len(got), gotCount[7], gotCount[777], got[450], len(want))
	}
}

// The context of a compaction ends while its files are read: the rows
// stop with an error, never with a clean end, which the writer would
// take for rows the deletes removed and commit. Each of the 16 files
// read at once is 16 records of 64 rows, so when the context ends every
// reader is waiting to hand on a record the writer has no room for, and
// stops without one.
func TestCompactionReadStopsWithAnError(t *testing.T) {
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), map[string]string{table.ParquetBatchSizeKey: "64"})
	for f := range int64(20) {
		ids := make([]int64, 1000)
		for i := range ids {
			ids[i] = f*1000 + int64(i)
		}
		appendNotes(t, cfg, ids)
	}
	deleteRowByEquality(t, cfg, 5)
	tbl := loadTable(t, cfg)
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	records, err := readGroup(ctx, tbl, nil, tasks)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	var last error
	for rec, err := range records {
		if err != nil {
			last = err
			break
		}
		if rows == 0 {
			time.Sleep(300 * time.Millisecond) // the readers fill their room
			cancel()
		}
		rows += rec.NumRows()
		rec.Release()
	}
	if !errors.Is(last, context.Canceled) {
		t.Errorf("after %d of 19,999 rows the read ended with %v, want context.Canceled", rows, last)
	}
}
