package maintainer

import (
	"cmp"
	"math"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/tables"
)

// deletedShare is the share of a partition's rows its live position
// deletes may remove before compaction rewrites the partition whole,
// whatever the size of its files: past it, reads spend more on rows they
// drop than a rewrite costs once. Only position deletes count: they name
// rows that are gone, where an upsert's equality delete holds every key
// of its batch, new ones included.
const deletedShare = 0.10

// growthShare is how much a partition with more delete files than the
// fan-in must have grown since its oldest live delete, as a share of the
// rows that delete applies to, before it is rewritten whole. A rewrite
// costs the partition's rows; rewriting when it has doubled since the
// last one costs about twice the partition's final size over its whole
// life (1 + 1/2 + 1/4 + ...), and the equality deletes' records between
// two rewrites are at most the rows added, so a read checks no more keys
// than it reads rows. Rewriting whenever it had more delete files than
// the fan-in cost its size every few commits, and a long upsert stream's
// passes grew with the table until upkeep fell behind; rewriting at half
// its growth did too on two cores, where a pass over the table took as
// long as the stream took to add half of it again.
const growthShare = 1.0

// The delete debt. An upsert table gains an equality-delete file and a
// position-delete file in each partition at every commit of the
// committer. A position delete names its data files, and goes with them
// when compaction replaces them (tables.ApplyHandoff): the committer's
// name the files of their own commit, which the fan-in merges soon. An
// equality delete applies to every older data file of its partition, so
// it goes only once no data file of the partition is older than it: once
// every older file, the big ones that the fan-in never merges again
// included, has been rewritten with it applied. Until then each scan of
// the partition reads it.
//
// So a partition with live delete files is compacted whole
// (planDeleteHeavy) when
//   - it is idle (no data file for maintenance.idleCompactionMinutes
//     while the table received others, or while the table's metadata
//     did not change either; Maintainer.idleDebt): rewritten once, it
//     stays clean;
//   - it has more delete files than maintenance.compactionFanIn, and the
//     rows added since its oldest live delete are at least growthShare
//     of the rows that delete applies to: the rewrites of a growing
//     partition are paid for by its growth;
//   - it has more delete files than the fan-in cubed (512 by default),
//     whatever its growth: reads open a bounded number;
//   - its position deletes remove more than deletedShare of its rows.
//
// A rewrite takes all its data files, in target-sized groups, each read
// with its deletes applied and committed with the read snapshot's
// sequence number, after which the deletes committed up to that snapshot
// apply to nothing and leave in the same replace. An equality delete
// that already applies to nothing (the first commit into a partition: no
// older row) counts for no rule: any replace of its partition removes it.

// heavyPartition is a partition whose delete debt pays for a rewrite of
// it whole.
type heavyPartition struct {
	key         string
	deleteFiles int
}

// heavyPartitions returns the partitions of files that pay for a rewrite
// whole, most delete files first. idle reports whether a partition whose
// newest data file has the data sequence number seq is idle, where the
// table's newest has tableSeq.
func heavyPartitions(files *tables.TableFiles, fanIn int, idle func(seq, tableSeq int64) bool) ([]heavyPartition, error) {
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
		posDeleted  int64
		rows        int64
		newestData  int64
		oldestDel   int64 // data sequence number of the oldest live delete
	}
	parts := map[string]*debt{}
	tableNewest := int64(math.MinInt64)
	for _, e := range files.Data {
		tableNewest = max(tableNewest, e.Seq)
		p := parts[e.Partition]
		if p == nil {
			p = &debt{newestData: math.MinInt64, oldestDel: math.MaxInt64}
			parts[e.Partition] = p
		}
		p.rows += e.File.Count()
		p.newestData = max(p.newestData, e.Seq)
	}
	for _, e := range files.Deletes {
		p := parts[e.Partition]
		if p == nil || (e.File.ContentType() == iceberg.EntryContentEqDeletes && isDead[e.File.FilePath()]) {
			continue // a delete of a partition without data, or of none
		}
		p.deleteFiles++
		p.oldestDel = min(p.oldestDel, e.Seq)
		if e.File.ContentType() != iceberg.EntryContentEqDeletes {
			p.posDeleted += e.File.Count()
		}
	}
	// The rows each partition holds older than its oldest live delete
	// (what the rewrite is for), and the rows added since.
	older := map[string]int64{}
	for _, e := range files.Data {
		if p := parts[e.Partition]; p.deleteFiles > 0 && e.Seq < p.oldestDel {
			older[e.Partition] += e.File.Count()
		}
	}
	var out []heavyPartition
	for key, p := range parts {
		if p.deleteFiles == 0 {
			continue
		}
		grown := float64(p.rows-older[key]) >= growthShare*float64(older[key])
		if idle(p.newestData, tableNewest) ||
			(p.deleteFiles > fanIn && grown) ||
			p.deleteFiles > fanIn*fanIn*fanIn ||
			float64(p.posDeleted) > deletedShare*float64(p.rows) {
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
