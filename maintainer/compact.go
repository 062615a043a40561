package maintainer

import (
	"context"
	"fmt"
	"math"

	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
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

// stageCompaction plans the small-file compaction of tbl, per partition
// and level, and stages it on tx as one rewrite (iceberg-go's
// RewriteDataFiles: it reads the group's files once and writes them with
// the table's schema, field IDs and write properties; no row changes).
// It stages nothing while no partition has fanIn files of one level.
func (m *Maintainer) stageCompaction(ctx context.Context, tbl *table.Table, tx *table.Transaction) (compactionPlan, error) {
	var p compactionPlan
	fanIn := m.cfg.Maintenance.CompactionFanIn
	if fanIn < 2 || tbl.CurrentSnapshot() == nil {
		return p, nil // compaction off (the default), or nothing to compact
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return p, fmt.Errorf("plan files: %w", err)
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
			return p, fmt.Errorf("plan compaction: %w", err)
		}
		for _, g := range plan.Groups {
			if len(groups) == maxCompactGroups {
				break
			}
			groups = append(groups, table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes})
			p.files += len(g.Tasks)
			p.bytes += g.TotalSizeBytes
		}
	}
	if len(groups) == 0 {
		return p, nil
	}
	if _, err := tx.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{}); err != nil {
		return p, fmt.Errorf("rewrite %d files: %w", p.files, err)
	}
	p.groups = len(groups)
	return p, nil
}
