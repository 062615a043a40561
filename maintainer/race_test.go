package maintainer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// Another pod's committer appends while this pod's maintainer passes and
// this pod's committer applies their compaction hand-offs, each on its
// own catalog connection, with nothing ordering them: each commit lands,
// or loses the race and is staged again on the reloaded table. At the end
// the table holds every appended row exactly once, its small files
// compacted and its old snapshots expired. (Against appends back to back,
// a few milliseconds apart, a replace can lose all its attempts; its note
// stays and the next try lands it.)
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
		var applied, failedApplies int
		// apply is this pod's committer applying the notes, as
		// committer.applyHandoffs does: a failure leaves the note.
		apply := func() {
			c, err := m.catalog(ctx)
			if err != nil {
				t.Fatal(err)
			}
			notes, _, err := walfile.ListHandoffs(m.dir, "events")
			if err != nil {
				t.Fatal(err)
			}
			for _, note := range notes {
				tbl, err := c.LoadTable(ctx, catalog.ToIdentifier(cfg.Datasets[0].TableIdent()...))
				if err != nil {
					t.Fatal(err)
				}
				_, res, err := tables.ApplyHandoff(ctx, c, tbl, note.Handoff, func(attempt int) {
					if attempt > 1 {
						retried.Add(1)
					}
				})
				if err != nil {
					failedApplies++
					continue
				}
				applied += res.Applied
				os.Remove(note.Path)
			}
		}
		passes := 0
		for racing := true; racing; {
			m.pass(ctx)
			apply()
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
		apply()     // a note whose replace lost every race
		m.pass(ctx) // the last appends' files
		apply()
		var dropped []string
		for _, step := range []string{stepExpire, stepManifests, stepCompact} {
			if f := testutil.ToFloat64(m.metrics.failures.WithLabelValues("events", step)); f > 0 {
				dropped = append(dropped, fmt.Sprintf("%s %.0f", step, f))
			}
		}
		t.Logf("%d passes raced %d appends: %d maintainer and replace commits retried, failed steps %v, %d replaces left to a later try, %d groups applied; %d appends retried",
			passes, n-4, retried.Load(), dropped, failedApplies, applied, conflicts)

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
		if applied == 0 {
			t.Error("no compaction applied during the race")
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
			if tables.IsConflict(commitErr) {
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

// Two pods' maintainers on one table when the lease failed them (one lost
// its Kafka session and has not learnt it yet): both compact the same
// files, each leaves a hand-off in its own pod's WAL directory. The
// second pod's committer applies its note first; the first pod's finds
// the inputs gone, drops its group and leaves its file to the orphan
// cleanup: every row once, nothing compacted twice.
func TestTwoMaintainersWithoutTheLeaseCompactOnce(t *testing.T) {
	forEachCatalog(t, func(t *testing.T, dir string, cat config.Catalog) {
		ctx := context.Background()
		cfg := testConfig(dir, cat, nil)
		cfg.Maintenance.CompactionFanIn = 4
		const n = 8
		appendRows(t, cfg, 0, n)
		other := *cfg
		other.Ingestion.WAL.Dir = filepath.Join(dir, "other-pod")
		if err := os.MkdirAll(other.Ingestion.WAL.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		first, _ := newMaintainer(t, cfg)
		second, _ := newMaintainer(t, &other)
		first.pass(ctx)
		second.pass(ctx)
		if res := commitHandoffs(t, &other, nil); res.Applied != 1 {
			t.Errorf("the second pod's hand-off: %+v, want its group applied", res)
		}
		res := commitHandoffs(t, cfg, nil)
		if res.Applied != 0 || res.Dropped != 1 {
			t.Errorf("the first pod's hand-off: %+v, want its group dropped", res)
		}
		tbl := loadTable(t, cfg)
		want := make([]int64, n)
		for i := range want {
			want[i] = int64(i)
		}
		if got := ids(t, tbl); !slices.Equal(got, want) {
			t.Errorf("ids %v, want %v", got, want)
		}
		live := liveFiles(t, tbl)
		if len(live) != 1 {
			t.Errorf("%d live files, want 1: the second maintainer's", len(live))
		}
		for _, f := range live {
			if slices.Contains(res.DroppedFiles, f.FilePath()) {
				t.Errorf("the dropped compaction %s is live", f.FilePath())
			}
		}
		// The orphan cleanup, once past its margin, deletes the dropped
		// file and keeps the live one.
		first.orphanAge = time.Nanosecond
		first.pass(ctx)
		if got := compactedObjects(t, loadTable(t, cfg)); len(got) != len(live) {
			t.Errorf("compacted objects %v, want only the %d live ones: the losing maintainer's output stayed", got, len(live))
		}
		if got := testutil.ToFloat64(first.metrics.failures.WithLabelValues("events", stepCompact)); got != 0 {
			t.Errorf("the first maintainer's compaction failures %v, want 0: a lost race is dropped", got)
		}
	})
}
