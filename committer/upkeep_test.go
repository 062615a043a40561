package committer

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// compactAndExpire is upkeep done by another engine with iceberg-go's own
// tools: every partition's files bin-packed into one (RewriteDataFiles),
// then every snapshot but the current one expired, with the objects they
// alone referred to deleted.
func compactAndExpire(t *testing.T, tbl *table.Table) *table.Table {
	t.Helper()
	ctx := context.Background()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := compaction.DefaultConfig()
	cfg.MinInputFiles = 2
	plan, err := cfg.PlanCompaction(tasks)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Groups) == 0 {
		t.Fatal("the planner found nothing to compact")
	}
	groups := make([]table.CompactionTaskGroup, len(plan.Groups))
	for i, g := range plan.Groups {
		groups[i] = table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes}
	}
	tx := tbl.NewTransaction()
	if _, err := tx.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{}); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // the append's snapshot must be older than "now" to expire
	tx = tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(1), table.WithOlderThan(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("after expiry the table keeps %d snapshots, want 1", n)
	}
	return tbl
}

// The append lands and the committer dies before deleting the local files
// (committer.after-append); before it starts again, another engine
// compacts the table and expires every older snapshot. Now no kept
// snapshot's summary names the segments and their objects are no live
// data file (expiry even deleted them): only the ledger property the
// append set says they are in the table. The restart must add nothing.
func TestCommitterLandedThenCompactedAndExpired(t *testing.T) {
	testLandedThenCompactedAndExpired(t, newEnv(t, sqliteCatalog(t.TempDir())))
}

func testLandedThenCompactedAndExpired(t *testing.T, e *env) {
	wal := e.walDir("wal")
	// Same day, two Kafka partitions: two files of one table partition.
	a := e.writeSegment(wal, "clicks", 0, 0, clickRows(1, 5, 1), true)
	b := e.writeSegment(wal, "clicks", 1, 0, clickRows(10, 7, 1), true)
	e.commitOffset("clicks", 0, 5)
	e.commitOffset("clicks", 1, 7)
	_, restore := keepWAL(t, wal)
	runPass(t, newCommitter(t, e.config(wal)))
	checkSnapshot(t, e.table("clicks"), "clicks", a, b)

	compactAndExpire(t, e.table("clicks"))

	// The crash: every local file is back, as if never deleted.
	restore()
	cm := newCommitter(t, e.config(wal))
	runPass(t, cm)
	if got := walNames(t, wal); len(got) != 0 {
		t.Fatalf("WAL holds %v after the restart's pass", got)
	}
	if got := testutil.ToFloat64(cm.metrics.commits.WithLabelValues("clicks")); got != 0 {
		t.Errorf("the restarted committer made %v commits, want 0", got)
	}
	clicks := e.table("clicks")
	if got, want := scanColumn(t, clicks, "id"), wantColumn("id", a, b); !slices.Equal(got, want) {
		t.Errorf("clicks ids %v, want %v", got, want)
	}

	// The ledger keeps only what may still be on local disk: the next
	// append drops the segments whose files are gone.
	c := e.writeSegment(wal, "clicks", 0, 5, clickRows(20, 3, 1), true)
	e.commitOffset("clicks", 0, 8)
	runPass(t, newCommitter(t, e.config(wal)))
	clicks = e.table("clicks")
	if got, want := scanColumn(t, clicks, "id"), wantColumn("id", a, b, c); !slices.Equal(got, want) {
		t.Errorf("clicks ids %v, want %v", got, want)
	}
	var ledger []string
	for k, v := range clicks.Properties() {
		if len(k) > len("ingestor.segments.") && k[:len("ingestor.segments.")] == "ingestor.segments." {
			ledger = append(ledger, v)
		}
	}
	if want := []string{c.name.UUID.String()}; !slices.Equal(ledger, want) {
		t.Errorf("ledger properties %v, want %v", ledger, want)
	}
}
