//go:build linux

package committer

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	itest "github.com/icewal/ingestor/internal/testutil"
	"github.com/icewal/ingestor/shared/config"
)

// The main test against a PostgreSQL catalog, the catalog of production
// deployments that do not run a REST catalog.
func TestCommitterPostgresCatalog(t *testing.T) {
	pg := itest.Postgres(t)
	warehouse := "file://" + filepath.Join(t.TempDir(), "warehouse")
	testCommitsUploadedFiles(t, newEnv(t, config.Catalog{Name: "pg", Properties: pg.CatalogProperties(warehouse)}))
}

// The catalog goes away at the moment of the commit: the outcome is
// unknown, so nothing is deleted; when the catalog is back, the next pass
// commits the segments exactly once.
func TestCommitterPostgresOutage(t *testing.T) {
	ctx := context.Background()
	pg := itest.Postgres(t)
	warehouse := "file://" + filepath.Join(t.TempDir(), "warehouse")
	e := newEnv(t, config.Catalog{Name: "pg", Properties: pg.CatalogProperties(warehouse)})
	wal := e.walDir("wal")
	s := e.writeSegment(wal, "clicks", 0, 0, clickRows(1, 6, 1), true)
	e.commitOffset("clicks", 0, 6)
	before := walNames(t, wal)

	cm := newCommitter(t, e.config(wal))
	cm.beforeCommit = func(context.Context, string, int) {
		if err := pg.Stop(); err != nil {
			t.Errorf("stop postgres: %v", err)
		}
	}
	runPass(t, cm)
	if got := testutil.ToFloat64(cm.metrics.failures.WithLabelValues("clicks", reasonUnknown)); got != 1 {
		t.Errorf("unknown-outcome failures = %v, want 1", got)
	}
	if got := walNames(t, wal); !slices.Equal(got, before) {
		t.Fatalf("WAL holds %v after a failed commit, want %v", got, before)
	}

	// While the catalog is down, passes fail and keep the files.
	cm2 := newCommitter(t, e.config(wal))
	runPass(t, cm2)
	if got := testutil.ToFloat64(cm2.metrics.failures.WithLabelValues("clicks", reasonError)); got != 1 {
		t.Errorf("error failures during the outage = %v, want 1", got)
	}
	if got := walNames(t, wal); !slices.Equal(got, before) {
		t.Fatalf("WAL holds %v during the outage, want %v", got, before)
	}

	if err := pg.Start(ctx); err != nil {
		t.Fatalf("restart postgres: %v", err)
	}
	runPass(t, newCommitter(t, e.config(wal)))
	if got := walNames(t, wal); len(got) != 0 {
		t.Fatalf("WAL holds %v after the catalog came back", got)
	}
	clicks := e.table("clicks")
	checkSnapshot(t, clicks, "clicks", s)
	if got, want := scanColumn(t, clicks, "id"), wantColumn("id", s); !slices.Equal(got, want) {
		t.Errorf("clicks ids %v, want %v", got, want)
	}
}

// Exactly once across upkeep by another engine, on a PostgreSQL catalog.
func TestCommitterPostgresLandedThenCompactedAndExpired(t *testing.T) {
	pg := itest.Postgres(t)
	warehouse := "file://" + filepath.Join(t.TempDir(), "warehouse")
	testLandedThenCompactedAndExpired(t, newEnv(t, config.Catalog{Name: "pg", Properties: pg.CatalogProperties(warehouse)}))
}
