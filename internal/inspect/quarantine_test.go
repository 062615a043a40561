package inspect

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/walfile"
)

// TestListShowsQuarantinedFiles: `wal ls` shows each quarantined file with
// its reason and the range to replay, in both formats.
func TestListShowsQuarantinedFiles(t *testing.T) {
	dir := t.TempDir()
	n := walfile.Name{State: walfile.Ready, Topic: "clicks", Partition: 3, Start: 100, End: 199, UUID: uuid.New()}
	if err := os.WriteFile(filepath.Join(dir, n.String()), []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := walfile.Quarantine(dir, n.String(), walfile.QuarantineNote{Reason: walfile.ReasonChecksum, Error: "crc", Role: "uploader", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	entries, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Reason != walfile.ReasonChecksum || entries[0].Start != 100 || entries[0].End != 199 {
		t.Fatalf("entries %+v", entries)
	}
	var table, js bytes.Buffer
	if err := WriteList(&table, entries, time.Now(), FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "quarantined (checksum)  clicks  3") || !strings.Contains(table.String(), "100") {
		t.Errorf("table:\n%s", table.String())
	}
	if err := WriteList(&js, entries, time.Now(), FormatJSON); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"state": "quarantined"`) || !strings.Contains(js.String(), `"reason": "checksum"`) {
		t.Errorf("json:\n%s", js.String())
	}
}
