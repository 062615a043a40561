package walfile

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestOrphanNotes(t *testing.T) {
	dir := t.TempDir()
	id := uuid.New()
	ready := Name{State: Ready, Topic: "clicks", Partition: 3, Start: 10, End: 20, UUID: id}
	if err := os.WriteFile(filepath.Join(dir, ready.String()), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	written := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	o := Orphan{Dataset: "clicks", Segment: ready.String(), UUID: id, Written: written, Deleted: written.Add(time.Minute),
		Objects: []string{"abfs://wh@acct.dfs.core.windows.net/t/data/" + id.String() + ".parquet"}}
	if err := WriteOrphan(dir, o); err != nil {
		t.Fatal(err)
	}
	// Writing the same note again (recovery interrupted and run again)
	// replaces it.
	if err := WriteOrphan(dir, o); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, OrphanName(uuid.New())), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	notes, bad, err := ListOrphans(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || len(bad) != 1 {
		t.Fatalf("got %d notes and %d bad ones, want 1 and 1", len(notes), len(bad))
	}
	got := notes[0]
	if got.UUID != id || got.Dataset != "clicks" || got.Segment != ready.String() || !got.Written.Equal(written) ||
		len(got.Objects) != 1 || got.Path != filepath.Join(dir, OrphanName(id)) {
		t.Fatalf("note %+v does not round-trip %+v", got, o)
	}
	// The record path's listing does not see notes.
	files, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Name != ready {
		t.Fatalf("List = %v, want only the ready file", files)
	}
}
