package maintainer

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/internal/inspect"
	"github.com/icewal/ingestor/shared/bloom"
	"github.com/icewal/ingestor/shared/storage"
)

// notes scans the table's note column.
func notes(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	at, err := tbl.Scan(table.WithSelectedFields("note")).ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	var out []string
	for _, c := range at.Column(0).Data().Chunks() {
		s := c.(*array.String)
		for i := range s.Len() {
			out = append(out, s.Value(i))
		}
	}
	return out
}

// A compacted file gets the bloom-filter sidecars of the dataset's
// columns before its hand-off, and `ingestor bloom test` on it finds
// every value it holds; the expiry that deletes the replaced inputs
// deletes their sidecars with them.
func TestCompactionWritesSidecarsAndExpiryDeletesThem(t *testing.T) {
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), map[string]string{
		table.MaxSnapshotAgeMsKey:   "1",
		table.MinSnapshotsToKeepKey: "1",
	})
	cfg.Datasets[0].BloomFilterColumns = []string{"note"}
	cfg.Maintenance.CompactionFanIn = 4
	for i := range int64(4) {
		appendNotes(t, cfg, []int64{2 * i, 2*i + 1})
	}
	// The uploader's sidecars of the four segments.
	var inputSidecars []string
	for _, f := range liveFiles(t, loadTable(t, cfg)) {
		p := bloom.SidecarName(strings.TrimSuffix(strings.TrimPrefix(f.FilePath(), "file://"), ".parquet"), "note")
		if err := os.WriteFile(p, []byte("sidecar"), 0o644); err != nil {
			t.Fatal(err)
		}
		inputSidecars = append(inputSidecars, p)
	}

	m, _ := newMaintainer(t, cfg)
	if res := passAndCommit(t, m, cfg); res.Applied != 1 {
		t.Fatalf("hand-off: %+v, want one group applied", res)
	}
	tbl := loadTable(t, cfg)
	live := liveFiles(t, tbl)
	if len(live) != 1 || !strings.Contains(live[0].FilePath(), CompactedPrefix) {
		t.Fatalf("live files after compaction: %d, want one compacted file", len(live))
	}
	compacted := live[0].FilePath()
	ctx := context.Background()
	store := storage.Open(nil)
	values := notes(t, tbl)
	if len(values) != 8 {
		t.Fatalf("%d rows, want 8", len(values))
	}
	for _, v := range values {
		ans, err := inspect.LookupBloom(ctx, store, compacted, "note", "string", v)
		if err != nil {
			t.Fatalf("bloom test on the compacted file: %v", err)
		}
		if !ans.MayContain {
			t.Fatalf("the compacted file's sidecar says %q is absent", v)
		}
	}
	if ans, err := inspect.LookupBloom(ctx, store, compacted, "note", "string", "not a note"); err != nil || ans.Count != 8 {
		t.Errorf("sidecar of the compacted file holds %d values (err %v), want 8", ans.Count, err)
	}

	// The next pass expires the snapshots that named the inputs and
	// deletes them, and their sidecars with them.
	m.pass(ctx)
	for _, p := range inputSidecars {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("sidecar %s of an expired input left behind", p)
		}
		if _, err := os.Stat(strings.TrimSuffix(p, ".bloom.note") + ".parquet"); err == nil {
			t.Errorf("expired input of %s not deleted", p)
		}
	}
	if _, err := inspect.LookupBloom(ctx, store, compacted, "note", "string", values[0]); err != nil {
		t.Errorf("the compacted file's sidecar after expiry: %v", err)
	}
}
