package tables

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/config"
)

// manyFilesTable creates an unpartitioned table in a SQLite catalog with a
// local warehouse and appends snapshots appends of filesPer files each, the
// way the committer does (summary records, no duplicate check), all in one
// catalog commit. The data files are described, not written: nothing reads
// them. It returns the catalog, the table and the UUIDs of each append.
func manyFilesTable(tb testing.TB, snapshots, filesPer int) (catalog.Catalog, *table.Table, [][]uuid.UUID) {
	tb.Helper()
	ctx := context.Background()
	c := sqliteCatalog(tb.TempDir())
	cat, err := OpenCatalog(ctx, c)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if cl, ok := cat.(catalog.Closer); ok {
			cl.Close()
		}
	})
	d := config.Dataset{Name: "events", Topic: "events", Table: "bench.events", Create: &config.CreateTable{
		Columns: []config.Column{{Name: "id", Type: "string", Required: true}},
	}}
	tbl, err := Load(ctx, cat, d)
	if err != nil {
		tb.Fatal(err)
	}
	spec := tbl.Spec()
	tx := tbl.NewTransaction()
	ids := make([][]uuid.UUID, snapshots)
	for s := range snapshots {
		var files []iceberg.DataFile
		for range filesPer {
			id := uuid.New()
			ids[s] = append(ids[s], id)
			b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData,
				tbl.Location()+"/data/"+id.String()+".parquet", iceberg.ParquetFile, map[int]any{}, nil, nil, 100, 4096)
			if err != nil {
				tb.Fatal(err)
			}
			files = append(files, b.Build())
		}
		if err := tx.AddDataFiles(ctx, files, SnapshotProperties(d.Name, ids[s]), table.WithoutDuplicateCheck()); err != nil {
			tb.Fatalf("append %d: %v", s, err)
		}
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		tb.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != snapshots {
		tb.Fatalf("table has %d snapshots, want %d", n, snapshots)
	}
	return cat, tbl, ids
}

// expire keeps only the newest keep snapshots of tbl, as a user's table
// maintenance does, leaving the files themselves alone.
func expire(tb testing.TB, tbl *table.Table, keep int) *table.Table {
	tb.Helper()
	time.Sleep(5 * time.Millisecond) // every snapshot is older than 0 ms
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(keep), table.WithOlderThan(0), table.WithPostCommit(false)); err != nil {
		tb.Fatal(err)
	}
	tbl, err := tx.Commit(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != keep {
		tb.Fatalf("after expiry the table keeps %d snapshots, want %d", n, keep)
	}
	return tbl
}

func TestSegmentsInTable(t *testing.T) {
	ctx := context.Background()
	_, tbl, ids := manyFilesTable(t, 6, 3)
	if _, cut := HistoryCut(tbl.Metadata()); cut {
		t.Fatal("a table with its whole history reports a cut")
	}
	now := time.Now()
	long := now.Add(-time.Hour)             // written long before every snapshot
	after := now.Add(2 * SnapshotClockSkew) // written after every snapshot, beyond the skew
	absent := uuid.New()
	// Snapshots 0-3 get expired; a local copy of one of their files written
	// before them is the case the summaries alone would miss.
	old, recent := ids[1][2], ids[5][0]

	t.Run("whole history: summaries only", func(t *testing.T) {
		in, st, err := segmentsInTable(ctx, tbl, "", []Segment{{old, long}, {recent, long}, {absent, long}})
		if err != nil {
			t.Fatal(err)
		}
		if !in[old] || !in[recent] || in[absent] || st.Exact != 0 || st.Manifests != 0 {
			t.Fatalf("in=%v stats=%+v; want old and recent in, absent out, no manifest read", in, st)
		}
	})

	tbl = expire(t, tbl, 2)
	cutAt, cut := HistoryCut(tbl.Metadata())
	if !cut {
		t.Fatal("no cut reported after expiry")
	}
	if FilesInTable(tbl)[old] {
		t.Fatal("the expired snapshot's record is still there; the test proves nothing")
	}

	tests := []struct {
		name          string
		segs          []Segment
		wantIn        []uuid.UUID
		wantOut       []uuid.UUID
		exact         int
		readManifests bool
	}{
		{name: "expired record, written before the cut: exact scan finds it",
			segs: []Segment{{old, long}}, wantIn: []uuid.UUID{old}, exact: 1, readManifests: true},
		{name: "kept record: no scan",
			segs: []Segment{{recent, long}}, wantIn: []uuid.UUID{recent}, exact: 0},
		{name: "absent, written before the cut: exact scan says no",
			segs: []Segment{{absent, long}}, wantOut: []uuid.UUID{absent}, exact: 1, readManifests: true},
		{name: "absent, written after the cut: summaries suffice",
			segs: []Segment{{absent, after}}, wantOut: []uuid.UUID{absent}, exact: 0},
		{name: "absent, written just after the cut but within the clock skew: exact",
			segs: []Segment{{absent, cutAt.Add(time.Minute)}}, wantOut: []uuid.UUID{absent}, exact: 1, readManifests: true},
		{name: "mixed",
			segs:   []Segment{{old, long}, {recent, long}, {absent, after}, {ids[0][0], long}},
			wantIn: []uuid.UUID{old, recent, ids[0][0]}, wantOut: []uuid.UUID{absent}, exact: 2, readManifests: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, st, err := segmentsInTable(ctx, tbl, "", tt.segs)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range tt.wantIn {
				if !in[id] {
					t.Errorf("%s not reported in the table", id)
				}
			}
			for _, id := range tt.wantOut {
				if in[id] {
					t.Errorf("%s reported in the table", id)
				}
			}
			if st.Exact != tt.exact || (st.Manifests > 0) != tt.readManifests {
				t.Errorf("stats %+v, want %d exact and manifests read %v", st, tt.exact, tt.readManifests)
			}
		})
	}

	// The committer's own segments, still on local disk, once the table
	// holds its WAL directory's ledger: the ledger answers, no scan, even
	// for segments written before the cut.
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(LedgerProperties(tbl.Metadata(), "wal-a", []uuid.UUID{old}, nil)); err != nil {
		t.Fatal(err)
	}
	ledgered, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in, st, err := segmentsInTable(ctx, ledgered, "wal-a", []Segment{{old, long}, {absent, long}})
	if err != nil {
		t.Fatal(err)
	}
	if !in[old] || in[absent] || st.Exact != 0 || st.Manifests != 0 {
		t.Errorf("with the directory's ledger: in=%v stats=%+v; want old in, absent out, no manifest read", in, st)
	}
	// Another directory's segments, or a directory that never appended
	// with a ledger, still take the exact path.
	in, st, err = segmentsInTable(ctx, ledgered, "wal-b", []Segment{{absent, long}})
	if err != nil {
		t.Fatal(err)
	}
	if in[absent] || st.Exact != 1 {
		t.Errorf("without the directory's ledger: in=%v stats=%+v; want absent out after an exact scan", in, st)
	}
}

// TestSegmentsInTableRewrittenFile checks that a file that a later
// snapshot removed (a compaction rewrote it) is in the table only while a
// kept snapshot still holds it live.
func TestSegmentsInTableRewrittenFile(t *testing.T) {
	ctx := context.Background()
	_, tbl, ids := manyFilesTable(t, 3, 2)
	gone := ids[0][0]
	spec := tbl.Spec()
	file := func(id uuid.UUID) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData,
			tbl.Location()+"/data/"+id.String()+".parquet", iceberg.ParquetFile, map[int]any{}, nil, nil, 100, 4096)
		if err != nil {
			t.Fatal(err)
		}
		return b.Build()
	}
	tx := tbl.NewTransaction()
	if err := tx.ReplaceDataFilesWithDataFiles(ctx, []iceberg.DataFile{file(gone)}, []iceberg.DataFile{file(uuid.New())}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-time.Hour)
	check := func(tbl *table.Table, want bool) {
		t.Helper()
		in, st, err := segmentsInTable(ctx, tbl, "", []Segment{{gone, long}})
		if err != nil {
			t.Fatal(err)
		}
		if in[gone] != want || st.Exact != 1 {
			t.Fatalf("in the table: %v (stats %+v), want %v after an exact scan", in[gone], st, want)
		}
	}
	// Keep the rewrite and the snapshot before it, which still holds the
	// file; then keep only the rewrite, which lists it as deleted.
	tbl = expire(t, tbl, 2)
	check(tbl, true)
	check(expire(t, tbl, 1), false)
}

// BenchmarkSegmentsInTable measures the check at recovery and before each
// append on a table of 10,000 files in 1,000 snapshots: the common path
// (metadata only), and the exact fallback after maintenance expired all but
// the last 100 snapshots. Loading the table, which the caller does anyway,
// is measured apart.
func BenchmarkSegmentsInTable(b *testing.B) {
	const snapshots, filesPer, local = 1000, 10, 100
	start := time.Now()
	cat, tbl, ids := manyFilesTable(b, snapshots, filesPer)
	var size int64
	if info, err := os.Stat(strings.TrimPrefix(tbl.MetadataLocation(), "file://")); err == nil {
		size = info.Size()
	}
	b.Logf("built a table of %d files in %d snapshots in %s; its metadata file holds %d KiB",
		snapshots*filesPer, snapshots, time.Since(start).Round(time.Millisecond), size>>10)
	ctx := context.Background()
	now := time.Now()
	// 100 local segments: half of them in the table, half not.
	var segs []Segment
	for i := 0; i < local/2; i++ {
		segs = append(segs, Segment{ids[snapshots-1-i][0], now}, Segment{uuid.New(), now})
	}
	b.Run("load table", func(b *testing.B) {
		for b.Loop() {
			if _, err := cat.LoadTable(ctx, tbl.Identifier()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("common path", func(b *testing.B) {
		for b.Loop() {
			in, st, err := segmentsInTable(ctx, tbl, "", segs)
			if err != nil || len(in) != local/2 || st.Manifests != 0 {
				b.Fatalf("in %d, stats %+v, err %v", len(in), st, err)
			}
		}
	})
	expired := expire(b, tbl, 100)
	long := now.Add(-time.Hour)
	var old []Segment
	for i := 0; i < local/2; i++ {
		old = append(old, Segment{ids[i][0], long}, Segment{uuid.New(), long})
	}
	b.Run(fmt.Sprintf("exact fallback, %d segments", local), func(b *testing.B) {
		for b.Loop() {
			in, st, err := segmentsInTable(ctx, expired, "", old)
			if err != nil || len(in) != local/2 {
				b.Fatalf("in %d, stats %+v, err %v", len(in), st, err)
			}
			b.ReportMetric(float64(st.Manifests), "manifests/op")
		}
	})
}
