package walfile

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
