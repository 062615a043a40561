// Package tables is the Iceberg side shared by the roles of the record
// path: opening the catalog, loading (or creating) each dataset's table,
// and the two records that tie a WAL segment to the table.
//
// The consumer loads the table to learn its schema and partition spec,
// writes each segment with the table's field IDs and records the
// segment's partition values in the Parquet footer (EncodePartition, key
// walfile.MetaPartition). The committer turns the footer of a ready file
// back into an Iceberg data file (DecodePartition) and adds it with one
// append per dataset per interval, recording the segment UUIDs in the
// snapshot summary (SnapshotProperties). FilesInTable reads those records
// back from table metadata alone: the committer and the recovery at start
// use it to tell whether a local segment is already in the table, which is
// what makes a retried commit add each segment exactly once.
package tables
