package committer

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// A compaction hand-off looks at every position delete of the partitions
// it rewrites to tell which ones die with it. On an upsert table the
// committer writes one per partition per commit; reading them all back
// from the store stalled each hand-off for seconds on a long run while
// the appends waited. The committer's own position deletes carry their
// targets as file_path bounds, and the process remembers the targets of
// what it wrote: applying the hand-off reads none of them, and the table
// reads as before.
func TestHandoffReadsNoPositionDeleteTheCommitterWrote(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	upsertOrders(e)
	wal := e.walDir("wal")
	c := newCommitter(t, e.config(wal))
	// One pass, two segments of a partition: the later one replaces
	// o-0..o-2 of the first and deletes o-1 (its own row 1), so the
	// position delete names both files.
	a := e.writeSegment(wal, "orders", 0, 0, orderRows("o", 4, "old"), true)
	b := e.writeSegment(wal, "orders", 0, 4, orderRows("o", 3, "new"), true, [2]string{walfile.MetaDeletes, walfile.EncodeRows([]int64{1})})
	e.commitOffset("orders", 0, 7)
	runPass(t, c)
	// A second pass whose one segment deletes its own row: a position
	// delete naming one file.
	d := e.writeSegment(wal, "orders", 1, 0, orderRows("p", 2, "new"), true, [2]string{walfile.MetaDeletes, walfile.EncodeRows([]int64{0})})
	e.commitOffset("orders", 1, 2)
	runPass(t, c)

	tbl := e.table("orders")
	loc := func(s seg) string {
		return strings.TrimSuffix(tbl.Location(), "/") + "/data/" + s.name.UUID.String() + ".parquet"
	}
	wantBounds := map[[2]string]bool{
		{min(loc(a), loc(b)), max(loc(a), loc(b))}: true,
		{loc(d), loc(d)}: true,
	}
	for df := range deleteFiles(t, tbl) {
		if df.ContentType() != iceberg.EntryContentPosDeletes {
			continue
		}
		lo, hi := string(df.LowerBoundValues()[tables.FilePathFieldID]), string(df.UpperBoundValues()[tables.FilePathFieldID])
		if !wantBounds[[2]string{lo, hi}] {
			t.Errorf("position delete %s has file_path bounds [%q, %q], want one of %v", df.FilePath(), lo, hi, wantBounds)
		}
		delete(wantBounds, [2]string{lo, hi})
	}
	if len(wantBounds) != 0 {
		t.Errorf("no position delete with file_path bounds %v", wantBounds)
	}

	// The maintainer compacts the three segments, deletes applied, from
	// the table as it is now.
	live := orderRows("o", 4, "old")[3:]
	for _, i := range []int{0, 2} {
		live = append(live, orderRows("o", 3, "new")[i])
	}
	live = append(live, orderRows("p", 2, "new")[1])
	spec := tbl.Spec()
	g := walfile.HandoffGroup{SpecID: spec.ID(), SchemaID: tbl.Schema().ID,
		Replaced: []string{loc(a), loc(b), loc(d)}, Rows: int64(len(live))}
	for _, s := range []seg{a, b, d} {
		fi, err := os.Stat(strings.TrimPrefix(loc(s), "file://"))
		if err != nil {
			t.Fatal(err)
		}
		g.ReplacedBytes += fi.Size()
	}
	g.File = strings.TrimSuffix(tbl.Location(), "/") + "/data/compacted-" + uuid.NewString() + ".parquet"
	writeParquet(t, strings.TrimPrefix(g.File, "file://"), tbl, live)
	fi, err := os.Stat(strings.TrimPrefix(g.File, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	g.Size = fi.Size()
	var perr error
	if g.Partition, perr = tables.EncodePartition(map[int]any{}); perr != nil {
		t.Fatal(perr)
	}
	h := walfile.Handoff{ID: uuid.New(), Dataset: "orders", TableUUID: tbl.Metadata().TableUUID(), Written: time.Now(),
		ReadSequence: tbl.CurrentSnapshot().SequenceNumber, Groups: []walfile.HandoffGroup{g}}

	next, res, err := tables.ApplyHandoff(ctx, e.cat, tbl, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Applied != 1 {
		t.Fatalf("hand-off result %+v, want the group applied", res)
	}
	if res.TargetReads != 0 {
		t.Errorf("the hand-off read %d position-delete files to learn their targets, want none", res.TargetReads)
	}
	if res.DeleteFilesRemoved == 0 {
		t.Errorf("the replace removed no delete file; the position deletes of the replaced files apply to nothing after it")
	}
	got, n := regions(t, next)
	want := map[string]string{"o-0": "new", "o-2": "new", "o-3": "old", "p-1": "new"}
	if !equalMaps(got, want) {
		t.Fatalf("after the hand-off table = %v, want %v", got, want)
	}
	for k, v := range n {
		if v != 1 {
			t.Errorf("order %s read %d times", k, v)
		}
	}
	var pos int
	for df := range deleteFiles(t, next) {
		if df.ContentType() == iceberg.EntryContentPosDeletes {
			pos++
		}
	}
	if pos != 0 {
		t.Errorf("%d position deletes left after the replace of every file they name", pos)
	}
}
