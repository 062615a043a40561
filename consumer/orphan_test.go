package consumer

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/icewal/ingestor/shared/walfile"
)

// TestRecoveryNotesOrphans checks that each ready file deleted because its
// offset commit never landed leaves a note naming its objects, and that
// files kept or already in the table leave none.
func TestRecoveryNotesOrphans(t *testing.T) {
	e := newRecoveryEnv(t, map[int32]int64{0: 100})
	uploaded := e.segmentFile(t, 0, 100, 120) // uncommitted, upload finished
	plain := e.segmentFile(t, 1, 0, 9)        // uncommitted, no marker
	keep := e.segmentFile(t, 0, 80, 99)       // committed: kept
	inTable := e.segmentFile(t, 0, 10, 40)    // committed, in the table
	e.addToTable(t, inTable)
	must(t, walfile.WriteMarker(e.dir, uploaded, walfile.Marker{Object: "file:///wh/data/" + uploaded.UUID.String() + ".parquet", Size: 9,
		Blooms: map[string]string{"event_id": "file:///wh/data/" + uploaded.UUID.String() + ".bloom.event_id"}}))
	info, err := os.Stat(filepath.Join(e.dir, uploaded.String()))
	if err != nil {
		t.Fatal(err)
	}

	if err := recoverDir(context.Background(), e.dir, e.ds, e.cl, e.tbl, [16]byte{}, newMetrics(newRegistry()), discardLogger()); err != nil {
		t.Fatal(err)
	}
	notes, bad, err := walfile.ListOrphans(e.dir)
	if err != nil || len(bad) > 0 {
		t.Fatalf("list notes: %v, bad %v", err, bad)
	}
	byID := map[string]walfile.OrphanFile{}
	for _, n := range notes {
		byID[n.UUID.String()] = n
	}
	if len(notes) != 2 {
		t.Fatalf("%d notes, want 2 (for %s and %s)", len(notes), uploaded, plain)
	}
	u := byID[uploaded.UUID.String()]
	if u.Dataset != e.ds.Name || u.Segment != uploaded.String() || !u.Written.Equal(info.ModTime().UTC()) || u.Deleted.IsZero() {
		t.Errorf("note %+v", u.Orphan)
	}
	if len(u.Objects) != 2 || u.Objects[0] != "file:///wh/data/"+uploaded.UUID.String()+".parquet" {
		t.Errorf("note objects %v, want the marker's object then its sidecar", u.Objects)
	}
	if p := byID[plain.UUID.String()]; p.Segment != plain.String() || len(p.Objects) != 0 {
		t.Errorf("note of the file without a marker: %+v", p.Orphan)
	}
	for _, n := range []walfile.Name{keep, inTable} {
		if _, ok := byID[n.UUID.String()]; ok {
			t.Errorf("a note for %s, which recovery did not delete as uncommitted", n)
		}
	}
}
