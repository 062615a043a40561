package maintainer

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
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
	// deleted is the rows the groups' deletes removed, which their
	// compacted files no longer hold.
	deleted int64
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

// compactionGroup is one group of files that compaction merges into one.
type compactionGroup struct {
	table.CompactionTaskGroup
	// idle marks an idle merge (planIdle), whose file is named
	// IdleCompactedPrefix.
	idle bool
}

// planCompaction plans the compaction of tbl: first the partitions whose
// delete files pay for a rewrite whole (planDeleteHeavy), then the small
// files per partition
// and level: a level with fanIn files or more in a partition is bin-packed
// toward the target size, each bin one group, one output file. A
// partition that has received no file for maintenance.idleCompactionMinutes
// and has no such group gets an idle merge instead (planIdle). It returns
// no group while no partition has fanIn files of one level or is idle.
func (m *Maintainer) planCompaction(ctx context.Context, tbl *table.Table, files *tables.TableFiles) ([]compactionGroup, compactionPlan, error) {
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
	// First the partitions whose deletes pay for a rewrite whole
	// (deletedebt.go); their files are in no other group.
	heavy, err := heavyPartitions(files, fanIn, m.idleDebt(tbl))
	if err != nil {
		return nil, p, err
	}
	groups, err := planDeleteHeavy(tasks, heavy, target, maxCompactGroups)
	if err != nil {
		return nil, p, err
	}
	inWhole := map[string]bool{}
	for _, g := range groups {
		for _, t := range g.Tasks {
			inWhole[t.File.FilePath()] = true
		}
	}
	byLevel := map[int][]table.FileScanTask{}
	for _, t := range tasks {
		size := t.File.FileSizeBytes()
		if size >= target/2 {
			continue // big enough
		}
		p.small++
		if inWhole[t.File.FilePath()] {
			continue
		}
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
			groups = append(groups, compactionGroup{CompactionTaskGroup: table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes}})
		}
	}
	idle, err := m.planIdle(tbl, tasks, groups, target, fanIn)
	if err != nil {
		return nil, p, err
	}
	for _, g := range idle {
		if len(groups) == maxCompactGroups {
			break
		}
		groups = append(groups, g)
	}
	return groups, p, nil
}

// planIdle plans the idle merges of tbl: one group for each partition
// whose newest live data file (an append's, or a compaction's output) is
// older than maintenance.idleCompactionMinutes and that holds two or more
// small files without deletes, none of them in a group of planned. The
// fan-in leaves up to fanIn-1 small files per level in a partition that
// stops receiving (yesterday's day, a quiet tenant) for ever; this merges
// them into one.
//
// Each byte has at most one idle merge on top of its fan-in merges: the
// output is named IdleCompactedPrefix, and such a file goes into another
// idle merge only where the merge lifts it at least one level, which a
// fan-in merge would do too. Without that rule a quiet tenant's idle
// output would be rewritten at every idle spell, each time with a file or
// two more. The smallest files go first, up to the target size, so the
// merge is one file.
func (m *Maintainer) planIdle(tbl *table.Table, tasks []table.FileScanTask, planned []compactionGroup, target int64, fanIn int) ([]compactionGroup, error) {
	idleAfter := m.cfg.IdleCompaction()
	if idleAfter <= 0 {
		return nil, nil
	}
	inGroup := map[string]bool{}
	for _, g := range planned {
		for _, t := range g.Tasks {
			inGroup[t.File.FilePath()] = true
		}
	}
	type partition struct {
		newest time.Time
		busy   bool // some of its files are in a fan-in group
		small  []table.FileScanTask
	}
	now := m.now()
	addedAt := addTimes(tbl, now)
	parts := map[string]*partition{}
	var keys []string
	for _, t := range tasks {
		key, err := tables.PartitionOf(t.File)
		if err != nil {
			return nil, err
		}
		p := parts[key]
		if p == nil {
			p = &partition{}
			parts[key] = p
			keys = append(keys, key)
		}
		p.newest = maxTime(p.newest, addedAt(t))
		switch {
		case inGroup[t.File.FilePath()]:
			p.busy = true
		case t.File.FileSizeBytes() < target/2:
			p.small = append(p.small, t)
		}
	}
	var groups []compactionGroup
	for _, key := range keys {
		p := parts[key]
		if p.busy || len(p.small) < 2 || now.Sub(p.newest) < idleAfter {
			continue
		}
		if g := idleGroup(p.small, target, fanIn); len(g) >= 2 {
			var size int64
			for _, t := range g {
				size += t.File.FileSizeBytes()
			}
			groups = append(groups, compactionGroup{
				CompactionTaskGroup: table.CompactionTaskGroup{PartitionKey: key, Tasks: g, TotalSizeBytes: size},
				idle:                true,
			})
		}
	}
	return groups, nil
}

// idleGroup picks the files of one idle merge from a partition's small
// files: the smallest first while their sum stays within the target,
// then, until nothing changes, without the outputs of earlier idle merges
// that the merge would not lift a level.
func idleGroup(small []table.FileScanTask, target int64, fanIn int) []table.FileScanTask {
	small = slices.Clone(small)
	slices.SortFunc(small, func(a, b table.FileScanTask) int {
		return cmp.Compare(a.File.FileSizeBytes(), b.File.FileSizeBytes())
	})
	var g []table.FileScanTask
	var sum int64
	for _, t := range small {
		if len(g) >= 2 && sum+t.File.FileSizeBytes() > target {
			break
		}
		g = append(g, t)
		sum += t.File.FileSizeBytes()
	}
	for {
		out := level(sum, target, fanIn)
		kept := g[:0:0]
		sum = 0
		for _, t := range g {
			if isIdleOutput(t.File) && level(t.File.FileSizeBytes(), target, fanIn) <= out {
				continue
			}
			kept = append(kept, t)
			sum += t.File.FileSizeBytes()
		}
		if len(kept) == len(g) {
			return g
		}
		g = kept
	}
}

// isIdleOutput reports whether f was written by an idle merge.
func isIdleOutput(f iceberg.DataFile) bool {
	return strings.HasPrefix(path.Base(f.FilePath()), IdleCompactedPrefix)
}

// addTimes returns a function giving the time a live file was added at
// the latest: the commit time of the kept snapshot with the smallest
// sequence number at or above the file's data sequence number. That is
// the snapshot that added it, or, once that one has expired, a later one.
// A file whose time cannot be told counts as added now.
func addTimes(tbl *table.Table, now time.Time) func(table.FileScanTask) time.Time {
	at := seqTimes(tbl, now)
	return func(t table.FileScanTask) time.Time {
		if t.DataSequenceNumber != nil {
			return at(*t.DataSequenceNumber)
		}
		return now // never idle on a guess
	}
}

// seqTimes returns when the snapshot of a data sequence number was
// committed, now where the metadata no longer tells (never idle on a
// guess).
func seqTimes(tbl *table.Table, now time.Time) func(seq int64) time.Time {
	snaps := slices.Clone(tbl.Metadata().Snapshots())
	slices.SortFunc(snaps, func(a, b table.Snapshot) int { return cmp.Compare(a.SequenceNumber, b.SequenceNumber) })
	return func(seq int64) time.Time {
		i, _ := slices.BinarySearchFunc(snaps, seq, func(s table.Snapshot, seq int64) int { return cmp.Compare(s.SequenceNumber, seq) })
		if i < len(snaps) {
			return time.UnixMilli(snaps[i].TimestampMs)
		}
		return now
	}
}

// idleDebt reports whether a partition whose newest data file has data
// sequence number seq is idle for the delete debt, where the table's
// newest data file has tableSeq: it received nothing for
// maintenance.idleCompactionMinutes while other partitions did
// (yesterday's hour), or nothing for that long and the table's metadata
// did not change for that long either (the stream stopped). Never when
// idle compaction is off. Without the second condition a committer busy
// with a long hand-off made every partition look idle, each pass rewrote
// the whole table, and the next hand-off took longer still.
func (m *Maintainer) idleDebt(tbl *table.Table) func(seq, tableSeq int64) bool {
	idleAfter := m.cfg.IdleCompaction()
	now := m.now()
	at := seqTimes(tbl, now)
	quiet := now
	if s := tbl.CurrentSnapshot(); s != nil {
		quiet = time.UnixMilli(s.TimestampMs)
	}
	return func(seq, tableSeq int64) bool {
		if idleAfter <= 0 {
			return false
		}
		last := at(seq)
		return at(tableSeq).Sub(last) >= idleAfter ||
			(now.Sub(last) >= idleAfter && now.Sub(quiet) >= idleAfter)
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// compact is the compaction step: it plans the groups, writes each
// group's file (compactGroup), then leaves their replace to the committer
// in a hand-off note (walfile.Handoff) instead of committing it: the
// committer, this pod's one writer of the table's metadata, applies it
// right after its next append (tables.ApplyHandoff), so the replace never
// races an append of its own pod, and an append never waits for it. The
// slow part, reading and writing data, is done here, once.
//
// The groups are fan-in merges and idle merges (planCompaction).
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
	files, err := tables.ReadTableFiles(ctx, tbl)
	if err != nil {
		return p, err
	}
	groups, p, err := m.planCompaction(ctx, tbl, files)
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
			if c.added == nil {
				continue // nothing written
			}
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
	// The snapshot the groups were planned and read at: tbl, loaded
	// above, whose files the scan read with the deletes committed up to
	// it. Not a later load: a delete committed in between would count
	// as held by the compacted files and be lost (tables.ApplyHandoff).
	h := walfile.Handoff{ID: uuid.New(), Dataset: d, TableUUID: tbl.Metadata().TableUUID(), Written: time.Now().UTC(),
		ReadSequence: tbl.CurrentSnapshot().SequenceNumber}
	for _, c := range done {
		part, err := tables.EncodePartition(c.old[0].Partition())
		if err != nil {
			cleanup(done)
			return p, err
		}
		g := walfile.HandoffGroup{
			ReplacedBytes: c.bytes, SpecID: int(c.old[0].SpecID()), SchemaID: c.schemaID, SortOrderID: c.sortOrderID, Partition: part,
		}
		if c.added != nil {
			g.File, g.Size, g.Rows = c.added.FilePath(), c.added.FileSizeBytes(), c.added.Count()
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
		p.deleted += c.deleted
	}
	return p, nil
}
