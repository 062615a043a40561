package committer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/walfile"
)

// TestCommitterQuarantinesBadMarkers is the probe "a zero-byte uploaded_
// marker": the committer moved it aside (counted, with a note) instead of
// warning five times a second; the ready file stays unmarked for the
// uploader to upload again, and the other segment is committed.
func TestCommitterQuarantinesBadMarkers(t *testing.T) {
	for _, content := range []string{"", "{not json"} {
		t.Run(map[string]string{"": "empty", "{not json": "not_json"}[content], func(t *testing.T) {
			e := newEnv(t, sqliteCatalog(t.TempDir()))
			wal := e.walDir("wal")
			bad := e.writeSegment(wal, "clicks", 0, 0, clickRows(1, 6, 1), true)
			good := e.writeSegment(wal, "clicks", 1, 0, clickRows(7, 4, 1), true)
			e.commitOffset("clicks", 0, 6)
			e.commitOffset("clicks", 1, 4)
			marker := filepath.Join(wal, bad.name.As(walfile.Uploaded).String())
			if err := os.WriteFile(marker, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}

			cm := newCommitter(t, e.config(wal))
			runPass(t, cm)
			if got := testutil.ToFloat64(cm.metrics.quarantined.WithLabelValues("clicks", walfile.ReasonBadMarker)); got != 1 {
				t.Errorf("quarantined markers = %v, want 1", got)
			}
			if got, want := walNames(t, wal), []string{bad.name.String()}; !slices.Equal(got, want) {
				t.Fatalf("WAL holds %v, want only the unmarked ready file %v", got, want)
			}
			notes, err := walfile.ListQuarantine(wal)
			if err != nil {
				t.Fatal(err)
			}
			if len(notes) != 1 || notes[0].Reason != walfile.ReasonBadMarker || notes[0].Start != 0 || notes[0].End != 5 {
				t.Fatalf("quarantine notes %+v", notes)
			}
			checkSnapshot(t, e.table("clicks"), "clicks", good)
		})
	}
}
