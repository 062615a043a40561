package committer

import (
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// ledger returns the table property that an append of ids to tbl sets in
// the same transaction: this WAL directory's record of the segments it
// appended whose local ready files may still exist (tables.LedgerPrefix).
// It is what keeps "in the table" exact once expiry has removed the
// append's snapshot and compaction has rewritten its files.
//
// The record keeps, besides ids, the segments of the previous record whose
// ready files are still in the directory: a crash before their deletion,
// or a failed deletion, leaves them, and the next pass must find them in
// the table however much upkeep ran in between. A segment whose ready file
// is gone is never asked about again, so it drops out.
func (c *Committer) ledger(tbl *table.Table, topic string, ids []uuid.UUID) (iceberg.Properties, error) {
	walID, err := walfile.WALID(c.dir)
	if err != nil {
		return nil, err
	}
	files, err := walfile.List(c.dir)
	if err != nil {
		return nil, fmt.Errorf("list wal dir for the ledger: %w", err)
	}
	local := map[uuid.UUID]bool{}
	for _, f := range files {
		if f.Topic == topic && f.State == walfile.Ready {
			local[f.UUID] = true
		}
	}
	return tables.LedgerProperties(tbl.Metadata(), walID, ids, local), nil
}
