package e2e

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/walfile"
)

// TestOutageLongerThanOrphanMargin is a committer outage longer than
// maintenance.orphanAgeHours (72 h by default): the consumer and the
// uploader go on without it, so segments are uploaded and their offsets
// committed, but no append names their objects. The objects then age four
// days (their times are set back, as the outage would), and the
// maintainer's orphan cleanup runs.
//
// In "maintainer in another pod" the cleanup runs in a second instance's
// maintainer, which holds the tables' lease throughout, as a pod on
// another node would while this one's committer is down: it cannot see
// this pod's WAL directory, so it deletes every waiting object, segments
// and bloom-filter sidecars. Then `ingestor run` starts: the committer
// finds each object missing before its append and hands the segment back,
// the uploader uploads it again from the local ready file, and every event
// is in the table once, with a full scan of the table succeeding. Before,
// the committer appended the deleted objects and deleted the local copies:
// the scan failed with "no such file or directory" and the rows were gone.
//
// In "one pod" the cleanup sees the ready files in its own WAL directory
// and keeps their objects, however old (reason "waiting"); the committer
// then finds them older than half the margin and hands them back all the
// same ("aged"), so that no append can still be in flight when a cleanup
// elsewhere would take them.
//
// In both, the committer is crashed right after its hand-back
// (committer.after-hand-back); the supervisor starts it again and nothing
// is lost or doubled.
func TestOutageLongerThanOrphanMargin(t *testing.T) {
	for _, tc := range []struct {
		name     string
		otherPod bool
	}{
		{"one pod", false},
		{"maintainer in another pod", true},
	} {
		// Each in a world of its own; side by side, since most of their
		// time is waiting on rotations and commit intervals.
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testOutageLongerThanOrphanMargin(t, tc.otherPod)
		})
	}
}

func testOutageLongerThanOrphanMargin(t *testing.T, otherPod bool) {
	const topic, events = "margin", 2000
	w := newWorld(t, worldOptions{topics: []string{topic}, partitions: 4, fileWarehouse: true})
	ds := datasetOf(topic)
	marker := filepath.Join(w.dir, "fired-hand-back")
	in := w.newInstance("a", instanceOptions{datasets: []dataset{ds}, upkeep: true,
		env: []string{failpoint.EnvVar + "=" + failpoint.CommitterAfterHandBack + "=1@" + marker}})
	defer in.dumpLogs()
	upkeep := in // the instance whose maintainer runs the cleanup
	if otherPod {
		upkeep = w.newInstance("b", instanceOptions{datasets: []dataset{ds}, upkeep: true})
		defer upkeep.dumpLogs()
	}
	ctx := context.Background()
	at := func(seq int64) time.Time { return baseTime.Add(time.Duration(seq) * 20 * time.Second) }
	if err := w.produce(ctx, topic, 0, events, 0, at); err != nil {
		t.Fatal(err)
	}

	// The outage: no committer. The consumer and the uploader take every
	// event into uploaded segments, and their orderly stop commits the
	// offsets.
	in.start("consumer")
	in.start("uploader")
	in.waitReady(t, 60*time.Second)
	deadline := time.Now().Add(60 * time.Second)
	for held, marked, ready := 0, 0, 0; held < events || marked < ready; {
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s the WAL holds %d of %d events in %d ready files, %d uploaded", held, events, ready, marked)
		}
		time.Sleep(200 * time.Millisecond)
		held, marked, ready = walHolds(t, in.walDir)
	}
	in.stop(t, 60*time.Second)
	_, segments, _ := walHolds(t, in.walDir)

	// Four days pass: every object waiting for its append ages past the
	// margin.
	objects := dataObjects(t, w.warehouseDir())
	if len(objects) < 2*segments {
		t.Fatalf("the warehouse holds %d data objects for %d uploaded segments, want a segment and a sidecar each", len(objects), segments)
	}
	old := time.Now().Add(-96 * time.Hour)
	for _, p := range objects {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	// The maintainer's first pass runs the orphan cleanup. Another pod's
	// takes them all; this pod's keeps the segments whose ready files it
	// sees, and their sidecars with them.
	upkeep.start("maintainer")
	deadline = time.Now().Add(60 * time.Second)
	for {
		m := upkeep.peek("maintainer")
		if otherPod && m.Sum("ingestor_maintainer_orphan_files_deleted_total") >= float64(len(objects)) {
			break
		}
		if !otherPod && m.Sum("ingestor_maintainer_orphans_kept_total", `reason="waiting"`) >= float64(segments) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orphan cleanup did not pass over the %d aged objects within 60 s (deleted %v, kept %v)", len(objects),
				m.Sum("ingestor_maintainer_orphan_files_deleted_total"), m.ByLabel("ingestor_maintainer_orphans_kept_total", "reason"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	left := dataObjects(t, w.warehouseDir())
	if otherPod && len(left) > 0 {
		t.Fatalf("the other pod's orphan cleanup left %d of %d aged objects: %v", len(left), len(objects), left)
	}
	if !otherPod && len(left) != len(objects) {
		t.Fatalf("the orphan cleanup of the pod whose WAL directory holds the segments left %d of their %d objects, want all", len(left), len(objects))
	}
	if !otherPod {
		in.stop(t, 60*time.Second)
	}

	// The committer is back.
	in.start("run")
	w.waitRows(t, map[string]int64{ds.table: events}, 90*time.Second)
	in.stop(t, 60*time.Second)
	if otherPod {
		upkeep.stop(t, 60*time.Second)
	}

	missing, dup, unexpected, rows := w.exactlyOnce(t, ds.table, 0, events)
	if missing+dup+unexpected > 0 {
		t.Errorf("%d rows: %d events missing, %d duplicated, %d unexpected", rows, missing, dup, unexpected)
	}
	tbl, closeCat, err := w.openTable(ctx, ds.table)
	if err != nil {
		t.Fatal(err)
	}
	defer closeCat()
	full, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("full scan of %s: %v", ds.table, err)
	}
	if n := full.NumRows(); n != events {
		t.Errorf("full scan of %s: %d rows, want %d", ds.table, n, events)
	}
	full.Release()
	// The uploads again stored each segment with its sidecar.
	if n := len(dataObjects(t, w.warehouseDir())); n < 2*segments {
		t.Errorf("the warehouse holds %d data objects after `run`, want %d segments and a sidecar each", n, segments)
	}
	if left := walLeft(t, in.walDir); len(left) > 0 {
		t.Errorf("WAL not empty after the orderly stop: %v", left)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the committer never reached %s: %v", failpoint.CommitterAfterHandBack, err)
	}
	log := in.log("run")
	reason := map[bool]string{true: "missing", false: "aged"}[otherPod]
	if !strings.Contains(log, "handing the segments back to the uploader") || !strings.Contains(log, `"first_reason":"`+reason+`"`) {
		t.Errorf("the committer's log does not show a hand-back of a %s object", reason)
	}
	t.Logf("%d segments, %d aged objects, %d of them left by the orphan cleanup; every event once after `run`", segments, len(objects), len(left))
}

// walHolds returns how many events the WAL directory's ready files hold
// (by their offset ranges), and how many ready files it holds with and
// without their uploaded_ markers.
func walHolds(t *testing.T, dir string) (events, marked, ready int) {
	t.Helper()
	files, err := walfile.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		switch f.State {
		case walfile.Ready:
			ready++
			events += int(f.End - f.Start + 1)
		case walfile.Uploaded:
			marked++
		}
	}
	return events, marked, ready
}

// dataObjects lists the files in the data directories of the tables of a
// file:// warehouse: segments and their sidecars.
func dataObjects(t *testing.T, warehouse string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(warehouse, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && filepath.Base(filepath.Dir(p)) == "data" {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
