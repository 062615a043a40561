package maintainer

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

const (
	// DefaultTargetFileSize is the size compaction packs files toward when
	// the table sets no write.target-file-size-bytes: the size the tables
	// the ingestor creates state (tables.TargetFileSizeBytes).
	DefaultTargetFileSize = tables.TargetFileSizeBytes
	// maxCompactGroups bounds the groups one pass rewrites, so that a
	// table catching up after an outage is worked down over several
	// short passes.
	maxCompactGroups = 16
)

// compactionPlan is what one pass's compaction step staged.
type compactionPlan struct {
	groups int
	files  int   // input files
	bytes  int64 // input bytes, which the step reads and writes again
	small  int   // files under half the target before the step
	// handoffs is the number of the dataset's hand-off notes that were
	// still waiting for the committer, so that no group was planned.
	handoffs int
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
// group's file (compactGroup), then leaves their replace to the committer
// in a hand-off note (walfile.Handoff) instead of committing it: the
// committer, this pod's one writer of the table's metadata, applies it
// right after its next append (tables.ApplyHandoff), so the replace never
// races an append of its own pod, and an append never waits for it. The
// slow part, reading and writing data, is done here, once.
//
// While a note of the dataset waits for the committer, no new group is
// planned: the files it replaces are still live, and would be planned
// again.
//
// Crash ordering: dying while the files are written, or after and before
// the note, leaves objects no metadata refers to, which the orphan
// cleanup deletes once they are older than its margin; dying after the
// note (failpoint maintainer.after-compact) leaves it to the committer.
func (m *Maintainer) compact(ctx context.Context, log *slog.Logger, cat catalog.Catalog, tbl *table.Table, d string) (compactionPlan, error) {
	var p compactionPlan
	waiting, _, err := walfile.ListHandoffs(m.dir, d)
	if err != nil {
		return p, err
	}
	if len(waiting) > 0 {
		p.handoffs = len(waiting)
		log.Debug("compaction waits for the committer to apply its hand-off", "handoffs", len(waiting))
		return p, nil
	}
	// The table as it is now, not as the pass loaded it: the committer
	// may have applied the last note since, and planning on the older
	// table would compact the files it replaced again, a group the
	// committer can only drop. A note is deleted after its replace is
	// committed, so a table loaded after the check holds every note
	// found gone.
	tbl, err = cat.LoadTable(ctx, tbl.Identifier())
	if err != nil {
		return p, fmt.Errorf("reload table: %w", err)
	}
	groups, p, err := m.planCompaction(ctx, tbl)
	if err != nil || len(groups) == 0 {
		return p, err
	}
	var done []compacted
	// cleanup deletes the written files of a step that gives up before
	// its note. They are orphans, which the orphan cleanup would also
	// find, later.
	cleanup := func(cs []compacted) {
		fs, err := tbl.FS(context.WithoutCancel(ctx))
		if err != nil {
			return
		}
		for _, c := range cs {
			if err := fs.Remove(c.added.FilePath()); err != nil {
				log.Warn("delete an unused compacted file; the orphan cleanup deletes it later", "file", c.added.FilePath(), "err", err)
				continue // its sidecars stay with it
			}
			for _, s := range c.sidecars {
				_ = fs.Remove(s) // else the orphan cleanup's, its data file gone
			}
		}
	}
	start := time.Now()
	for _, g := range groups {
		// A pass on a busy machine may not write every group: once half
		// the pass's time is gone, the groups written so far are handed
		// off and the rest wait for the next pass.
		if dl, ok := ctx.Deadline(); ok && len(done) > 0 && time.Since(start) > time.Until(dl) {
			log.Info("compaction step out of time; the next pass writes the remaining groups", "written", len(done), "groups", len(groups))
			break
		}
		c, err := compactGroup(ctx, tbl, g, m.bloomColumns(d))
		if err != nil {
			cleanup(done)
			return p, fmt.Errorf("compact %d files of partition %s: %w", len(g.Tasks), g.PartitionKey, err)
		}
		done = append(done, c)
	}
	h := walfile.Handoff{ID: uuid.New(), Dataset: d, TableUUID: tbl.Metadata().TableUUID(), Written: time.Now().UTC()}
	for _, c := range done {
		part, err := tables.EncodePartition(c.added.Partition())
		if err != nil {
			cleanup(done)
			return p, err
		}
		g := walfile.HandoffGroup{
			File: c.added.FilePath(), Size: c.added.FileSizeBytes(), Rows: c.added.Count(), ReplacedBytes: c.bytes,
			SpecID: int(c.added.SpecID()), SchemaID: c.schemaID, SortOrderID: c.sortOrderID, Partition: part,
		}
		for _, f := range c.old {
			g.Replaced = append(g.Replaced, f.FilePath())
		}
		h.Groups = append(h.Groups, g)
	}
	if err := walfile.WriteHandoff(m.dir, h); err != nil {
		cleanup(done)
		return p, err
	}
	for _, c := range done {
		p.groups++
		p.files += len(c.old)
		p.bytes += c.bytes
	}
	return p, nil
}
