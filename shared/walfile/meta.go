package walfile

// MetaPartition is the key, in a ready segment's Parquet footer key-value
// metadata, under which the consumer records the Iceberg partition values
// of the segment's rows (encoded by tables.EncodePartition). The committer
// reads it back to build the data file it adds to the table, so that it
// never has to read the rows again.
const MetaPartition = "ingestor.partition"
