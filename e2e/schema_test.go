package e2e

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/internal/devenv"
)

// TestSchemaChanges is what a user does when their events gain a field:
// add the column to datasets[].create.columns and customMapping and
// restart. The ingestor adds it to the existing table; rows written after
// carry its values, rows written before read it as null. Then another
// engine adds a column and a partition field while the ingestor runs: the
// ingestor goes on, new files use the new spec, and every event is in the
// table exactly once.
func TestSchemaChanges(t *testing.T) {
	w, in := newClicks(t, worldOptions{})
	defer in.dumpLogs()
	const n = 2500
	good, _ := w.produceMixed(t, clicksTopic, 0, n, 0)
	sup := in.start("run")
	w.waitRows(t, map[string]int64{clicksTable: int64(len(good))}, 3*time.Minute)
	sup.signal(syscall.SIGTERM)
	sup.wait(t, 90*time.Second)
	// The second run's log starts here, in the same file.
	logFrom := len(in.log("run"))

	// The event's geo.lat was never mapped: map it to a new column.
	b, err := os.ReadFile(in.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(b), "      country: geo.country\n", "      country: geo.country\n      lat: geo.lat\n", 1)
	doc = strings.Replace(doc, "        - {name: country, type: string}\n", "        - {name: country, type: string}\n        - {name: lat, type: double}\n", 1)
	if doc == string(b) {
		t.Fatal("config not changed")
	}
	if err := os.WriteFile(in.cfgPath, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	sup = in.start("run")
	more, _ := w.produceMixed(t, clicksTopic, n, n, 0)
	good = append(good, more...)
	w.waitRows(t, map[string]int64{clicksTable: int64(len(good))}, 3*time.Minute)

	// Another engine changes the table under the running ingestor.
	ctx := context.Background()
	tbl, closeCat, err := w.openTable(ctx, clicksTable)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if err := tx.UpdateSpec(true).AddField("event_id", iceberg.BucketTransform{NumBuckets: 4}, "event_id_bucket").Commit(); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	closeCat()
	newSpec := tbl.Spec()
	// The consumer takes the change at a rotation after its next reload
	// (every 10 s, and after each rotation): the events produced after
	// that are written under the new spec.
	deadline := time.Now().Add(time.Minute)
	next := int64(2 * n)
	for {
		if strings.Contains(in.log("run")[logFrom:], `"msg":"table schema changed; new segments use it"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the consumer did not take the table's new schema and spec within a minute")
		}
		few, _ := w.produceMixed(t, clicksTopic, next, 10, 0)
		good = append(good, few...)
		next += 10
		time.Sleep(200 * time.Millisecond)
	}
	last, _ := w.produceMixed(t, clicksTopic, next, n, 0)
	good = append(good, last...)
	w.waitRows(t, map[string]int64{clicksTable: int64(len(good))}, 3*time.Minute)
	sup.signal(syscall.SIGTERM)
	sup.wait(t, 90*time.Second)
	if left := walLeft(t, in.walDir); len(left) > 0 {
		t.Errorf("WAL not empty after an orderly stop: %v", left)
	}

	w.checkTable(t, clicksTable, good)
	tbl, closeCat, err = w.openTable(ctx, clicksTable)
	if err != nil {
		t.Fatal(err)
	}
	defer closeCat()
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	idx := at.Schema().FieldIndices("lat")
	if len(idx) != 1 {
		t.Fatalf("the table has no column lat: %s", at.Schema())
	}
	ids, lats := at.Column(at.Schema().FieldIndices("event_id")[0]).Data(), at.Column(idx[0]).Data()
	wantLat := map[string]float64{}
	for _, seq := range good {
		ev := devenv.NewEvent(seq, eventTime(seq))
		if seq >= n {
			wantLat[ev.ID] = ev.Geo.Lat
		}
	}
	var nulls, values, wrong int
	for ci, chunk := range ids.Chunks() {
		idArr, latArr := chunk.(*array.String), lats.Chunk(ci).(*array.Float64)
		for i := 0; i < idArr.Len(); i++ {
			want, after := wantLat[idArr.Value(i)]
			switch {
			case !after && latArr.IsNull(i):
				nulls++
			case after && latArr.IsValid(i) && latArr.Value(i) == want:
				values++
			default:
				if wrong++; wrong < 5 {
					t.Errorf("event %s: lat valid=%v %v, want %v (written after the change: %v)", idArr.Value(i), latArr.IsValid(i), latArr.Value(i), want, after)
				}
			}
		}
	}
	if nulls != n || values != len(good)-n {
		t.Errorf("lat: %d nulls (want %d, the rows written before the column), %d values (want %d)", nulls, n, values, len(good)-n)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var oldSpec, under int
	for _, task := range tasks {
		if int(task.File.SpecID()) == newSpec.ID() {
			under++
		} else {
			oldSpec++
		}
	}
	if under == 0 || oldSpec == 0 {
		t.Errorf("%d data files under the new spec %d, %d under older ones: want both", under, newSpec.ID(), oldSpec)
	}
	t.Logf("e2e: schema changes: %d events exactly once, lat null in %d and set in %d rows, %d files under the new spec, %d under older",
		len(good), nulls, values, under, oldSpec)
}
