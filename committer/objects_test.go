package committer

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/walfile"
)

// objectPath is the local path of a segment's object in the tests'
// file:// warehouse, from its marker.
func objectPath(t *testing.T, wal string, n walfile.Name) string {
	t.Helper()
	m, err := walfile.ReadMarker(wal, n)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(m.Object, "file://")
}

// TestCommitterHandsBackUnfitObjects is the committer's side of an outage
// longer than maintenance.orphanAgeHours: before its append it checks each
// object, and a segment whose object the orphan cleanup deleted (missing),
// whose object is not the marker's size (size), or whose object is older
// than half the margin, so that the cleanup could take it before the
// append lands (aged), goes back to the uploader: its marker is deleted,
// its ready file stays. The other segment, whose object is 30 hours old
// (under half of 72), is appended. Before, all of them were appended, and
// a scan of the table failed on the missing object.
func TestCommitterHandsBackUnfitObjects(t *testing.T) {
	cases := []struct {
		reason string
		spoil  func(t *testing.T, path string)
	}{
		{handBackMissing, func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
		{handBackSize, func(t *testing.T, path string) {
			if err := os.Truncate(path, 100); err != nil {
				t.Fatal(err)
			}
		}},
		{handBackAged, func(t *testing.T, path string) {
			old := time.Now().Add(-40 * time.Hour)
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			e := newEnv(t, sqliteCatalog(t.TempDir()))
			wal := e.walDir("wal")
			good := e.writeSegment(wal, "clicks", 0, 0, clickRows(1, 6, 1), true)
			back := e.writeSegment(wal, "clicks", 1, 0, clickRows(7, 4, 1), true)
			e.commitOffset("clicks", 0, 6)
			e.commitOffset("clicks", 1, 4)
			older := time.Now().Add(-30 * time.Hour)
			if err := os.Chtimes(objectPath(t, wal, good.name), older, older); err != nil {
				t.Fatal(err)
			}
			tc.spoil(t, objectPath(t, wal, back.name))

			cfg := e.config(wal)
			cfg.Maintenance.OrphanAgeHours = 72
			cm := newCommitter(t, cfg)
			runPass(t, cm)
			if got := testutil.ToFloat64(cm.metrics.handedBack.WithLabelValues("clicks", tc.reason)); got != 1 {
				t.Errorf("segments handed back for %s = %v, want 1", tc.reason, got)
			}
			if got := cm.Status().Datasets["clicks"].SegmentsHandedBack; got[tc.reason] != 1 || len(got) != 1 {
				t.Errorf("status segments_handed_back = %v, want %s: 1", got, tc.reason)
			}
			// The ready file stays, without its marker: what the uploader
			// uploads again.
			if got, want := walNames(t, wal), []string{back.name.String()}; !slices.Equal(got, want) {
				t.Fatalf("WAL holds %v, want only the handed-back ready file %v", got, want)
			}
			tbl := e.table("clicks")
			checkSnapshot(t, tbl, "clicks", good)
			if got, want := scanColumn(t, tbl, "id"), wantColumn("id", good); !slices.Equal(got, want) {
				t.Fatalf("table ids %v, want %v", got, want)
			}

			// The uploader uploads the ready file again; the next pass
			// appends it.
			e.upload(wal, tbl, back.name)
			runPass(t, cm)
			if left := walNames(t, wal); len(left) != 0 {
				t.Fatalf("WAL holds %v after the upload again, want nothing", left)
			}
			if got, want := scanColumn(t, e.table("clicks"), "id"), wantColumn("id", good, back); !slices.Equal(got, want) {
				t.Fatalf("table ids %v, want %v", got, want)
			}
		})
	}
}

// TestCommitterKeepsLocalCopyOfMissingObjectInTable: the table holds a
// segment (its append landed, the committer died before deleting the
// local files), and its object is gone from the store. The local ready
// file is then the only copy of rows the table names: it is not deleted
// but moved to the quarantine with its marker, reason object_missing, and
// counted. Before, the committer deleted it.
func TestCommitterKeepsLocalCopyOfMissingObjectInTable(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal := e.walDir("wal")
	s := e.writeSegment(wal, "clicks", 0, 0, clickRows(1, 5, 1), true)
	e.commitOffset("clicks", 0, 5)
	obj := objectPath(t, wal, s.name)
	_, restore := keepWAL(t, wal)

	cm := newCommitter(t, e.config(wal))
	runPass(t, cm)
	checkSnapshot(t, e.table("clicks"), "clicks", s)
	restore() // the local files of a committer that died after the append
	if err := os.Remove(obj); err != nil {
		t.Fatal(err)
	}

	cm = newCommitter(t, e.config(wal))
	runPass(t, cm)
	if left := walNames(t, wal); len(left) != 0 {
		t.Fatalf("WAL holds %v, want the segment moved to the quarantine", left)
	}
	q := filepath.Join(wal, walfile.QuarantineDir)
	for _, name := range []string{s.name.String(), s.name.As(walfile.Uploaded).String()} {
		if _, err := os.Stat(filepath.Join(q, name)); err != nil {
			t.Errorf("quarantine lacks %s: %v", name, err)
		}
	}
	notes, err := walfile.ListQuarantine(wal)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || notes[0].Reason != walfile.ReasonObjectMissing || notes[0].File != s.name.String() ||
		!strings.Contains(notes[0].Error, "file://"+obj) {
		t.Fatalf("quarantine notes %+v, want %s with reason %s naming the object", notes, s.name, walfile.ReasonObjectMissing)
	}
	if got := testutil.ToFloat64(cm.metrics.quarantined.WithLabelValues("clicks", walfile.ReasonObjectMissing)); got != 1 {
		t.Errorf("quarantined for a missing object = %v, want 1", got)
	}
	if got := cm.Status().Datasets["clicks"].SegmentsObjectMissing; got != 1 {
		t.Errorf("status segments_object_missing = %v, want 1", got)
	}
	if got := testutil.ToFloat64(cm.metrics.handedBack.WithLabelValues("clicks", handBackMissing)); got != 0 {
		t.Errorf("a segment the table holds was handed back (%v): it would be appended twice", got)
	}
}

// TestCommitterBoundsTheAppendByTheMargin: the objects passed the check at
// some time, each younger than half of maintenance.orphanAgeHours then;
// the append must end before the first of them could reach the margin and
// be taken by the cleanup. Here the margin is 2 s and the commit is held
// up past its half: the append is abandoned (outcome unknown), nothing is
// deleted, and the next pass, with a commit that is not held up, appends
// the segment once. Before, the append went on however long it took.
func TestCommitterBoundsTheAppendByTheMargin(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal := e.walDir("wal")
	s := e.writeSegment(wal, "clicks", 0, 0, clickRows(1, 5, 1), true)
	e.commitOffset("clicks", 0, 5)
	// The object's time is an hour ahead, so that it is never "aged"
	// against so short a margin, whatever the machine's speed.
	ahead := time.Now().Add(time.Hour)
	if err := os.Chtimes(objectPath(t, wal, s.name), ahead, ahead); err != nil {
		t.Fatal(err)
	}
	cfg := e.config(wal)
	cfg.Maintenance.OrphanAgeHours = 2.0 / 3600 // the bound: 1 s after the check
	cm := newCommitter(t, cfg)
	held := true
	cm.beforeCommit = func(ctx context.Context, _ string, _ int) {
		if held {
			select {
			case <-ctx.Done():
			case <-time.After(3 * time.Second): // past the bound
			}
		}
	}
	runPass(t, cm)
	if got := testutil.ToFloat64(cm.metrics.failures.WithLabelValues("clicks", reasonUnknown)); got != 1 {
		t.Errorf("appends abandoned at the bound = %v, want 1", got)
	}
	if n := len(snapshots(e.table("clicks"))); n != 0 {
		t.Fatalf("the table has %d snapshots after an append held past the bound, want 0", n)
	}
	if got, want := walNames(t, wal), []string{s.name.String(), s.name.As(walfile.Uploaded).String()}; !slices.Equal(got, want) {
		t.Fatalf("WAL holds %v, want the segment kept: %v", got, want)
	}
	held = false
	runPass(t, cm)
	checkSnapshot(t, e.table("clicks"), "clicks", s)
	if left := walNames(t, wal); len(left) != 0 {
		t.Fatalf("WAL holds %v after the append, want nothing", left)
	}
}
