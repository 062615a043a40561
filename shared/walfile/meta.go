package walfile

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
)

// MetaPartition is the key, in a ready segment's Parquet footer key-value
// metadata, under which the consumer records the Iceberg partition values
// of the segment's rows (encoded by tables.EncodePartition). The committer
// reads it back to build the data file it adds to the table, so that it
// never has to read the rows again.
const MetaPartition = "ingestor.partition"

// MetaTable is the key, in a ready segment's footer key-value metadata,
// under which the consumer records the table the segment was written for
// (a JSON TableIdentity). Field ids mean something only within one table:
// the committer compares the record with the table at every commit, so
// that a file written for a dropped and recreated table whose ids mean
// other columns never goes in.
const MetaTable = "ingestor.table"

// TableIdentity is the value of MetaTable.
type TableIdentity struct {
	// UUID is the table's UUID.
	UUID string `json:"uuid"`
	// SchemaID is the id of the schema the rows were written with.
	SchemaID int `json:"schema_id"`
	// SpecID is the id of the partition spec of the partition values.
	SpecID int `json:"spec_id"`
}

// MetaDeletes is the key, in a ready segment's footer key-value metadata,
// under which the consumer lists the rows of an upsert dataset's segment
// that are deletes (EncodeRows): rows holding the key of a delete record,
// which the committer removes in the snapshot that adds them. A segment
// without the key has no delete rows.
const MetaDeletes = "ingestor.deletes"

// MetaUpsertAfter is the key, in an upsert dataset's ready segment footer,
// of the last row offset of the segment's Kafka partition that another WAL
// directory wrote before this one took the partition over (read from the
// commit ledger, RowsSuffix): the committer appends the segment only once
// the table holds that offset, so that the other directory's older rows
// never come after this one's newer ones.
const MetaUpsertAfter = "ingestor.upsert.after"

// EncodeRows encodes increasing row positions as the base64 of their
// differences in unsigned varints: a few bytes per position.
func EncodeRows(rows []int64) string {
	buf := make([]byte, 0, len(rows)*2)
	prev := int64(0)
	for _, r := range rows {
		buf = binary.AppendUvarint(buf, uint64(r-prev))
		prev = r
	}
	return base64.StdEncoding.EncodeToString(buf)
}

// DecodeRows decodes what EncodeRows encoded.
func DecodeRows(s string) ([]int64, error) {
	buf, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", MetaDeletes, err)
	}
	var rows []int64
	prev := int64(0)
	for len(buf) > 0 {
		d, n := binary.Uvarint(buf)
		if n <= 0 {
			return nil, fmt.Errorf("%s: a malformed varint", MetaDeletes)
		}
		prev += int64(d)
		rows = append(rows, prev)
		buf = buf[n:]
	}
	return rows, nil
}
