package uploader

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/walfile"
)

// TestQuarantinesBadReadyFiles covers the probes "a ready file with 16
// bytes flipped inside a data page" and "a ready file truncated to half":
// neither is uploaded or marked (so the committer never adds it); each is
// moved to the quarantine directory with a note of its reason and range,
// and counted; the good file beside them flows.
func TestQuarantinesBadReadyFiles(t *testing.T) {
	e := newEnv(t, false)
	locs := e.dataLocations()
	flipped := e.writeReady("orders_topic", 0, 0, 200, "a")
	truncated := e.writeReady("orders_topic", 1, 0, 200, "b")
	legacy := e.writeReady("orders_topic", 2, 0, 200, "c") // no checksum record, truncated
	good := e.writeReady("orders_topic", 3, 0, 50, "d")

	p := filepath.Join(e.dir, flipped.name.String())
	b := append([]byte(nil), flipped.data...)
	for i := 0; i < 16; i++ {
		b[len(b)/3+i] ^= 0xff
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(e.dir, truncated.name.String()), int64(len(truncated.data)/2)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(e.dir, walfile.SumName(legacy.name.UUID))); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(e.dir, legacy.name.String()), int64(len(legacy.data)/2)); err != nil {
		t.Fatal(err)
	}

	u := e.newUploader()
	e.run(u)
	e.waitMarked(30*time.Second, good.name)
	e.checkUploaded(good, locs["orders"])
	waitFor(t, 30*time.Second, func() bool {
		return testMetric(u, "orders", walfile.ReasonChecksum) == 2 && testMetric(u, "orders", walfile.ReasonUnreadable) == 1
	}, "three files quarantined")

	notes, err := walfile.ListQuarantine(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{flipped.name.String(): walfile.ReasonChecksum, truncated.name.String(): walfile.ReasonChecksum,
		legacy.name.String(): walfile.ReasonUnreadable}
	if len(notes) != len(want) {
		t.Fatalf("quarantine holds %+v, want %v", notes, want)
	}
	for _, n := range notes {
		if want[n.File] != n.Reason || n.Topic != "orders_topic" || n.Start != 0 || n.End != 199 || n.Error == "" {
			t.Errorf("note %+v, want reason %q and the range 0-199", n, want[n.File])
		}
		if _, err := os.Stat(filepath.Join(e.dir, walfile.QuarantineDir, n.File)); err != nil {
			t.Errorf("quarantined file: %v", err)
		}
	}
	for _, s := range []segment{flipped, truncated, legacy} {
		if _, ok := e.marker(s.name); ok {
			t.Errorf("%s marked uploaded", s.name)
		}
		if _, err := os.Stat(filepath.Join(e.dir, s.name.String())); !os.IsNotExist(err) {
			t.Errorf("%s still in the record path: %v", s.name, err)
		}
	}
}

func testMetric(u *Uploader, dataset, reason string) float64 {
	return testutil.ToFloat64(u.m.quarantined.WithLabelValues(dataset, reason))
}

// TestRewritesEmptyMarker is the other half of the probe "a zero-byte
// uploaded_ marker": the data file is fine, so the uploader uploads it
// again (same object names) and writes a good marker over the empty one.
func TestRewritesEmptyMarker(t *testing.T) {
	e := newEnv(t, false)
	locs := e.dataLocations()
	s := e.writeReady("orders_topic", 0, 0, 20, "a")
	if err := os.WriteFile(filepath.Join(e.dir, s.name.As(walfile.Uploaded).String()), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.run(e.newUploader())
	waitFor(t, 30*time.Second, func() bool {
		m, err := walfile.ReadMarker(e.dir, s.name)
		return err == nil && m.Object != ""
	}, "the empty marker rewritten")
	e.checkUploaded(s, locs["orders"])
}

// TestQuarantinesBadNames is the probe "a ready file whose name does not
// parse": it was skipped by every role. It is moved aside, counted and
// listed in the quarantine; the good file beside it flows.
func TestQuarantinesBadNames(t *testing.T) {
	e := newEnv(t, false)
	good := e.writeReady("orders_topic", 0, 0, 20, "a")
	bad := "ready_orders_topic_0_20-39_not-a-uuid.parquet"
	if err := os.WriteFile(filepath.Join(e.dir, bad), good.data, 0o644); err != nil {
		t.Fatal(err)
	}
	u := e.newUploader()
	e.run(u)
	e.waitMarked(30*time.Second, good.name)
	waitFor(t, 30*time.Second, func() bool { return testMetric(u, "orders", walfile.ReasonBadName) == 1 }, "the bad name quarantined")
	notes, err := walfile.ListQuarantine(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || notes[0].File != bad || notes[0].Reason != walfile.ReasonBadName {
		t.Fatalf("quarantine notes %+v", notes)
	}
	if _, err := os.Stat(filepath.Join(e.dir, walfile.QuarantineDir, bad)); err != nil {
		t.Fatal(err)
	}
}

// TestWritesNotesAQuarantineCrashLeftOut: a role died between moving bad
// files into quarantine and writing their notes (the failpoint
// quarantine.before-note). The uploader's next start checks each again
// and writes the note with its reason and range, counts it and logs it;
// a file moved beside its segment gets no note of its own.
func TestWritesNotesAQuarantineCrashLeftOut(t *testing.T) {
	e := newEnv(t, false)
	flipped := e.writeReady("orders_topic", 0, 0, 200, "a")
	b := append([]byte(nil), flipped.data...)
	for i := 0; i < 16; i++ {
		b[len(b)/3+i] ^= 0xff
	}
	q := filepath.Join(e.dir, walfile.QuarantineDir)
	if err := os.MkdirAll(q, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(q, flipped.name.String()), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(e.dir, flipped.name.String())); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(e.dir, walfile.SumName(flipped.name.UUID)), filepath.Join(q, walfile.SumName(flipped.name.UUID))); err != nil {
		t.Fatal(err)
	}
	bad := "ready_orders_topic_0_20-39_not-a-uuid.parquet"
	if err := os.WriteFile(filepath.Join(q, bad), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}

	u := e.newUploader()
	e.run(u)
	waitFor(t, 30*time.Second, func() bool {
		return testMetric(u, "orders", walfile.ReasonChecksum) == 1 && testMetric(u, "orders", walfile.ReasonBadName) == 1
	}, "the two notes written and counted")
	notes, err := walfile.ListQuarantine(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]walfile.QuarantineNote{}
	for _, n := range notes {
		got[n.File] = n
	}
	if n := got[flipped.name.String()]; n.Reason != walfile.ReasonChecksum || n.Topic != "orders_topic" || n.End != flipped.name.End {
		t.Errorf("note of the flipped file: %+v, want reason checksum and its range", n)
	}
	if n := got[bad]; n.Reason != walfile.ReasonBadName {
		t.Errorf("note of the bad name: %+v, want reason bad_name", n)
	}
	if len(notes) != 2 {
		t.Errorf("quarantine lists %+v, want the two files only", notes)
	}
}
