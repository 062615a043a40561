package tables

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"
)

// SnapshotClockSkew is how far the clock of another writer of the table may
// be ahead of this host's without making the in-table check inexact: a
// snapshot's timestamp comes from the clock of the process that committed it.
const SnapshotClockSkew = 10 * time.Minute

// manifestReaders is how many manifests the exact scan reads at once.
const manifestReaders = 8

// Segment names a local WAL segment for SegmentsInTable.
type Segment struct {
	// UUID is the segment's UUID, which is also its object's name.
	UUID uuid.UUID
	// Written is when the segment was last written: the ready file's
	// modification time. The append that adds it to the table comes after.
	Written time.Time
}

// inTableStats tells what one in-table check did; tests and benchmarks
// read it.
type inTableStats struct {
	// Exact is the number of segments that needed the manifest scan.
	Exact int
	// Manifests is the number of manifests the scan read.
	Manifests int
}

// SegmentsInTable reports which of segs a snapshot that tbl still keeps
// refers to: the definition of "in the table" of the crash-recovery rules.
//
// The common path reads the table metadata only (FilesInTable: the segment
// UUIDs that the committer records in each snapshot summary, and in its
// WAL directory's ledger property, LedgerPrefix, which neither expiry nor
// compaction removes). Its one gap, for segments the ledger does not
// hold (appended by a version without it, or long deleted locally), is
// a snapshot expired by table maintenance: the files it added are still in
// the table, but their record is gone. The gap can only matter for a
// segment written before the oldest snapshot of the current snapshot's
// ancestry that the table still keeps, when that ancestry is cut (its
// oldest kept snapshot has a parent that was expired): any append of a
// segment comes after the segment was written, and expiry keeps a
// contiguous run of the newest ancestors, so an append made after that
// cut is still kept and recorded. Only for such segments, with
// SnapshotClockSkew of margin, does SegmentsInTable fall back to the exact
// method: it reads the manifests of every kept snapshot (each distinct
// manifest once) and looks for the segment's object, <uuid>.parquet, among
// their live data files. A segment found neither way is not in the table.
//
// An error means the exact scan could not finish: nothing can be said
// about the segments it was for, and the caller must not act on them.
func SegmentsInTable(ctx context.Context, tbl *table.Table, segs []Segment) (map[uuid.UUID]bool, error) {
	in, _, err := segmentsInTable(ctx, tbl, "", segs)
	return in, err
}

// LocalSegmentsInTable is SegmentsInTable for segments whose ready files
// are in the WAL directory walID now, as the committer asks before each
// append. Once the table holds that directory's ledger property, the
// ledger answers for them exactly, with no manifest scan: every append
// from the directory records its segments there in the same commit, and
// keeps them while their ready files exist (LedgerProperties). Without
// the fallback, a table whose expiry keeps less history than
// SnapshotClockSkew (a short commit interval, a snapshot cap) made every
// check before an append read every kept manifest.
//
// The segments a version without the ledger appended are still found:
// until the directory's first append with a ledger, the table has no such
// property and the exact method runs, and that first append comes after
// the check that deletes every local segment the table already holds.
func LocalSegmentsInTable(ctx context.Context, tbl *table.Table, walID string, segs []Segment) (map[uuid.UUID]bool, error) {
	in, _, err := segmentsInTable(ctx, tbl, walID, segs)
	return in, err
}

func segmentsInTable(ctx context.Context, tbl *table.Table, walID string, segs []Segment) (map[uuid.UUID]bool, inTableStats, error) {
	var stats inTableStats
	meta := tbl.Metadata()
	_, ledgerExact := meta.Properties()[LedgerKey(walID)]
	ledgerExact = ledgerExact && walID != ""
	snaps := meta.Snapshots() // a deep copy: taken once
	recorded := recordedIn(snaps, segs)
	for id := range ledgered(meta, segText(segs)) {
		recorded[id] = true
	}
	out := map[uuid.UUID]bool{}
	cut, truncated := historyCut(meta.CurrentSnapshot(), snaps)
	want := map[string]uuid.UUID{}
	for _, s := range segs {
		switch {
		case recorded[s.UUID]:
			out[s.UUID] = true
		case truncated && !ledgerExact && !s.Written.After(cut.Add(SnapshotClockSkew)):
			want[s.UUID.String()+".parquet"] = s.UUID
		}
	}
	stats.Exact = len(want)
	if len(want) == 0 {
		return out, stats, nil
	}
	found, n, err := scanKept(ctx, tbl, want)
	stats.Manifests = n
	if err != nil {
		return nil, stats, fmt.Errorf("exact in-table check of %d segments in %s: %w", len(want), tbl.Identifier(), err)
	}
	for id := range found {
		out[id] = true
	}
	return out, stats, nil
}

// HistoryCut returns the timestamp of the oldest kept snapshot in the
// current snapshot's ancestry, and whether the ancestry is cut there, that
// is whether that snapshot's parent has been expired. A table whose whole
// history is kept, or that has no snapshot, is not cut.
func HistoryCut(meta table.Metadata) (time.Time, bool) {
	return historyCut(meta.CurrentSnapshot(), meta.Snapshots())
}

func historyCut(cur *table.Snapshot, snaps []table.Snapshot) (time.Time, bool) {
	if cur == nil {
		return time.Time{}, false
	}
	byID := make(map[int64]*table.Snapshot, len(snaps))
	for i := range snaps {
		byID[snaps[i].SnapshotID] = &snaps[i]
	}
	s := cur
	for range len(snaps) + 1 { // bounds the walk should metadata hold a cycle
		if s.ParentSnapshotID == nil {
			return time.Time{}, false
		}
		p := byID[*s.ParentSnapshotID]
		if p == nil {
			return time.UnixMilli(s.TimestampMs), true
		}
		s = p
	}
	return time.UnixMilli(s.TimestampMs), true
}

// segText maps the text form of each segment's UUID to the UUID.
func segText(segs []Segment) map[string]uuid.UUID {
	want := make(map[string]uuid.UUID, len(segs))
	for _, s := range segs {
		want[s.UUID.String()] = s.UUID
	}
	return want
}

// recordedIn returns which of segs the summaries of snaps record, the way
// FilesInTable does, comparing text instead of parsing every UUID.
func recordedIn(snaps []table.Snapshot, segs []Segment) map[uuid.UUID]bool {
	want := segText(segs)
	in := map[uuid.UUID]bool{}
	for _, s := range snaps {
		if s.Summary == nil {
			continue
		}
		for _, f := range strings.Fields(s.Summary.Properties[SummaryFiles]) {
			if id, ok := want[f]; ok {
				in[id] = true
			}
		}
	}
	return in
}

// scanKept reads every distinct data manifest of the kept snapshots and
// returns which of the wanted object base names appear as live data files,
// and how many manifests it read. It stops early once all are found.
func scanKept(ctx context.Context, tbl *table.Table, want map[string]uuid.UUID) (map[uuid.UUID]bool, int, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("table file IO: %w", err)
	}
	var (
		mu    sync.Mutex
		found = map[uuid.UUID]bool{}
		read  int
	)
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(found) == len(want)
	}
	seen := map[string]bool{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(manifestReaders)
	// Newest snapshots first: a file is most likely in the current one.
	snaps := tbl.Metadata().Snapshots()
	for i := len(snaps) - 1; i >= 0 && !done(); i-- {
		if err := gctx.Err(); err != nil {
			break
		}
		manifests, err := snaps[i].Manifests(fs)
		if err != nil {
			g.Wait()
			return nil, read, fmt.Errorf("manifest list of snapshot %d: %w", snaps[i].SnapshotID, err)
		}
		for _, m := range manifests {
			if m.ManifestContent() != iceberg.ManifestContentData || seen[m.FilePath()] {
				continue
			}
			seen[m.FilePath()] = true
			g.Go(func() error {
				if done() {
					return nil
				}
				entries, err := m.FetchEntries(fs, true)
				if err != nil {
					return fmt.Errorf("manifest %s: %w", m.FilePath(), err)
				}
				mu.Lock()
				defer mu.Unlock()
				read++
				for _, e := range entries {
					if id, ok := want[path.Base(e.DataFile().FilePath())]; ok {
						found[id] = true
					}
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, read, err
	}
	if err := ctx.Err(); err != nil && !done() {
		return nil, read, err
	}
	return found, read, nil
}
