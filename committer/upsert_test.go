package committer

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/walfile"
)

// upsertOrders makes the orders dataset of e an upsert dataset keyed by
// order_id, the table unpartitioned (a test segment holds rows of one
// partition, and these keys are in several buckets; the e2e test
// partitions by the key).
func upsertOrders(e *env) {
	for i := range e.datasets {
		if e.datasets[i].Name == "orders" {
			e.datasets[i].Upsert = &config.Upsert{KeyColumns: []string{"order_id"}}
			e.datasets[i].Create.Partition = nil
		}
	}
}

// regions reads the table with its deletes applied: region by order_id,
// and how many rows each order_id has.
func regions(t *testing.T, tbl *table.Table) (map[string]string, map[string]int) {
	t.Helper()
	at, err := tbl.Scan(table.WithSelectedFields("order_id", "region")).ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	got, n := map[string]string{}, map[string]int{}
	for i, c := range at.Column(0).Data().Chunks() {
		ids, reg := c.(*array.String), at.Column(1).Data().Chunk(i).(*array.String)
		for j := 0; j < ids.Len(); j++ {
			got[ids.Value(j)] = reg.Value(j)
			n[ids.Value(j)]++
		}
	}
	return got, n
}

// TestUpsertKeepsTheLastRowOfEachKey appends two segments of one Kafka
// partition holding the same keys, the later one also deleting a key
// through a delete row: the table shows each key once, with the later
// segment's values, and not the deleted key; the snapshot adds the data
// files with equality and position deletes. A later pass replaces a key
// the table holds from the earlier snapshot.
func TestUpsertKeepsTheLastRowOfEachKey(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	upsertOrders(e)
	wal := e.walDir("wal")
	c := newCommitter(t, e.config(wal))
	e.writeSegment(wal, "orders", 0, 0, orderRows("o", 4, "old"), true)
	// Row 1 of the later segment (o-1) is a delete.
	e.writeSegment(wal, "orders", 0, 4, orderRows("o", 3, "new"), true, [2]string{walfile.MetaDeletes, walfile.EncodeRows([]int64{1})})
	e.commitOffset("orders", 0, 7)
	runPass(t, c)

	got, n := regions(t, e.table("orders"))
	want := map[string]string{"o-0": "new", "o-2": "new", "o-3": "old"}
	if !equalMaps(got, want) {
		t.Fatalf("table = %v, want %v", got, want)
	}
	for k, v := range n {
		if v != 1 {
			t.Errorf("order %s read %d times", k, v)
		}
	}
	var eq, pos int
	for df := range deleteFiles(t, e.table("orders")) {
		switch df.ContentType() {
		case iceberg.EntryContentEqDeletes:
			eq++
			if !slices.Equal(df.EqualityFieldIDs(), []int{1}) {
				t.Errorf("equality delete on fields %v, want [1] (order_id)", df.EqualityFieldIDs())
			}
			// Its key bounds span the batch's keys, so that a reader
			// skips it for files whose keys lie elsewhere.
			if lo, hi := string(df.LowerBoundValues()[1]), string(df.UpperBoundValues()[1]); lo != "o-0" || hi != "o-3" {
				t.Errorf("equality delete bounds order_id [%q, %q], want [o-0, o-3]", lo, hi)
			}
		case iceberg.EntryContentPosDeletes:
			pos++
		}
	}
	if eq == 0 || pos == 0 {
		t.Errorf("the snapshot has %d equality and %d position delete files, want both", eq, pos)
	}

	e.writeSegment(wal, "orders", 1, 0, orderRows("o", 1, "newest"), true)
	e.commitOffset("orders", 1, 1)
	runPass(t, c)
	got, _ = regions(t, e.table("orders"))
	want["o-0"] = "newest"
	if !equalMaps(got, want) {
		t.Fatalf("after the second pass table = %v, want %v", got, want)
	}
}

// TestUpsertWaitsForAnEarlierSegment: a segment whose Kafka partition has
// an earlier segment not uploaded yet waits for it, so that the earlier
// one's older versions never replace its rows.
func TestUpsertWaitsForAnEarlierSegment(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	upsertOrders(e)
	wal := e.walDir("wal")
	c := newCommitter(t, e.config(wal))
	first := e.writeSegment(wal, "orders", 0, 0, orderRows("o", 2, "old"), false)
	e.writeSegment(wal, "orders", 0, 2, orderRows("o", 2, "new"), true)
	e.commitOffset("orders", 0, 4)
	runPass(t, c)
	if got, _ := regions(t, e.table("orders")); len(got) != 0 {
		t.Fatalf("the later segment went in before the earlier one: table = %v", got)
	}
	e.upload(wal, e.table("orders"), first.name)
	runPass(t, c)
	got, _ := regions(t, e.table("orders"))
	if want := map[string]string{"o-0": "new", "o-1": "new"}; !equalMaps(got, want) {
		t.Fatalf("table = %v, want %v", got, want)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// deleteFiles yields the delete files of the table's current snapshot.
func deleteFiles(t *testing.T, tbl *table.Table) func(func(iceberg.DataFile) bool) {
	t.Helper()
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		t.Fatal("no snapshot")
	}
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mans, err := snap.Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	return func(yield func(iceberg.DataFile) bool) {
		for _, m := range mans {
			if m.ManifestContent() != iceberg.ManifestContentDeletes {
				continue
			}
			entries, err := m.FetchEntries(fs, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, en := range entries {
				if !yield(en.DataFile()) {
					return
				}
			}
		}
	}
}

// TestUpsertCountsAnOlderRangeFromAnotherWAL: after a rebalance between
// pods, a segment of the old owner appended after the new owner's later
// offsets is counted and logged as out of order (no row is lost), while
// interleaved segments of one WAL directory for different table
// partitions are not.
func TestUpsertCountsAnOlderRangeFromAnotherWAL(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	upsertOrders(e)
	oldOwner, newOwner := e.walDir("old"), e.walDir("new")
	cOld, cNew := newCommitter(t, e.config(oldOwner)), newCommitter(t, e.config(newOwner))
	e.commitOffset("orders", 0, 20)
	// One WAL directory, two segments of partition 0 with interleaved
	// offsets (they would be of two table partitions), appended apart.
	e.writeSegment(newOwner, "orders", 0, 10, orderRows("a", 3, "new"), true)
	runPass(t, cNew)
	e.writeSegment(newOwner, "orders", 0, 11, orderRows("b", 2, "new"), true)
	runPass(t, cNew)
	if n := testutil.ToFloat64(cNew.metrics.outOfOrder.WithLabelValues("orders")); n != 0 {
		t.Fatalf("one WAL directory's own segments counted %g times out of order", n)
	}
	e.writeSegment(oldOwner, "orders", 0, 0, orderRows("a", 1, "old"), true)
	runPass(t, cOld)
	if n := testutil.ToFloat64(cOld.metrics.outOfOrder.WithLabelValues("orders")); n != 1 {
		t.Fatalf("the old owner's earlier range counted %g times out of order, want 1", n)
	}
	got, _ := regions(t, e.table("orders"))
	if len(got) != 5 {
		t.Fatalf("table = %v, want all 5 keys", got)
	}
}

// TestUpsertWaitsForAnotherWALsRows: a segment that names another WAL
// directory's last row of its partition waits until the table holds it,
// and after upsertOrderWait goes in anyway (that directory's segments may
// never come).
func TestUpsertWaitsForAnotherWALsRows(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	upsertOrders(e)
	oldOwner, newOwner := e.walDir("old"), e.walDir("new")
	cOld, cNew := newCommitter(t, e.config(oldOwner)), newCommitter(t, e.config(newOwner))
	e.commitOffset("orders", 0, 20)
	e.writeSegment(newOwner, "orders", 0, 10, orderRows("o", 2, "new"), true, [2]string{walfile.MetaUpsertAfter, "9"})
	runPass(t, cNew)
	if got, _ := regions(t, e.table("orders")); len(got) != 0 {
		t.Fatalf("the new owner's segment went in before the old owner's rows: %v", got)
	}
	if n := testutil.ToFloat64(cNew.metrics.upsertWaiting.WithLabelValues("orders")); n != 1 {
		t.Fatalf("ingestor_committer_upsert_segments_waiting = %g, want 1", n)
	}
	// The old owner's last rows, offsets 8 and 9.
	e.writeSegment(oldOwner, "orders", 0, 8, orderRows("o", 2, "old"), true)
	runPass(t, cOld)
	runPass(t, cNew)
	got, _ := regions(t, e.table("orders"))
	if want := map[string]string{"o-0": "new", "o-1": "new"}; !equalMaps(got, want) {
		t.Fatalf("table = %v, want %v", got, want)
	}

	// A segment whose wait has lasted upsertOrderWait goes in.
	defer func(d time.Duration) { upsertOrderWait = d }(upsertOrderWait)
	upsertOrderWait = 0
	e.writeSegment(newOwner, "orders", 1, 5, orderRows("p", 1, "new"), true, [2]string{walfile.MetaUpsertAfter, "4"})
	e.commitOffset("orders", 1, 6)
	runPass(t, cNew)
	if got, _ := regions(t, e.table("orders")); got["p-0"] != "new" {
		t.Fatalf("a segment waited past upsertOrderWait: table = %v", got)
	}
}

// TestUpsertLandsAfterAConflict: another committer appends while an
// upsert append holding a position delete is about to commit; the append
// conflicts, reloads and lands on the retry with its deletes.
func TestUpsertLandsAfterAConflict(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	upsertOrders(e)
	walA, walB := e.walDir("wal-a"), e.walDir("wal-b")
	// o-0 twice in one segment: a position delete for its first row.
	e.writeSegment(walA, "orders", 0, 0, append(orderRows("o", 2, "old"), orderRows("o", 1, "new")...), true)
	e.writeSegment(walB, "orders", 1, 0, orderRows("p", 2, "b"), true)
	e.commitOffset("orders", 0, 3)
	e.commitOffset("orders", 1, 2)
	ca, cb := newCommitter(t, e.config(walA)), newCommitter(t, e.config(walB))
	ca.beforeCommit = func(ctx context.Context, dataset string, attempt int) {
		if attempt == 1 {
			runPass(t, cb)
		}
	}
	runPass(t, ca)
	got, n := regions(t, e.table("orders"))
	if want := map[string]string{"o-0": "new", "o-1": "old", "p-0": "b", "p-1": "b"}; !equalMaps(got, want) {
		t.Fatalf("table = %v, want %v", got, want)
	}
	if n["o-0"] != 1 {
		t.Errorf("o-0 read %d times", n["o-0"])
	}
	if c := testutil.ToFloat64(ca.metrics.commits.WithLabelValues("orders")); c != 1 {
		t.Errorf("the first committer made %g commits, want 1 (after its conflict)", c)
	}
}
