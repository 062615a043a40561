package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/internal/devenv"
)

// After upkeep, a live data file's adding snapshot may be gone: expiry
// removed the append whose file is still live. The scorer still reads
// every event once, and counts those rows as of unknown freshness instead
// of failing the run, as it did at the end of the first soak with upkeep
// on that expired anything.
func TestScoreAfterExpiry(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := eventsTable(t, map[string]string{
		"type": "sql", "uri": "file:" + filepath.Join(dir, "catalog.db"),
		"sql.driver": "sqlite", "sql.dialect": "sqlite",
		"warehouse": "file://" + filepath.Join(dir, "wh"),
	})
	ten, err := devenv.NewTenancy(devenv.KeysUniform, 2)
	if err != nil {
		t.Fatal(err)
	}
	const run, events = 7, 20
	made := time.Now().Add(-time.Minute)
	for first := int64(0); first < events; first += 10 {
		var ids, tenants []string
		var tss []arrow.Timestamp
		for seq := first; seq < first+10; seq++ {
			ids = append(ids, devenv.EventID(run, seq))
			tenants = append(tenants, ten.Name(ten.Of(seq)))
			tss = append(tss, arrow.Timestamp(made.UnixMicro()))
		}
		tx := tbl.NewTransaction()
		if err := tx.AppendTable(ctx, arrowTable(t, ids, tenants, tss), 1024, nil); err != nil {
			t.Fatal(err)
		}
		if tbl, err = tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Expire the first append; its file stays live in the second's
	// manifests, under the first's snapshot id.
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(1)); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after expiry, want 1", n)
	}

	s, err := scoreTable(ctx, tbl, run, events, ten)
	if err != nil {
		t.Fatalf("score: %v", err)
	}
	if !s.exactlyOnce() || s.rows != events {
		t.Errorf("rows %d, missing %d, duplicated %d, unexpected %d: want %d exactly once", s.rows, s.missing, s.duplicated, s.unexpected, events)
	}
	if len(s.freshness) != 10 || s.freshnessUnknown != 10 {
		t.Errorf("freshness of %d rows, unknown for %d; want 10 and 10", len(s.freshness), s.freshnessUnknown)
	}
	for _, f := range s.freshness {
		if f < 30 || f > 600 {
			t.Errorf("freshness %.1f s, want about a minute", f)
			break
		}
	}
}
