package committer

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/walfile"
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

// TestCommitterStopsDatasetOnRecreatedTableWithOtherFieldIDs is the probe
// "the table dropped and recreated with two columns' field ids swapped":
// the id and user columns of a segment written before would land in each
// other's places. Nothing of the dataset is appended, not even a segment
// written for the new table; the appends are reported stopped with the
// reason, the file is counted once, and every file stays on disk, while
// another dataset keeps flowing. The first way out: recreate the table
// with its columns as they were, and the appends resume by themselves.
func TestCommitterStopsDatasetOnRecreatedTableWithOtherFieldIDs(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal := e.walDir("wal")
	a := e.writeSegment(wal, "clicks", 0, 0, clickRows(1, 6, 1), true)
	e.commitOffset("clicks", 0, 6)
	o := e.writeSegment(wal, "orders", 0, 0, orderRows("o", 3, "eu"), true)
	e.commitOffset("orders", 0, 3)
	cols := e.dataset("clicks").Create.Columns
	// The same columns in another order: the ids of id and user swap.
	e.recreate(t, "clicks", []config.Column{cols[1], cols[0], cols[2]})
	// A segment written for the new table: it would fit, but it must
	// not go in ahead of the partition's earlier rows.
	b := e.writeSegment(wal, "clicks", 1, 0, clickRows(100, 4, 2), true)
	e.commitOffset("clicks", 1, 4)

	cm := newCommitter(t, e.config(wal))
	runPass(t, cm)
	runPass(t, cm) // a second pass counts and logs nothing new
	if got := testutil.ToFloat64(cm.metrics.identity.WithLabelValues("clicks")); got != 1 {
		t.Errorf("identity mismatches = %v, want 1 (the one file, once)", got)
	}
	if got := testutil.ToFloat64(cm.metrics.stopped.WithLabelValues("clicks")); got != 1 {
		t.Errorf("ingestor_committer_appends_stopped{clicks} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(cm.metrics.stopped.WithLabelValues("orders")); got != 0 {
		t.Errorf("ingestor_committer_appends_stopped{orders} = %v, want 0", got)
	}
	if snap := e.table("clicks").CurrentSnapshot(); snap != nil {
		t.Fatalf("the recreated table got snapshot %d while its appends should be stopped", snap.SnapshotID)
	}
	checkSnapshot(t, e.table("orders"), "orders", o)
	if got := len(walNames(t, wal)); got != 4 {
		t.Fatalf("WAL holds %v, want both clicks segments and their markers kept", walNames(t, wal))
	}
	st := cm.Status().Datasets["clicks"]
	if !st.AppendsStopped {
		t.Errorf("status appends_stopped = %v, want true", st.AppendsStopped)
	}
	le := st.LastError
	if le == nil || le.Reason != reasonIdentity || !strings.Contains(le.Error, a.name.String()) ||
		!strings.Contains(le.Error, "has field id 1, which names column user") {
		t.Errorf("status last_error = %v, want reason %s naming the file and the swapped column", le, reasonIdentity)
	}

	// The second way out (docs/operations.md, "Table identity"): the new
	// table is meant, and the segment written for the old one is moved
	// aside with its marker; the appends resume.
	if err := walfile.Quarantine(wal, a.name.String(), walfile.QuarantineNote{Reason: "identity"}); err != nil {
		t.Fatal(err)
	}
	runPass(t, cm)
	if got := walNames(t, wal); len(got) != 0 {
		t.Fatalf("WAL holds %v after the old table's segment was moved aside", got)
	}
	if got := testutil.ToFloat64(cm.metrics.stopped.WithLabelValues("clicks")); got != 0 {
		t.Errorf("ingestor_committer_appends_stopped{clicks} = %v after the fix, want 0", got)
	}
	checkSnapshot(t, e.table("clicks"), "clicks", b)
}

// TestCommitterResumesWhenTheTableGetsItsColumnsBack: the other way out of
// a stop is to recreate the table with the columns it had; the segments
// then go in without anyone touching the WAL directory.
func TestCommitterResumesWhenTheTableGetsItsColumnsBack(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal := e.walDir("wal")
	a := e.writeSegment(wal, "clicks", 0, 0, clickRows(1, 6, 1), true)
	e.commitOffset("clicks", 0, 6)
	cols := e.dataset("clicks").Create.Columns
	e.recreate(t, "clicks", []config.Column{cols[1], cols[0], cols[2]})
	cm := newCommitter(t, e.config(wal))
	runPass(t, cm)
	if got := testutil.ToFloat64(cm.metrics.stopped.WithLabelValues("clicks")); got != 1 {
		t.Fatalf("ingestor_committer_appends_stopped{clicks} = %v, want 1", got)
	}
	e.recreate(t, "clicks", cols)
	runPass(t, cm)
	if got := walNames(t, wal); len(got) != 0 {
		t.Fatalf("WAL holds %v after the table got its columns back", got)
	}
	if got := testutil.ToFloat64(cm.metrics.stopped.WithLabelValues("clicks")); got != 0 {
		t.Errorf("ingestor_committer_appends_stopped{clicks} = %v after the fix, want 0", got)
	}
	checkSnapshot(t, e.table("clicks"), "clicks", a)
}

// alterTable changes the dataset's table as another engine would, through
// iceberg-go's schema and spec updates on the catalog.
func (e *env) alterTable(t *testing.T, dataset string, change func(tx *table.Transaction) error) {
	t.Helper()
	tx := e.table(dataset).NewTransaction()
	if err := change(tx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCommitterAddsSegmentsWrittenBeforeTheSchemaChanged: another engine
// added a column, renamed one and changed the partition spec after the
// consumer wrote a segment. The segment stays valid by field id: it is
// added with the schema and spec it was written for, its rows read back
// under the new column names, and the added column reads as null.
func TestCommitterAddsSegmentsWrittenBeforeTheSchemaChanged(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal := e.walDir("wal")
	rows := clickRows(1, 5, 3)
	s := e.writeSegment(wal, "clicks", 0, 0, rows, true)
	e.commitOffset("clicks", 0, 5)
	e.alterTable(t, "clicks", func(tx *table.Transaction) error {
		return tx.UpdateSchema(true, false).
			AddColumn([]string{"country"}, iceberg.PrimitiveTypes.String, "", false, nil).
			RenameColumn([]string{"user"}, "user_name").Commit()
	})
	e.alterTable(t, "clicks", func(tx *table.Transaction) error {
		return tx.UpdateSpec(true).AddIdentity("country").Commit()
	})

	cm := newCommitter(t, e.config(wal))
	runPass(t, cm)
	if got := walNames(t, wal); len(got) != 0 {
		t.Fatalf("WAL holds %v: the segment written before the change was not added", got)
	}
	tbl := e.table("clicks")
	checkSnapshot(t, tbl, "clicks", s)
	renamed := make([]map[string]any, len(rows))
	for i, r := range rows {
		renamed[i] = map[string]any{"user_name": r["user"]}
	}
	if got, want := scanColumn(t, tbl, "user_name"), wantColumn("user_name", seg{rows: renamed}); !slices.Equal(got, want) {
		t.Errorf("user_name = %v, want the user values %v", got, want)
	}
	for _, v := range scanColumn(t, tbl, "country") {
		if v != "(null)" {
			t.Fatalf("country = %q in a row written before the column existed, want null", v)
		}
	}
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || tasks[0].File.SpecID() != 0 {
		t.Fatalf("data files %v, want the one segment under spec 0, the spec it was written for", tasks)
	}
}
