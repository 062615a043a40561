package maintainer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A table another engine created without
// write.metadata.delete-after-commit.enabled keeps every metadata.json
// version. One pass leaves in its metadata directory only the current
// version and those of its metadata log, and nothing else that is there:
// a version above the current one (a commit that landed since the load),
// files not named like a version.
func TestMaintainerDeletesMetadataVersionsOutOfTheLog(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir, sqliteCatalog(t, dir), map[string]string{
		table.MetadataDeleteAfterCommitEnabledKey: "false",
		table.MetadataPreviousVersionsMaxKey:      "3",
	})
	const commits = 15
	appendRows(t, cfg, 0, commits)
	tbl := loadTable(t, cfg)
	metaDir := localPath(tbl.MetadataLocation())
	metaDir = metaDir[:strings.LastIndex(metaDir, "/")]
	if got := metadataFiles(t, tbl); got != commits+1 {
		t.Fatalf("%d metadata.json versions before the pass, want %d (one per commit and the table's creation)", got, commits+1)
	}
	// What another writer or tool may have put there.
	v, _ := metadataVersion(filepath.Base(tbl.MetadataLocation()))
	newer := filepath.Join(metaDir, fmt.Sprintf("%05d-%s.metadata.json", v+1, uuid.NewString()))
	others := []string{newer, filepath.Join(metaDir, "version-hint.text"), filepath.Join(metaDir, "notes.metadata.json")}
	for _, p := range others {
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	m, _ := newMaintainer(t, cfg)
	m.pass(context.Background())

	after := loadTable(t, cfg)
	want := []string{filepath.Base(after.MetadataLocation())}
	for e := range after.Metadata().PreviousFiles() {
		want = append(want, filepath.Base(e.MetadataFile))
	}
	for _, p := range others {
		want = append(want, filepath.Base(p))
	}
	entries, err := os.ReadDir(metaDir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") || strings.HasSuffix(e.Name(), ".text") {
			got = append(got, e.Name())
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("metadata directory after the pass:\n got %v\nwant %v (the current version, its log of 3, and the files not to touch)", got, want)
	}
	deleted := testutil.ToFloat64(m.metrics.metadataDeleted.WithLabelValues("events"))
	if wantDeleted := float64(commits + 1 - 4); deleted != wantDeleted {
		t.Errorf("ingestor_maintainer_metadata_files_deleted_total %v, want %v", deleted, wantDeleted)
	}
	if b := testutil.ToFloat64(m.metrics.metadataDeletedBytes.WithLabelValues("events")); b <= 0 {
		t.Errorf("ingestor_maintainer_metadata_bytes_deleted_total %v, want the deleted versions' size", b)
	}
	// The table reads as before.
	if got := ids(t, after); len(got) != commits {
		t.Errorf("%d rows after the pass, want %d", len(got), commits)
	}
}

// localPath is the file path of a file:// location.
func localPath(loc string) string { return strings.TrimPrefix(loc, "file://") }
