package maintainer

import (
	"cmp"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/tables"
)

// deletedShare is the share of a partition's rows its live delete files
// may delete before compaction rewrites the partition whole, whatever the
// size of its files: past it, reads spend more on rows they drop than a
// rewrite costs once.
const deletedShare = 0.10

// The delete debt. An upsert table gains an equality-delete file and a
// position-delete file in each partition at every commit of the
// committer. A position delete names its data files, and goes with them
// when compaction replaces them (tables.ApplyHandoff). An equality delete
// applies to every older data file of its partition, so it goes only
// once no data file of the partition is older than it: once every older
// file, the big ones that the fan-in never merges again included, has
// been rewritten with it applied. Until then each scan of the partition
// reads it.
//
// So a partition whose live delete files number more than
// maintenance.compactionFanIn, or whose delete files' records are more
// than deletedShare of its rows, is compacted whole (planDeleteHeavy):
// all its data files, in target-sized groups, each read with its deletes
// applied and committed with the read snapshot's sequence number, after
// which the deletes committed up to that snapshot apply to nothing and
// leave in the same replace. An equality delete that already applies to
// nothing (the first commit into a partition: no older row) counts for
// neither rule: any replace of its partition removes it.

// heavyPartition is a partition whose delete debt pays for a rewrite of
// it whole.
type heavyPartition struct {
	key         string
	deleteFiles int
}

// heavyPartitions returns the partitions of files that pay for a rewrite
// whole, most delete files first.
func heavyPartitions(files *tables.TableFiles, fanIn int) ([]heavyPartition, error) {
	dead, err := files.DeadEquality(nil, nil)
	if err != nil {
		return nil, err
	}
	isDead := map[string]bool{}
	for _, f := range dead {
		isDead[f.FilePath()] = true
	}
	type debt struct {
		deleteFiles int
		deleted     int64
		rows        int64
	}
	parts := map[string]*debt{}
	for _, e := range files.Data {
		p := parts[e.Partition]
		if p == nil {
			p = &debt{}
			parts[e.Partition] = p
		}
		p.rows += e.File.Count()
	}
	for _, e := range files.Deletes {
		p := parts[e.Partition]
		if p == nil || (e.File.ContentType() == iceberg.EntryContentEqDeletes && isDead[e.File.FilePath()]) {
			continue // a delete of a partition without data, or of none
		}
		p.deleteFiles++
		p.deleted += e.File.Count()
	}
	var out []heavyPartition
	for key, p := range parts {
		if p.deleteFiles > fanIn || (p.deleteFiles > 0 && float64(p.deleted) > deletedShare*float64(p.rows)) {
			out = append(out, heavyPartition{key: key, deleteFiles: p.deleteFiles})
		}
	}
	slices.SortFunc(out, func(a, b heavyPartition) int {
		if c := cmp.Compare(b.deleteFiles, a.deleteFiles); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	return out, nil
}

// planDeleteHeavy plans the rewrite whole of each partition of heavy, in
// groups of up to the target size (a file at or above it alone), at most
// room groups: a partition that does not fit waits for the next pass,
// so that no partition is rewritten in part, which would leave its
// equality deletes live.
func planDeleteHeavy(tasks []table.FileScanTask, heavy []heavyPartition, target int64, room int) ([]compactionGroup, error) {
	byPart := map[string][]table.FileScanTask{}
	for _, t := range tasks {
		key, err := tables.PartitionOf(t.File)
		if err != nil {
			return nil, err
		}
		byPart[key] = append(byPart[key], t)
	}
	var groups []compactionGroup
	for _, h := range heavy {
		ts := slices.Clone(byPart[h.key])
		if len(ts) == 0 {
			continue
		}
		slices.SortFunc(ts, func(a, b table.FileScanTask) int {
			return cmp.Compare(a.File.FileSizeBytes(), b.File.FileSizeBytes())
		})
		var part []compactionGroup
		var cur []table.FileScanTask
		var size int64
		flush := func() {
			if len(cur) > 0 {
				part = append(part, compactionGroup{CompactionTaskGroup: table.CompactionTaskGroup{PartitionKey: h.key, Tasks: cur, TotalSizeBytes: size}})
			}
			cur, size = nil, 0
		}
		for _, t := range ts {
			if len(cur) > 0 && size+t.File.FileSizeBytes() > target {
				flush()
			}
			cur = append(cur, t)
			size += t.File.FileSizeBytes()
		}
		flush()
		if len(groups)+len(part) > room {
			continue
		}
		groups = append(groups, part...)
	}
	return groups, nil
}
