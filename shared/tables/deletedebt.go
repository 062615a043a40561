package tables

import (
	"cmp"
	"slices"

	"github.com/apache/iceberg-go"
)

// DeleteDebt is what a table's live delete files cost its readers: every
// scan of a partition reads each of its delete files and checks its rows
// against them, until compaction rewrites the files they apply to and
// drops them (the maintainer's upkeep).
type DeleteDebt struct {
	// PositionFiles, EqualityFiles and DeletionVectors are the live
	// delete files of each kind.
	PositionFiles   int `json:"position_delete_files"`
	EqualityFiles   int `json:"equality_delete_files"`
	DeletionVectors int `json:"deletion_vectors"`
	// DeletedRecords is their records together: the rows of position
	// deletes and deletion vectors, the keys of equality deletes (a key
	// may delete no row, or several).
	DeletedRecords int64 `json:"deleted_records"`
	// MaxPartitionFiles is the delete files of the partition that has
	// the most.
	MaxPartitionFiles int `json:"max_partition_delete_files"`
	// Partitions are the partitions with a delete file, most first.
	Partitions []PartitionDebt `json:"partitions,omitempty"`
}

// Files is the live delete files of every kind.
func (d DeleteDebt) Files() int { return d.PositionFiles + d.EqualityFiles + d.DeletionVectors }

// PartitionDebt is one partition's live delete files and data.
type PartitionDebt struct {
	// Partition is the partition's key (PartitionOf).
	Partition string `json:"partition"`
	// DeleteFiles and DeletedRecords are its delete files and their
	// records; DataFiles and Rows its live data files and their rows.
	DeleteFiles    int   `json:"delete_files"`
	DeletedRecords int64 `json:"deleted_records"`
	DataFiles      int   `json:"data_files"`
	Rows           int64 `json:"rows"`
}

// DeleteDebt sums the table's live delete files, per partition. An
// unpartitioned spec's equality delete, which applies in every
// partition, counts in its own spec's partition.
func (tf *TableFiles) DeleteDebt() DeleteDebt {
	var d DeleteDebt
	parts := map[string]*PartitionDebt{}
	part := func(key string) *PartitionDebt {
		p := parts[key]
		if p == nil {
			p = &PartitionDebt{Partition: key}
			parts[key] = p
		}
		return p
	}
	for _, e := range tf.Data {
		p := part(e.Partition)
		p.DataFiles++
		p.Rows += e.File.Count()
	}
	for _, e := range tf.Deletes {
		switch {
		case e.File.ContentType() == iceberg.EntryContentEqDeletes:
			d.EqualityFiles++
		case e.File.FileFormat() == iceberg.PuffinFile:
			d.DeletionVectors++
		default:
			d.PositionFiles++
		}
		d.DeletedRecords += e.File.Count()
		p := part(e.Partition)
		p.DeleteFiles++
		p.DeletedRecords += e.File.Count()
	}
	for _, p := range parts {
		if p.DeleteFiles > 0 {
			d.Partitions = append(d.Partitions, *p)
			d.MaxPartitionFiles = max(d.MaxPartitionFiles, p.DeleteFiles)
		}
	}
	slices.SortFunc(d.Partitions, func(a, b PartitionDebt) int {
		if c := cmp.Compare(b.DeleteFiles, a.DeleteFiles); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
	return d
}
