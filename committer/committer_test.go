package committer

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// database/sql's connection opener lives as long as the *sql.DB
		// that iceberg-go's catalog keeps in a package cache of dialects.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
	)
}

func TestCommitterCommitsUploadedFiles(t *testing.T) {
	testCommitsUploadedFiles(t, newEnv(t, sqliteCatalog(t.TempDir())))
}

// testCommitsUploadedFiles runs the committer over a WAL directory holding
// every kind of file, and checks that exactly the uploaded segments whose
// offsets Kafka has committed land, one snapshot per dataset.
func testCommitsUploadedFiles(t *testing.T, e *env) {
	ctx := context.Background()
	wal := e.walDir("wal")

	// clicks: two Iceberg partitions (days) from Kafka partition 0, one
	// from partition 1, and on partition 1 a segment whose offset commit
	// never landed.
	a := e.writeSegment(wal, "clicks", 0, 0, clickRows(100, 10, 1), true)
	b := e.writeSegment(wal, "clicks", 0, 3, clickRows(200, 10, 2), true)
	c := e.writeSegment(wal, "clicks", 1, 0, clickRows(300, 6, 1), true)
	waiting := e.writeSegment(wal, "clicks", 1, 6, clickRows(400, 4, 3), true)
	// A ready segment the uploader has not finished: no marker.
	notUploaded := e.writeSegment(wal, "clicks", 0, 13, clickRows(500, 2, 1), false)
	// orders: two regions on partition 0, one on partition 1.
	d := e.writeSegment(wal, "orders", 0, 0, orderRows("d", 4, "eu"), true)
	ee := e.writeSegment(wal, "orders", 0, 4, orderRows("e", 5, "us"), true)
	f := e.writeSegment(wal, "orders", 1, 0, orderRows("f", 3, "eu"), true)
	// A marker left by a crash after its ready file was deleted.
	orphan := walfile.Name{State: walfile.Ready, Topic: "orders", Partition: 1, Start: 50, End: 60, UUID: uuid.New()}
	if err := walfile.WriteMarker(wal, orphan, walfile.Marker{Object: "file:///nowhere", Size: 1}); err != nil {
		t.Fatal(err)
	}

	e.commitOffset("clicks", 0, 20)
	e.commitOffset("clicks", 1, 9) // waiting ends at 9: its commit (10) did not land
	e.commitOffset("orders", 0, 9)
	e.commitOffset("orders", 1, 3)

	cm := newCommitter(t, e.config(wal))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cm.Run(runCtx) }()
	gone := []string{a.name.String(), b.name.String(), c.name.String(), d.name.String(), ee.name.String(), f.name.String(),
		orphan.As(walfile.Uploaded).String()}
	waitFor(t, 30*time.Second, "the committed segments to leave the WAL", func() bool {
		names := walNames(t, wal)
		for _, g := range gone {
			if slices.Contains(names, g) {
				return false
			}
		}
		return true
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	// What stays: the waiting segment with its marker, the one not uploaded.
	want := []string{waiting.name.String(), waiting.name.As(walfile.Uploaded).String(), notUploaded.name.String()}
	sort.Strings(want)
	if got := walNames(t, wal); !slices.Equal(got, want) {
		t.Errorf("WAL holds %v, want %v", got, want)
	}

	clicks := e.table("clicks")
	checkSnapshot(t, clicks, "clicks", a, b, c)
	if got, want := scanColumn(t, clicks, "id"), wantColumn("id", a, b, c); !slices.Equal(got, want) {
		t.Errorf("clicks ids %v, want %v", got, want)
	}
	parts := filesByUUID(t, clicks)
	clicksSpec := clicks.Spec()
	for _, s := range []seg{a, b, c} {
		p, ok := parts[s.name.UUID]
		if !ok {
			t.Errorf("segment %s not in clicks", s.name)
			continue
		}
		wantDay := int64(time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC).Sub(time.Unix(0, 0).UTC()).Hours() / 24)
		if s.name == b.name {
			wantDay++
		}
		if got := partitionInt(t, p, clicksSpec.Field(0).FieldID); got != wantDay {
			t.Errorf("segment %s: partition ts_day = %d, want %d", s.name, got, wantDay)
		}
	}

	orders := e.table("orders")
	checkSnapshot(t, orders, "orders", d, ee, f)
	if got, want := scanColumn(t, orders, "order_id"), wantColumn("order_id", d, ee, f); !slices.Equal(got, want) {
		t.Errorf("orders ids %v, want %v", got, want)
	}
	if got, want := scanColumn(t, orders, "amount"), wantColumn("amount", d, ee, f); !slices.Equal(got, want) {
		t.Errorf("orders amounts %v, want %v", got, want)
	}
	oparts := filesByUUID(t, orders)
	ordersSpec := orders.Spec()
	for _, c := range []struct {
		s      seg
		region string
	}{{d, "eu"}, {ee, "us"}, {f, "eu"}} {
		if got := oparts[c.s.name.UUID][ordersSpec.Field(0).FieldID]; got != c.region {
			t.Errorf("segment %s: partition region = %v, want %s", c.s.name, got, c.region)
		}
	}

	m := cm.metrics
	for _, ds := range []string{"clicks", "orders"} {
		if got := testutil.ToFloat64(m.commits.WithLabelValues(ds)); got != 1 {
			t.Errorf("%s commits = %v, want 1", ds, got)
		}
		if got := testutil.ToFloat64(m.files.WithLabelValues(ds)); got != 3 {
			t.Errorf("%s files committed = %v, want 3", ds, got)
		}
		if got := testutil.ToFloat64(m.lastCommit.WithLabelValues(ds)); got < float64(time.Now().Add(-time.Minute).Unix()) {
			t.Errorf("%s last commit timestamp = %v", ds, got)
		}
	}
	if got := testutil.ToFloat64(m.rows.WithLabelValues("clicks")); got != 26 {
		t.Errorf("clicks rows committed = %v, want 26", got)
	}
	if got := testutil.ToFloat64(m.waiting.WithLabelValues("clicks")); got != 1 {
		t.Errorf("clicks files waiting for their offset commit = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.waiting.WithLabelValues("orders")); got != 0 {
		t.Errorf("orders files waiting = %v, want 0", got)
	}

	// Once the offset commit lands, the waiting segment goes in, alone,
	// in a second snapshot.
	e.commitOffset("clicks", 1, 10)
	cm2 := newCommitter(t, e.config(wal))
	runPass(t, cm2)
	clicks = e.table("clicks")
	snaps := snapshots(clicks)
	if len(snaps) != 2 {
		t.Fatalf("clicks has %d snapshots, want 2", len(snaps))
	}
	if got := snaps[1].Summary.Properties[tables.SummaryFiles]; got != waiting.name.UUID.String() {
		t.Errorf("second snapshot records %q, want %s", got, waiting.name.UUID)
	}
	if got, want := scanColumn(t, clicks, "id"), wantColumn("id", a, b, c, waiting); !slices.Equal(got, want) {
		t.Errorf("clicks ids %v, want %v", got, want)
	}
	if got := walNames(t, wal); !slices.Equal(got, []string{notUploaded.name.String()}) {
		t.Errorf("WAL holds %v, want only %s", got, notUploaded.name)
	}
}

// checkSnapshot checks that the table has exactly one snapshot, an append
// recording the dataset and exactly the segments' UUIDs.
func checkSnapshot(t *testing.T, tbl *table.Table, dataset string, segs ...seg) {
	t.Helper()
	snaps := snapshots(tbl)
	if len(snaps) != 1 {
		t.Fatalf("%s has %d snapshots, want 1", dataset, len(snaps))
	}
	sum := snaps[0].Summary
	if sum == nil || sum.Operation != table.OpAppend {
		t.Fatalf("%s snapshot summary %v, want an append", dataset, sum)
	}
	if got := sum.Properties[tables.SummaryDataset]; got != dataset {
		t.Errorf("%s snapshot records dataset %q", dataset, got)
	}
	var want []string
	for _, s := range segs {
		want = append(want, s.name.UUID.String())
	}
	sort.Strings(want)
	if got := sum.Properties[tables.SummaryFiles]; got != strings.Join(want, " ") {
		t.Errorf("%s snapshot records files %q, want %q", dataset, got, strings.Join(want, " "))
	}
	in := tables.FilesInTable(tbl)
	for _, s := range segs {
		if !in[s.name.UUID] {
			t.Errorf("FilesInTable(%s) lacks %s", dataset, s.name.UUID)
		}
	}
}

// partitionInt reads an integer partition value as a manifest returns it.
func partitionInt(t *testing.T, p map[int]any, id int) int64 {
	t.Helper()
	switch v := p[id].(type) {
	case int32:
		return int64(v)
	case int64:
		return v
	case iceberg.Date:
		return int64(v)
	}
	t.Fatalf("partition field %d holds %T %v", id, p[id], p[id])
	return 0
}
