package maintainer

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
)

// deleteIDs deletes the rows ids with one merge-on-read delete of another
// engine: one position-delete file.
func deleteIDs(t *testing.T, cfg *config.Config, ids ...int64) {
	t.Helper()
	lits := make([]int64, len(ids))
	copy(lits, ids)
	tx := openTable(t, cfg).NewTransaction()
	if err := tx.Delete(context.Background(), iceberg.IsIn(iceberg.Reference("id"), lits...), nil); err != nil {
		t.Fatalf("delete ids %v: %v", ids, err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatalf("commit the delete of ids %v: %v", ids, err)
	}
}

// A partition with delete files is compacted whole, even where the fan-in
// plans nothing (here: every file at least half the target size), when
// it is idle, when it has more delete files than the fan-in and has
// doubled since its oldest delete, when it has more than the fan-in
// cubed, or when its position deletes remove more than a tenth of its
// rows: afterwards the table reads the same rows, and no delete file is
// left for reads to check. A busy partition that has grown less, and
// equality deletes of many keys (an upsert's hold every key of its
// batch), leave it alone: rewriting a growing partition at every few
// deletes cost its size every few commits.
func TestDeleteHeavyPartitionIsCompactedWhole(t *testing.T) {
	nineByEquality := func(t *testing.T, cfg *config.Config) {
		for id := range int64(9) {
			deleteRowByEquality(t, cfg, id*2)
		}
	}
	cases := []struct {
		name    string
		fanIn   int
		appends [][]int64
		del     func(t *testing.T, cfg *config.Config)
		// after are appends after the deletes.
		after [][]int64
		// idle: the pass runs an hour after the last commit.
		idle bool
		// deleted are the ids the deletes remove.
		deleted []int64
		// rewritten: the pass compacts the partition; else the delete
		// files stay.
		rewritten bool
	}{
		{
			name:      "more delete files than the fan-in, idle",
			appends:   [][]int64{seq(0, 12), seq(12, 24)},
			del:       nineByEquality,
			idle:      true,
			deleted:   []int64{0, 2, 4, 6, 8, 10, 12, 14, 16},
			rewritten: true,
		},
		{
			name:      "more delete files than the fan-in, doubled since",
			appends:   [][]int64{seq(0, 12), seq(12, 24)},
			del:       nineByEquality,
			after:     [][]int64{seq(24, 36), seq(36, 48)},
			deleted:   []int64{0, 2, 4, 6, 8, 10, 12, 14, 16},
			rewritten: true,
		},
		{
			name:    "more delete files than the fan-in, grown by less",
			appends: [][]int64{seq(0, 12), seq(12, 24)},
			del:     nineByEquality,
			after:   [][]int64{seq(24, 36), seq(36, 42)},
			deleted: []int64{0, 2, 4, 6, 8, 10, 12, 14, 16},
		},
		{
			name:    "more delete files than the fan-in cubed",
			fanIn:   2,
			appends: [][]int64{seq(0, 12), seq(12, 24)},
			del: func(t *testing.T, cfg *config.Config) {
				for id := range int64(9) {
					deleteRowByEquality(t, cfg, id)
				}
			},
			deleted:   seq(0, 9),
			rewritten: true,
		},
		{
			name:    "equality deletes of a tenth of the keys",
			appends: [][]int64{seq(0, 20)},
			del: func(t *testing.T, cfg *config.Config) {
				for _, id := range []int64{3, 7, 11} {
					deleteRowByEquality(t, cfg, id)
				}
			},
			deleted: []int64{3, 7, 11},
		},
		{
			name:      "a tenth of the rows deleted",
			appends:   [][]int64{seq(0, 20)},
			del:       func(t *testing.T, cfg *config.Config) { deleteIDs(t, cfg, 3, 7, 11) },
			deleted:   []int64{3, 7, 11},
			rewritten: true,
		},
		{
			name:      "every row deleted",
			appends:   [][]int64{seq(0, 6), seq(6, 12)},
			del:       func(t *testing.T, cfg *config.Config) { deleteIDs(t, cfg, seq(0, 12)...) },
			deleted:   seq(0, 12),
			rewritten: true,
		},
		{
			name:    "few deletes",
			appends: [][]int64{seq(0, 40)},
			del:     func(t *testing.T, cfg *config.Config) { deleteIDs(t, cfg, 5) },
			deleted: []int64{5},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := wideConfig(dir, sqliteCatalog(t, dir), map[string]string{table.WriteDeleteModeKey: table.WriteModeMergeOnRead})
			cfg.Maintenance.CompactionFanIn = cmp.Or(tc.fanIn, 8)
			var smallest int64 = 1 << 62
			for _, a := range tc.appends {
				smallest = min(smallest, appendNotes(t, cfg, a))
			}
			tc.del(t, cfg)
			for _, a := range tc.after {
				smallest = min(smallest, appendNotes(t, cfg, a))
			}
			// Every file at least half the target: the fan-in and the
			// idle merge plan nothing.
			setTarget(t, cfg, smallest)
			var want []int64
			for _, a := range append(slices.Clone(tc.appends), tc.after...) {
				for _, id := range a {
					if !slices.Contains(tc.deleted, id) {
						want = append(want, id)
					}
				}
			}
			slices.Sort(want)
			before := deleteFileEntries(t, loadTable(t, cfg))

			m, _ := newMaintainer(t, cfg)
			if tc.idle {
				m.now = func() time.Time { return time.Now().Add(time.Hour) }
			}
			res := passAndCommit(t, m, cfg)

			tbl := loadTable(t, cfg)
			if got := ids(t, tbl); !slices.Equal(got, want) {
				t.Errorf("ids after the pass %v, want %v", got, want)
			}
			after := deleteFileEntries(t, tbl)
			switch {
			case tc.rewritten && (res.Applied == 0 || after != 0):
				t.Errorf("hand-off %+v; %d delete files left of %d, want the partition rewritten and none left", res, after, before)
			case !tc.rewritten && (res.Applied != 0 || after != before):
				t.Errorf("hand-off %+v; %d delete files left of %d, want the partition left as it was", res, after, before)
			}
			var rows int64
			for _, f := range liveFiles(t, tbl) {
				rows += f.Count()
			}
			if tc.rewritten && rows != int64(len(want)) {
				t.Errorf("the data files hold %d rows, want the %d live ones only", rows, len(want))
			}
			// A file without rows, which no scan plans and so no
			// compaction would take, is not left in the manifests.
			files, err := tables.ReadTableFiles(context.Background(), tbl)
			if err != nil {
				t.Fatal(err)
			}
			for p, e := range files.Data {
				if e.File.Count() == 0 {
					t.Errorf("data file %s without rows left in the table", p)
				}
			}
		})
	}
}

// seq is the ids from up to to, to excluded.
func seq(from, to int64) []int64 {
	var out []int64
	for id := from; id < to; id++ {
		out = append(out, id)
	}
	return out
}

// A partition that received nothing for maintenance.idleCompactionMinutes
// is not idle for its delete debt while the table's metadata changed
// within that time: a committer busy with a long hand-off appends nothing
// for a while, and taking that for idleness made every pass rewrite every
// partition whole, which made the next hand-off longer still. Once the
// table is quiet too, the partition is rewritten.
func TestDeleteDebtIdleWaitsForAQuietTable(t *testing.T) {
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), map[string]string{table.WriteDeleteModeKey: table.WriteModeMergeOnRead})
	cfg.Maintenance.CompactionFanIn = 8
	cfg.Maintenance.IdleCompactionMinutes = 0.01 // 600 ms
	smallest := min(appendNotes(t, cfg, seq(0, 12)), appendNotes(t, cfg, seq(12, 24)))
	setTarget(t, cfg, smallest)
	time.Sleep(700 * time.Millisecond) // the data older than the idle time
	for id := range int64(9) {
		deleteRowByEquality(t, cfg, id*2)
	}
	justAfter := time.Now()
	before := deleteFileEntries(t, loadTable(t, cfg))

	m, _ := newMaintainer(t, cfg)
	m.now = func() time.Time { return justAfter }
	if res := passAndCommit(t, m, cfg); res.Applied != 0 {
		t.Fatalf("hand-off %+v right after the deletes' commits: the partition was taken for idle", res)
	}
	if after := deleteFileEntries(t, loadTable(t, cfg)); after != before {
		t.Fatalf("%d delete files left of %d, want the partition left as it was", after, before)
	}

	m.now = func() time.Time { return justAfter.Add(time.Second) }
	if res := passAndCommit(t, m, cfg); res.Applied == 0 {
		t.Fatalf("hand-off %+v once the table was quiet, want the partition rewritten", res)
	}
	if after := deleteFileEntries(t, loadTable(t, cfg)); after != 0 {
		t.Errorf("%d delete files left, want none", after)
	}
}
