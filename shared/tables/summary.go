package tables

import (
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// Snapshot summary properties the committer records on each append.
const (
	// SummaryDataset names the dataset whose files the append added.
	SummaryDataset = "ingestor.dataset"
	// SummaryFiles lists, separated by spaces, the UUIDs of the WAL
	// segments the append added.
	SummaryFiles = "ingestor.files"
	// SummaryUpkeep names the maintainer's step that made a snapshot
	// (UpkeepCompaction), so that `ingestor table snapshots` can say who
	// made it. It names no segment: "in the table" never reads it.
	SummaryUpkeep = "ingestor.upkeep"
	// UpkeepCompaction is SummaryUpkeep's value on a compaction's replace.
	UpkeepCompaction = "compaction"
)

// SnapshotProperties returns the summary properties of an append that adds
// the WAL segments ids of dataset.
func SnapshotProperties(dataset string, ids []uuid.UUID) iceberg.Properties {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	sort.Strings(s)
	return iceberg.Properties{SummaryDataset: dataset, SummaryFiles: strings.Join(s, " ")}
}

// FilesInTable returns the UUIDs of the WAL segments that the snapshots the
// table still keeps record as added (summary property ingestor.files), and
// those the ledger properties (LedgerPrefix) record. It
// reads only the table metadata already loaded, never a manifest.
//
// A UUID in the set is in the table. One missing from it may still be in
// the table if the snapshot that added it has been expired (for example by
// a user's table maintenance): SegmentsInTable closes that gap, and is the
// check to use before adding a segment.
func FilesInTable(tbl *table.Table) map[uuid.UUID]bool {
	in := map[uuid.UUID]bool{}
	for k, v := range tbl.Metadata().Properties() {
		if !strings.HasPrefix(k, LedgerPrefix) {
			continue
		}
		for _, f := range strings.Fields(v) {
			if id, err := uuid.Parse(f); err == nil {
				in[id] = true
			}
		}
	}
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary == nil {
			continue
		}
		for _, f := range strings.Fields(s.Summary.Properties[SummaryFiles]) {
			if id, err := uuid.Parse(f); err == nil {
				in[id] = true
			}
		}
	}
	return in
}
