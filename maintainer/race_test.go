package maintainer

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
)

// The committer's appends and the maintainer's passes run at once, each
// on its own catalog connection, with nothing ordering them: each commit
// of either lands, or loses the race and is staged again on the reloaded
// table. At the end the table holds every appended row exactly once,
// its small files compacted and its old snapshots expired.
func TestMaintainerRacesAppends(t *testing.T) {
	forEachCatalog(t, func(t *testing.T, dir string, cat config.Catalog) {
		ctx := context.Background()
		cfg := testConfig(dir, cat, map[string]string{
			table.MaxSnapshotAgeMsKey:   "1",
			table.MinSnapshotsToKeepKey: "2",
		})
		cfg.Maintenance.CompactionFanIn = 4
		const n = 40
		appendRows(t, cfg, 0, 4) // a first compaction is due at once
		m, _ := newMaintainer(t, cfg)
		var retried atomic.Int64
		m.beforeCommit = func(attempt int) {
			if attempt > 1 {
				retried.Add(1)
			}
		}
		done := make(chan error, 1)
		var conflicts int
		go func() {
			var err error
			conflicts, err = appendRacing(ctx, cfg, 4, n-4)
			done <- err
		}()
		passes := 0
		for racing := true; racing; {
			m.pass(ctx)
			passes++
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("append: %v", err)
				}
				racing = false
			default:
			}
		}
		m.pass(ctx) // the last appends' files
		t.Logf("%d passes raced %d appends: %d maintainer commits retried, %d appends retried", passes, n-4, retried.Load(), conflicts)

		if retried.Load()+int64(conflicts) == 0 {
			t.Error("no commit lost a race: the test raced nothing")
		}
		tbl := loadTable(t, cfg)
		want := make([]int64, n)
		for i := range want {
			want[i] = int64(i)
		}
		if got := ids(t, tbl); !slices.Equal(got, want) {
			t.Errorf("ids after the race %v, want %v", got, want)
		}
		if got := len(liveFiles(t, tbl)); got >= n/2 {
			t.Errorf("%d live files for %d one-row appends: the compactions did not land", got, n)
		}
		if got := testutil.ToFloat64(m.metrics.rewrittenFiles.WithLabelValues("events")); got == 0 {
			t.Error("nothing compacted during the race")
		}
		if got := len(tbl.Metadata().Snapshots()); got >= n {
			t.Errorf("%d snapshots after %d appends: the expiries did not land", got, n)
		}
	})
}

// appendRacing appends ids first..first+n-1, one row per append, as the
// committer does when another writer may commit at the same time: a
// commit that lost the race is staged again on the reloaded table; one
// whose outcome is unknown is looked for in the table before it is
// retried. It returns how many appends were retried.
func appendRacing(ctx context.Context, cfg *config.Config, first, n int64) (int, error) {
	cat, err := tables.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		return 0, err
	}
	defer closeCat(cat)
	tbl, err := tables.Load(ctx, cat, cfg.Datasets[0])
	if err != nil {
		return 0, err
	}
	retried := 0
	for id := first; id < first+n; id++ {
		for attempt := 1; ; attempt++ {
			next, commitErr := appendID(ctx, tbl, id)
			if commitErr == nil {
				tbl = next
				break
			}
			if attempt == 2*maxAttempts {
				return retried, fmt.Errorf("append id %d, attempt %d: %w", id, attempt, commitErr)
			}
			retried++
			if tbl, err = cat.LoadTable(ctx, tbl.Identifier()); err != nil {
				return retried, fmt.Errorf("reload table: %w", err)
			}
			if isConflict(commitErr) {
				continue
			}
			in, err := hasID(ctx, tbl, id)
			if err != nil {
				return retried, err
			}
			if in {
				break
			}
		}
	}
	return retried, nil
}

// hasID reports whether tbl holds a row id.
func hasID(ctx context.Context, tbl *table.Table, id int64) (bool, error) {
	at, err := tbl.Scan(table.WithSelectedFields("id")).ToArrowTable(ctx)
	if err != nil {
		return false, fmt.Errorf("scan: %w", err)
	}
	defer at.Release()
	for _, c := range at.Column(0).Data().Chunks() {
		if slices.Contains(c.(*array.Int64).Int64Values(), id) {
			return true, nil
		}
	}
	return false, nil
}
