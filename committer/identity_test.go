package committer

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/config"
)

// recreate drops the dataset's table and creates it again with cols.
func (e *env) recreate(t *testing.T, dataset string, cols []config.Column) {
	t.Helper()
	d := e.dataset(dataset)
	if err := e.cat.DropTable(context.Background(), catalog.ToIdentifier(d.Table)); err != nil {
		t.Fatal(err)
	}
	for i := range e.datasets {
		if e.datasets[i].Name == dataset {
			c := *e.datasets[i].Create
			c.Columns = cols
			e.datasets[i].Create = &c
		}
	}
	e.table(dataset) // creates it from the new columns
}

// TestCommitterRefusesRecreatedTableWithOtherFieldIDs is the probe "the
// table dropped and recreated with two columns' field ids swapped": the
// segment's id and user columns would land in each other's places. It is
// left out, counted and kept on disk; a segment of a table recreated with
// the same columns goes in.
func TestCommitterRefusesRecreatedTableWithOtherFieldIDs(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal := e.walDir("wal")
	s := e.writeSegment(wal, "clicks", 0, 0, clickRows(1, 6, 1), true)
	e.commitOffset("clicks", 0, 6)
	cols := e.dataset("clicks").Create.Columns
	// The same columns in another order: the ids of id and user swap.
	e.recreate(t, "clicks", []config.Column{cols[1], cols[0], cols[2]})
	before := walNames(t, wal)

	cm := newCommitter(t, e.config(wal))
	runPass(t, cm)
	if got := testutil.ToFloat64(cm.metrics.identity.WithLabelValues("clicks")); got != 1 {
		t.Errorf("identity mismatches = %v, want 1", got)
	}
	if got := walNames(t, wal); !slices.Equal(got, before) {
		t.Fatalf("WAL holds %v, want %v kept", got, before)
	}
	if snap := e.table("clicks").CurrentSnapshot(); snap != nil {
		t.Fatalf("the recreated table got snapshot %d: a file with swapped columns went in", snap.SnapshotID)
	}

	// Recreated again with the original columns: the ids mean what they
	// did, and the file goes in.
	e.recreate(t, "clicks", cols)
	runPass(t, newCommitter(t, e.config(wal)))
	if got := walNames(t, wal); len(got) != 0 {
		t.Fatalf("WAL holds %v after the table got its columns back", got)
	}
	checkSnapshot(t, e.table("clicks"), "clicks", s)
}
