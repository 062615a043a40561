package tables

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
)

// A position-delete file that names two data files and carries neither a
// referenced data file nor bounds (the committer's, for a batch of several
// segments in one partition) is read to learn its targets: it is new to
// a group holding either file, and it dies only once both are replaced.
func TestPositionDeleteTargetsAndDeath(t *testing.T) {
	ctx := context.Background()
	cat := openCatalog(t, sqliteCatalog(t.TempDir()))
	d := config.Dataset{Name: "events", Topic: "events", Table: "up.events", Create: &config.CreateTable{
		Columns: []config.Column{{Name: "id", Type: "long", Required: true}},
	}}
	tbl, err := Load(ctx, cat, d)
	if err != nil {
		t.Fatal(err)
	}
	spec := tbl.Spec()
	var paths []string
	var data []iceberg.DataFile
	for _, name := range []string{"a", "b", "c"} {
		p := tbl.Location() + "/data/" + name + ".parquet"
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, p, iceberg.ParquetFile, map[int]any{}, nil, nil, 10, 4096)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		data = append(data, b.Build())
	}
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(ctx, data, nil); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	read := tbl.CurrentSnapshot().SequenceNumber

	// The delete names rows of a and b, not c.
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	loc := tbl.Location() + "/data/pos-deletes.parquet"
	pb, ob := array.NewStringBuilder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
	for _, p := range paths[:2] {
		pb.Append(p)
		ob.Append(3)
	}
	pa, oa := pb.NewArray(), ob.NewArray()
	rec := array.NewRecordBatch(table.PositionalDeleteArrowSchema, []arrow.Array{pa, oa}, 2)
	out, err := fs.(icebergio.WriteFileIO).Create(loc)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(rec.Schema(), out, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentPosDeletes, loc, iceberg.ParquetFile, map[int]any{}, nil, nil, 2, 512)
	if err != nil {
		t.Fatal(err)
	}
	tx = tbl.NewTransaction()
	if err := tx.NewRowDelta(nil).AddDeletes(b.Build()).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	files, err := ReadTableFiles(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if len(files.Data) != 3 || len(files.Deletes) != 1 {
		t.Fatalf("%d data and %d delete files, want 3 and 1", len(files.Data), len(files.Deletes))
	}
	targets, err := files.Targets(ctx, files.Deletes[0].File)
	if err != nil || !slices.Equal(targets, paths[:2]) {
		t.Fatalf("targets %v (%v), want %v", targets, err, paths[:2])
	}
	for _, tc := range []struct {
		group []string
		new   bool
	}{{paths[:1], true}, {paths[1:2], true}, {paths[2:], false}} {
		since, err := files.DeletesSince(ctx, read, tc.group, false)
		if err != nil || (len(since) == 1) != tc.new {
			t.Errorf("deletes since the read for %v: %d (%v), want new %v", tc.group, len(since), err, tc.new)
		}
		if since, _ := files.DeletesSince(ctx, read+1, tc.group, false); len(since) != 0 {
			t.Errorf("deletes since the delete's own snapshot for %v: %d, want none", tc.group, len(since))
		}
	}
	for _, tc := range []struct {
		rewritten []string
		dead      bool
	}{{paths[:1], false}, {paths[1:], false}, {paths[:2], true}, {paths, true}} {
		rw := map[string]bool{}
		for _, p := range tc.rewritten {
			rw[p] = true
		}
		dead, err := files.Dead(ctx, rw, nil)
		if err != nil || (len(dead) == 1) != tc.dead {
			t.Errorf("dead after rewriting %v: %d (%v), want dead %v", tc.rewritten, len(dead), err, tc.dead)
		}
	}

	// The next hand-off reads the table's files anew, but not the delete
	// file: what it names was learnt once. With the object gone (a read
	// that would fail), its targets are still known.
	if err := fs.Remove(loc); err != nil {
		t.Fatal(err)
	}
	again, err := ReadTableFiles(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	dead, err := again.Dead(ctx, map[string]bool{paths[0]: true, paths[1]: true}, nil)
	if err != nil || len(dead) != 1 {
		t.Errorf("dead after rewriting a and b, on a second read of the table: %d (%v), want the delete file without reading it again", len(dead), err)
	}
}
