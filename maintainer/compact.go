package maintainer

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icewal/ingestor/shared/tables"
)

const (
	// DefaultTargetFileSize is the size compaction packs files toward when
	// the table sets no write.target-file-size-bytes (iceberg-go's own
	// default, 512 MiB, takes a streaming table days to reach).
	DefaultTargetFileSize = 128 << 20
	// maxCompactGroups bounds the groups one pass rewrites, so that a
	// table catching up after an outage is worked down over several
	// short passes.
	maxCompactGroups = 16
	// maxCompactAttempts bounds the commits of a compaction in one pass.
	// More than the other steps: its retry is one reload and one commit
	// of files already written, and a committer at a short interval
	// appends between most reloads and commits.
	maxCompactAttempts = 12
)

// compaction is what one pass's compaction step staged.
type compactionPlan struct {
	groups int
	files  int   // input files
	bytes  int64 // input bytes, which the step reads and writes again
	small  int   // files under half the target before the step
}

// targetFileSize is the table's write.target-file-size-bytes, else
// DefaultTargetFileSize.
func targetFileSize(tbl *table.Table) int64 {
	return tbl.Properties().GetInt64(table.WriteTargetFileSizeBytesKey, DefaultTargetFileSize)
}

// level is an LSM level of a small file: 0 for files between half the
// target and that over fanIn (maintenance.compactionFanIn), one more for
// each further factor of fanIn below. Files merge only with files of their own level, so a byte is
// rewritten about once per level (log8 of half the target over the WAL
// segment size: 4 for 15 KB segments and a 128 MiB target) instead of at
// every merge, as a plain bin-pack of everything small would.
func level(size, target int64, fanIn int) int {
	half := float64(target) / 2
	if size <= 0 {
		size = 1
	}
	return int(math.Floor(math.Log(half/float64(size)) / math.Log(float64(fanIn))))
}

// planCompaction plans the small-file compaction of tbl, per partition
// and level: a level with fanIn files or more in a partition is bin-packed
// toward the target size, each bin one group, one output file. It returns
// no group while no partition has fanIn files of one level.
func (m *Maintainer) planCompaction(ctx context.Context, tbl *table.Table) ([]table.CompactionTaskGroup, compactionPlan, error) {
	var p compactionPlan
	fanIn := m.cfg.Maintenance.CompactionFanIn
	if fanIn < 2 || tbl.CurrentSnapshot() == nil {
		return nil, p, nil // compaction off, or nothing to compact
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, p, fmt.Errorf("plan files: %w", err)
	}
	target := targetFileSize(tbl)
	byLevel := map[int][]table.FileScanTask{}
	for _, t := range tasks {
		size := t.File.FileSizeBytes()
		if size >= target/2 || len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) > 0 {
			continue // big enough, or with deletes: not this step's work
		}
		p.small++
		l := level(size, target, fanIn)
		byLevel[l] = append(byLevel[l], t)
	}
	cfg := compaction.Config{
		TargetFileSizeBytes: target,
		MinFileSizeBytes:    target / 2,
		MaxFileSizeBytes:    target * 2,
		MinInputFiles:       uint(fanIn),
		DeleteFileThreshold: math.MaxInt32,
		PackingLookback:     compaction.DefaultPackingLookback,
	}
	var groups []table.CompactionTaskGroup
	for l := 0; len(groups) < maxCompactGroups && l <= 64; l++ {
		if len(byLevel[l]) < fanIn {
			continue
		}
		plan, err := cfg.PlanCompaction(byLevel[l])
		if err != nil {
			return nil, p, fmt.Errorf("plan compaction: %w", err)
		}
		for _, g := range plan.Groups {
			if len(groups) == maxCompactGroups {
				break
			}
			groups = append(groups, table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes})
		}
	}
	return groups, p, nil
}

// compact is the compaction step: it plans the groups, writes each
// group's file (compactGroup), then commits one replace of them all. The
// slow part, reading and writing data, happens before the commit and is
// done once: when the committer appended in between, the commit fails its
// requirement, and the same files are committed again on the reloaded
// table, minus the groups whose inputs are no longer live (another
// maintainer compacted them). An append only adds files, so a conflict
// with one never drops a group. The commit itself is metadata only, so
// the window in which it can make an append retry is short.
//
// It returns the table after the commit, or tbl when nothing was
// committed.
func (m *Maintainer) compact(ctx context.Context, log *slog.Logger, cat catalog.Catalog, tbl *table.Table) (*table.Table, compactionPlan, error) {
	groups, p, err := m.planCompaction(ctx, tbl)
	if err != nil || len(groups) == 0 {
		return tbl, p, err
	}
	base := tbl.CurrentSnapshot().SnapshotID
	var done []compacted
	// cleanup deletes the written files of the groups not committed.
	// They are orphans, which the orphan cleanup would also find, later.
	cleanup := func(cs []compacted) {
		fs, err := tbl.FS(context.WithoutCancel(ctx))
		if err != nil {
			return
		}
		for _, c := range cs {
			if err := fs.Remove(c.added.FilePath()); err != nil {
				log.Warn("delete an uncommitted compacted file; the orphan cleanup deletes it later", "file", c.added.FilePath(), "err", err)
			}
		}
	}
	start := time.Now()
	for _, g := range groups {
		// A pass on a busy machine may not write every group: once half
		// the pass's time is gone, the groups written so far are
		// committed and the rest wait for the next pass.
		if dl, ok := ctx.Deadline(); ok && len(done) > 0 && time.Since(start) > time.Until(dl) {
			log.Info("compaction step out of time; the next pass writes the remaining groups", "written", len(done), "groups", len(groups))
			break
		}
		c, err := compactGroup(ctx, tbl, g)
		if err != nil {
			cleanup(done)
			return tbl, p, fmt.Errorf("compact %d files of partition %s: %w", len(g.Tasks), g.PartitionKey, err)
		}
		done = append(done, c)
	}
	for attempt := 1; ; attempt++ {
		var gone []compacted
		// Appends since the plan leave every input live: the retry needs
		// no new file listing, only the reloaded table, so it is quick
		// enough to land between two appends of a busy committer.
		if attempt > 1 && !onlyAppendsSince(tbl, base) {
			done, gone, err = stillLive(ctx, tbl, done)
			if err != nil {
				cleanup(append(done, gone...))
				return tbl, p, err
			}
			cleanup(gone)
			if len(done) == 0 {
				return tbl, p, nil
			}
		}
		tx := tbl.NewTransaction()
		rw := tx.NewRewrite(iceberg.Properties{tables.SummaryUpkeep: tables.UpkeepCompaction})
		for _, c := range done {
			rw.ApplyResult(table.CompactionGroupResult{OldDataFiles: c.old, NewDataFiles: []iceberg.DataFile{c.added}, BytesBefore: c.bytes})
		}
		if err := rw.Commit(ctx); err != nil {
			cleanup(done)
			return tbl, p, fmt.Errorf("stage the replace of %d groups: %w", len(done), err)
		}
		if m.beforeCommit != nil {
			m.beforeCommit(attempt)
		}
		next, err := tx.Commit(ctx)
		if err == nil {
			for _, c := range done {
				p.groups++
				p.files += len(c.old)
				p.bytes += c.bytes
			}
			return next, p, nil
		}
		if !isConflict(err) {
			// The outcome is unknown: the replace may have landed, and
			// its files with it. Nothing is deleted.
			return tbl, p, fmt.Errorf("commit the replace (attempt %d): %w", attempt, err)
		}
		if attempt >= maxCompactAttempts || ctx.Err() != nil {
			cleanup(done)
			return tbl, p, fmt.Errorf("commit the replace (attempt %d): %w", attempt, err)
		}
		if tbl, err = cat.LoadTable(ctx, tbl.Identifier()); err != nil {
			cleanup(done)
			return tbl, p, fmt.Errorf("reload table after a conflict: %w", err)
		}
	}
}

// onlyAppendsSince reports whether every snapshot of tbl's current
// lineage after base is an append: then the data files live at base
// still are.
func onlyAppendsSince(tbl *table.Table, base int64) bool {
	meta := tbl.Metadata()
	for s := tbl.CurrentSnapshot(); s != nil && s.SnapshotID != base; {
		if s.Summary == nil || s.Summary.Operation != table.OpAppend || s.ParentSnapshotID == nil {
			return false
		}
		if s = meta.SnapshotByID(*s.ParentSnapshotID); s == nil {
			return false // expired in between: list the files
		}
	}
	return true
}

// stillLive splits cs into the groups whose input files are all live data
// files of tbl's current snapshot and those of which some are not.
func stillLive(ctx context.Context, tbl *table.Table, cs []compacted) (live, gone []compacted, err error) {
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("plan files after a conflict: %w", err)
	}
	paths := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		paths[t.File.FilePath()] = true
	}
	for _, c := range cs {
		ok := true
		for _, f := range c.old {
			ok = ok && paths[f.FilePath()]
		}
		if ok {
			live = append(live, c)
		} else {
			gone = append(gone, c)
		}
	}
	return live, gone, nil
}
