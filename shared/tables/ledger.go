package tables

import (
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// LedgerPrefix starts the table property in which each WAL directory
// records the segments it appended whose local files may still exist:
// ingestor.segments.<wal id> = space-separated segment UUIDs.
//
// Why a table property. The snapshot summaries (SummaryFiles) are the
// common record of what an append added, but snapshot expiry removes them,
// and after compaction (ours or another engine's) the segment's object is
// no longer a live data file either, so neither the summary nor the
// manifest scan can tell that its rows are in the table. Table properties
// survive both. The committer sets its directory's property in the same
// transaction as each append, so the record and the rows land together or
// not at all.
//
// Why it stays small. Only a segment whose local ready file still exists
// can ever be asked about again: the committer deletes the local files
// right after the append, and only a crash or a failed deletion leaves
// them. So each append records its own segments plus those of the
// previous record that are still on local disk, and everything else
// drops out: the value holds about one batch.
const LedgerPrefix = "ingestor.segments."

// LedgerKey is the ledger property of the WAL directory walID.
func LedgerKey(walID string) string { return LedgerPrefix + walID }

// LedgerProperties returns the table property to set with an append that
// adds the segments added, from the WAL directory walID: the added UUIDs
// and those of the directory's current record in meta that local still
// holds (the UUIDs of the ready files on local disk).
func LedgerProperties(meta table.Metadata, walID string, added []uuid.UUID, local map[uuid.UUID]bool) iceberg.Properties {
	set := map[string]bool{}
	for _, id := range added {
		set[id.String()] = true
	}
	for _, f := range strings.Fields(meta.Properties()[LedgerKey(walID)]) {
		if id, err := uuid.Parse(f); err == nil && local[id] {
			set[id.String()] = true
		}
	}
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return iceberg.Properties{LedgerKey(walID): strings.Join(ids, " ")}
}

// ledgered returns which of want (UUIDs as text) the ledger properties of
// every WAL directory in meta record.
func ledgered(meta table.Metadata, want map[string]uuid.UUID) map[uuid.UUID]bool {
	in := map[uuid.UUID]bool{}
	for k, v := range meta.Properties() {
		if !strings.HasPrefix(k, LedgerPrefix) {
			continue
		}
		for _, f := range strings.Fields(v) {
			if id, ok := want[f]; ok {
				in[id] = true
			}
		}
	}
	return in
}
