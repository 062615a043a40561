package committer

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCommitterReusesTheTableItsCommitReturned appends batch after batch:
// each append starts from the table the last commit returned, and loads
// it from the catalog only when that table could be wrong for the batch:
// a segment written for a schema it does not know, or another writer
// appending (the conflict is retried on the reloaded table, and the next
// appends load). Every row is in the table once.
func TestCommitterReusesTheTableItsCommitReturned(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal, other := e.walDir("wal"), e.walDir("other")
	cm := newCommitter(t, e.config(wal))
	connect(t, cm)
	ctx := context.Background()
	loads := func() (catalog, reused float64) {
		return testutil.ToFloat64(cm.metrics.tableLoads.WithLabelValues("clicks", tableLoaded)),
			testutil.ToFloat64(cm.metrics.tableLoads.WithLabelValues("clicks", tableReused))
	}
	check := func(step string, wantCatalog, wantReused float64) {
		t.Helper()
		if c, r := loads(); c != wantCatalog || r != wantReused {
			t.Fatalf("%s: appends started from %v loaded and %v reused tables, want %v and %v", step, c, r, wantCatalog, wantReused)
		}
		if got := walNames(t, wal); len(got) != 0 {
			t.Fatalf("%s: WAL holds %v", step, got)
		}
	}
	var segs []seg
	next := int64(0)
	country := false // the table has the column: every row sets it
	add := func(rows []map[string]any) {
		for _, r := range rows {
			if country {
				r["country"] = "se"
			}
		}
		segs = append(segs, e.writeSegment(wal, "clicks", 0, next, rows, true))
		next += int64(len(rows))
		e.commitOffset("clicks", 0, next)
		cm.pass(ctx)
	}

	for i := int64(0); i < 4; i++ {
		add(clickRows(100*(i+1), 5, 1))
	}
	check("four appends", 1, 3)

	// Another engine adds a column; the consumer's next segment is
	// written for the new schema, which the kept table does not know.
	e.alterTable(t, "clicks", func(tx *table.Transaction) error {
		return tx.UpdateSchema(true, false).AddColumn([]string{"country"}, iceberg.PrimitiveTypes.String, "", false, nil).Commit()
	})
	country = true
	add(clickRows(500, 5, 1))
	check("a segment of the new schema", 2, 3)
	add(clickRows(600, 5, 1))
	check("the next append", 2, 4)

	// Another WAL directory appends to the table: the reused table's
	// append conflicts and lands on the reload; the next append loads.
	orows := clickRows(700, 5, 1)
	for _, r := range orows {
		r["country"] = "no"
	}
	o := e.writeSegment(other, "clicks", 1, 0, orows, true)
	e.commitOffset("clicks", 1, 5)
	runPass(t, newCommitter(t, e.config(other)))
	add(clickRows(800, 5, 1))
	check("an append after another writer's", 2, 5)
	if got := testutil.ToFloat64(cm.metrics.failures.WithLabelValues("clicks", reasonConflict)); got != 1 {
		t.Fatalf("conflicts = %v, want 1", got)
	}
	add(clickRows(900, 5, 1))
	check("the append after the conflict", 3, 5)

	clicks := e.table("clicks")
	if got, want := scanColumn(t, clicks, "id"), wantColumn("id", append(segs, o)...); !slices.Equal(got, want) {
		t.Errorf("clicks ids %v, want %v", got, want)
	}
	if got := testutil.ToFloat64(cm.metrics.commits.WithLabelValues("clicks")); got != float64(len(segs)) {
		t.Errorf("commits = %v, want %d", got, len(segs))
	}
}
