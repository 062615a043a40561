package consumer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/walfile"
)

// feedSkewed writes records to partition 0 from offset first on, twenty
// of tenant "giant" for each of tenant "small", until n of the giant's
// segments have rolled; it returns the next offset and the small tenant's
// records.
func feedSkewed(t *testing.T, w *writer, first int64, n int) (next int64, small int) {
	t.Helper()
	ctx := context.Background()
	off := first
	for i := 0; i < 200000; i++ {
		tenant := "giant"
		if i%21 == 20 {
			tenant = "small"
			small++
		}
		must(t, w.record(ctx, 0, off, event(int(off), tenant)))
		off++
		if st := w.parts[0]; st != nil && len(st.rolled) >= n {
			return off, small
		}
	}
	t.Fatalf("fewer than %d rolled files after 200000 records", n)
	return off, small
}

// readStrings reads a string column of a Parquet file.
func readStrings(t *testing.T, path, column string) []string {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	idx := tbl.Schema().FieldIndices(column)
	if len(idx) != 1 {
		t.Fatalf("%s: no column %s", path, column)
	}
	var out []string
	for _, c := range tbl.Column(idx[0]).Data().Chunks() {
		s := c.(*array.String)
		for i := 0; i < s.Len(); i++ {
			out = append(out, s.Value(i))
		}
	}
	return out
}

// rowsOf counts the rows of a ready Parquet file.
func rowsOf(t *testing.T, f walfile.File) int64 {
	t.Helper()
	r, err := file.OpenParquetFile(f.Path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return r.NumRows()
}

// TestSizeRollsTheSegmentAlone: a giant tenant's segment reaches the size
// limit three times; each time it alone becomes a ready file, nothing is
// committed, and its small neighbour's segment stays open to its age.
// At the age one commit covers every file of the window.
func TestSizeRollsTheSegmentAlone(t *testing.T) {
	ctx := context.Background()
	w, cl, ck := newTestWriter(t, config.WAL{MaxFileSizeBytes: 40 << 10, MaxFileAgeMinutes: 1})
	next, small := feedSkewed(t, w, 0, 3)
	must(t, w.record(ctx, 0, next, event(int(next), "giant")))
	next++
	if len(cl.calls) != 0 {
		t.Fatalf("commits before the window's end: %v", cl.calls)
	}
	if got := w.openSegments(); got != 2 {
		t.Fatalf("open segments = %d, want 2 (the giant's next one and the small tenant's)", got)
	}
	if n := len(readyFiles(t, w.dir)); n != 3 {
		t.Fatalf("ready files = %d, want the 3 rolled", n)
	}
	if got := testutil.ToFloat64(w.m.rotated.WithLabelValues("clicks", TriggerSize)); got != 3 {
		t.Fatalf("size rotations = %v, want 3", got)
	}
	ck.t = ck.t.Add(time.Minute)
	must(t, w.rotateAged(ctx))
	if len(cl.calls) != 1 || cl.calls[0][0] != next {
		t.Fatalf("commits = %v, want one of offset %d", cl.calls, next)
	}
	// The three rolled files, the giant's last and the small tenant's one
	// were all ready, their renames fsynced, when the commit ran.
	if len(cl.dirAtCommit[0]) != 5 {
		t.Fatalf("ready files at commit = %d, want 5", len(cl.dirAtCommit[0]))
	}
	var rows, smallRows int64
	for _, f := range readyFiles(t, w.dir) {
		checkSegmentFile(t, f)
		if f.End >= next {
			t.Errorf("%s: last offset %d not covered by the commit %d", f.Name, f.End, next)
		}
		n := rowsOf(t, f)
		rows += n
		if n == int64(small) {
			smallRows = n
		}
	}
	var bytes int64
	for _, f := range readyFiles(t, w.dir) {
		bytes += f.Size
	}
	if got := testutil.ToFloat64(w.m.bytesRotated.WithLabelValues("clicks")); got != float64(bytes) {
		t.Errorf("bytes rotated = %v, want the ready files' %d", got, bytes)
	}
	if rows != next || smallRows != int64(small) {
		t.Fatalf("files hold %d rows (the small tenant's file %d), want %d (%d)", rows, smallRows, next, small)
	}
	if len(w.parts[0].rolled) != 0 {
		t.Fatal("rolled files still waiting after the commit")
	}
}

// rollingWriter is a writer on e's WAL directory whose segments roll at
// 40 KiB, and whose offset commits never happen: what it leaves is what a
// process that stops before its window's commit leaves.
func rollingWriter(t *testing.T, e *recoveryEnv) *writer {
	t.Helper()
	wal := config.WAL{Dir: e.dir, MaxFileSizeBytes: 40 << 10, MaxFileAgeMinutes: 5, MaxOpenSegmentsPerPartition: 10}
	spec := e.tbl.Spec()
	noCommit := func(context.Context, string, map[int32]int64) error { return nil }
	w, err := newWriter(e.ds, wal, e.tbl.Schema(), &spec, discardLogger(), newMetrics(newRegistry()), newBudgetAllocator(), noCommit)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestCrashAfterRollRedeliversRows: the process dies after two rolls and
// before the window's commit. Recovery deletes the rolled files (their
// offsets are after the committed one) and notes their objects as
// orphans; Kafka's redelivery from the committed offset writes every row
// once.
func TestCrashAfterRollRedeliversRows(t *testing.T) {
	ctx := context.Background()
	const committed = 100
	e := newRecoveryEnv(t, map[int32]int64{0: committed})
	w := rollingWriter(t, e)
	next, _ := feedSkewed(t, w, committed, 2)
	rolled := append([]walfile.Name(nil), w.parts[0].rolled...)
	// The crash: nothing more runs in this writer.

	m := newMetrics(newRegistry())
	if err := recoverDir(ctx, e.dir, e.ds, e.cl, e.tbl, [16]byte{}, m, discardLogger()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.recovered.WithLabelValues("clicks", ActionDeleteUncommitted)); got != 2 {
		t.Fatalf("uncommitted ready files deleted = %v, want the 2 rolled", got)
	}
	for _, n := range rolled {
		if _, err := os.Stat(filepath.Join(e.dir, n.String())); !os.IsNotExist(err) {
			t.Errorf("rolled file %s left after recovery", n)
		}
		if _, err := os.Stat(filepath.Join(e.dir, walfile.OrphanName(n.UUID))); err != nil {
			t.Errorf("no orphan note for %s: %v", n, err)
		}
	}
	if files, _ := walfile.List(e.dir); len(files) != 0 {
		t.Fatalf("WAL files left after recovery: %v", files)
	}

	// Kafka delivers the records again from the committed offset.
	w2 := rollingWriter(t, e)
	ids := map[string]int{}
	for off := int64(committed); off < next; off++ {
		tenant := "giant"
		if (off-committed)%21 == 20 {
			tenant = "small"
		}
		must(t, w2.record(ctx, 0, off, event(int(off), tenant)))
	}
	must(t, w2.rotate(ctx, nil, TriggerShutdown))
	for _, f := range readyFiles(t, e.dir) {
		for _, id := range readStrings(t, f.Path, "event_id") {
			ids[id]++
		}
	}
	if len(ids) != int(next-committed) {
		t.Fatalf("%d distinct rows after redelivery, want %d", len(ids), next-committed)
	}
	for id, n := range ids {
		if n != 1 {
			t.Fatalf("row %s written %d times", id, n)
		}
	}
}

// TestLostPartitionDropsRolledFiles: a partition lost without a revoke
// deletes its rolled files with its open segments, and notes their
// objects as orphans.
func TestLostPartitionDropsRolledFiles(t *testing.T) {
	w, cl, _ := newTestWriter(t, config.WAL{MaxFileSizeBytes: 40 << 10})
	feedSkewed(t, w, 0, 2)
	rolled := append([]walfile.Name(nil), w.parts[0].rolled...)
	must(t, w.discard([]int32{0}))
	if n := len(readyFiles(t, w.dir)); n != 0 || len(cl.calls) != 0 {
		t.Fatalf("after losing the partition: %d ready files, commits %v", n, cl.calls)
	}
	entries, _ := os.ReadDir(w.dir)
	var notes int
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), walfile.OrphanPrefix) {
			notes++
		} else if !strings.HasPrefix(e.Name(), ".") {
			t.Errorf("file left after losing the partition: %s", e.Name())
		}
	}
	if notes != len(rolled) {
		t.Fatalf("%d orphan notes, want %d", notes, len(rolled))
	}
}

// TestPartitionsLostWhileStoppingKeepTheirFiles: partitions lost after the
// loop failed (a fatal error, or a release whose offset commit ran out of
// time and may have landed unanswered) keep their rolled files for the
// next start's recovery, which decides by the committed offsets; lost
// while running, they are dropped and read again, as before.
func TestPartitionsLostWhileStoppingKeepTheirFiles(t *testing.T) {
	for _, stopping := range []bool{true, false} {
		t.Run(map[bool]string{true: "stopping", false: "running"}[stopping], func(t *testing.T) {
			e := newRecoveryEnv(t, map[int32]int64{0: 0})
			w := rollingWriter(t, e)
			feedSkewed(t, w, 0, 2)
			rolled := append([]walfile.Name(nil), w.parts[0].rolled...)
			l := &loop{ds: e.ds, w: w, c: &Consumer{log: discardLogger(), m: newMetrics(newRegistry())}}
			l.failed.Store(stopping)
			l.lost(context.Background(), nil, map[string][]int32{e.ds.Topic: {0}})
			for _, n := range rolled {
				_, err := os.Stat(filepath.Join(e.dir, n.String()))
				if kept := err == nil; kept != stopping {
					t.Errorf("rolled file %s kept: %t, want %t", n, kept, stopping)
				}
			}
		})
	}
}
