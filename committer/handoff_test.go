package committer

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// compactedHandoff writes, as the maintainer does, one file holding the
// rows of segs into the table's data directory and the hand-off note that
// asks for their replace, and returns the note.
func compactedHandoff(t *testing.T, e *env, wal string, tbl *table.Table, segs ...seg) walfile.Handoff {
	t.Helper()
	var rows []map[string]any
	spec := tbl.Spec()
	g := walfile.HandoffGroup{SpecID: spec.ID(), SchemaID: tbl.Schema().ID}
	live := map[string]bool{}
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		live[task.File.FilePath()] = true
	}
	for _, s := range segs {
		rows = append(rows, s.rows...)
		loc := strings.TrimSuffix(tbl.Location(), "/") + "/data/" + s.name.UUID.String() + ".parquet"
		if !live[loc] {
			t.Fatalf("segment %s is no live data file of the table", loc)
		}
		g.Replaced = append(g.Replaced, loc)
		fi, err := os.Stat(strings.TrimPrefix(loc, "file://"))
		if err != nil {
			t.Fatal(err)
		}
		g.ReplacedBytes += fi.Size()
	}
	g.File = strings.TrimSuffix(tbl.Location(), "/") + "/data/compacted-" + uuid.NewString() + ".parquet"
	path := strings.TrimPrefix(g.File, "file://")
	writeParquet(t, path, tbl, rows)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	g.Size, g.Rows = fi.Size(), int64(len(rows))
	if g.Partition, err = tables.EncodePartition(partitionValues(t, tbl, rows[0])); err != nil {
		t.Fatal(err)
	}
	h := walfile.Handoff{ID: uuid.New(), Dataset: "clicks", TableUUID: tbl.Metadata().TableUUID(), Written: time.Now(), Groups: []walfile.HandoffGroup{g}}
	if err := walfile.WriteHandoff(wal, h); err != nil {
		t.Fatal(err)
	}
	return h
}

// twoCommittedSegments is a table holding two segments of one partition,
// appended by a committer pass: what a compaction merges.
func twoCommittedSegments(t *testing.T) (e *env, wal string, a, b seg) {
	t.Helper()
	e = newEnv(t, sqliteCatalog(t.TempDir()))
	wal = e.walDir("wal")
	a = e.writeSegment(wal, "clicks", 0, 0, clickRows(1, 5, 1), true)
	b = e.writeSegment(wal, "clicks", 1, 0, clickRows(10, 7, 1), true)
	e.commitOffset("clicks", 0, 5)
	e.commitOffset("clicks", 1, 7)
	runPass(t, newCommitter(t, e.config(wal)))
	return e, wal, a, b
}

// The maintainer's compaction goes in as a replace right after the
// committer's own append, in the same pass: the append first (ingest is
// not held up), then the replace, which changes no row; the note is
// deleted. A crash after the replace and before the note's deletion
// (committer.after-replace) leaves the note: the next pass finds it
// applied and commits nothing.
func TestCommitterAppliesTheMaintainersHandoffAfterItsAppend(t *testing.T) {
	e, wal, a, b := twoCommittedSegments(t)

	h := compactedHandoff(t, e, wal, e.table("clicks"), a, b)
	note := filepath.Join(wal, walfile.HandoffName(h.ID))
	saved, err := os.ReadFile(note)
	if err != nil {
		t.Fatal(err)
	}
	c := e.writeSegment(wal, "clicks", 0, 5, clickRows(20, 3, 2), true)
	e.commitOffset("clicks", 0, 8)
	cm := newCommitter(t, e.config(wal))
	runPass(t, cm)

	clicks := e.table("clicks")
	snaps := snapshots(clicks)
	if n := len(snaps); n < 3 {
		t.Fatalf("%d snapshots, want the two appends and the replace", n)
	}
	last, prev := snaps[len(snaps)-1], snaps[len(snaps)-2]
	if last.Summary.Operation != table.OpReplace || last.Summary.Properties[tables.SummaryHandoff] != h.ID.String() {
		t.Errorf("last snapshot %s %v, want the replace of hand-off %s", last.Summary.Operation, last.Summary.Properties, h.ID)
	}
	if prev.Summary.Operation != table.OpAppend || !strings.Contains(prev.Summary.Properties[tables.SummaryFiles], c.name.UUID.String()) {
		t.Errorf("the snapshot before the replace is %s %v, want the append of %s", prev.Summary.Operation, prev.Summary.Properties, c.name.UUID)
	}
	if got, want := scanColumn(t, clicks, "id"), wantColumn("id", a, b, c); !slices.Equal(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}
	files := map[string]bool{}
	tasks, err := clicks.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		files[task.File.FilePath()] = true
	}
	if !files[h.Groups[0].File] || files[h.Groups[0].Replaced[0]] || files[h.Groups[0].Replaced[1]] {
		t.Errorf("live files %v, want the compacted file in place of the two it replaced", files)
	}
	if _, err := os.Stat(note); !os.IsNotExist(err) {
		t.Errorf("the applied note is still there (%v)", err)
	}
	if got := testutil.ToFloat64(cm.metrics.handoffs.WithLabelValues("clicks", handoffApplied)); got != 1 {
		t.Errorf("compactions applied %v, want 1", got)
	}

	// The crash between the replace and the note's deletion.
	if err := os.WriteFile(note, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	cm = newCommitter(t, e.config(wal))
	runPass(t, cm)
	if n := len(snapshots(e.table("clicks"))); n != len(snaps) {
		t.Errorf("%d snapshots after the restart, want %d: the replace was applied again", n, len(snaps))
	}
	if _, err := os.Stat(note); !os.IsNotExist(err) {
		t.Errorf("the note of an applied replace is still there after the restart (%v)", err)
	}
	if got, want := scanColumn(t, e.table("clicks"), "id"), wantColumn("id", a, b, c); !slices.Equal(got, want) {
		t.Errorf("ids after the restart %v, want %v", got, want)
	}
}

// A dataset with nothing to append still gets its compactions in.
func TestCommitterAppliesAHandoffWithoutAnAppend(t *testing.T) {
	e, wal, a, b := twoCommittedSegments(t)
	h := compactedHandoff(t, e, wal, e.table("clicks"), a, b)
	cm := newCommitter(t, e.config(wal))
	connect(t, cm)
	cm.passDue(context.Background(), make([]time.Time, len(cm.cfg.Datasets)), time.Now())
	last := snapshots(e.table("clicks"))
	if s := last[len(last)-1]; s.Summary.Properties[tables.SummaryHandoff] != h.ID.String() {
		t.Errorf("last snapshot %v, want the replace of hand-off %s", s.Summary.Properties, h.ID)
	}
	if got, want := scanColumn(t, e.table("clicks"), "id"), wantColumn("id", a, b); !slices.Equal(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}
}
