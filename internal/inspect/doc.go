// Package inspect holds the operator's read-only tools: what the
// `ingestor wal` and `ingestor bloom` subcommands print. It stands beside
// the record path, not in it: it never renames, writes or deletes a WAL
// file, never takes a role's lock, and never creates a table.
//
//   - List and WriteList show the WAL directory as the roles see it (the
//     parsed names of shared/walfile: state, topic, partition, offsets,
//     UUID), with each file's size and age, so that an operator can tell a
//     backlog of ready files (storage or catalog down) from a stuck
//     consumer.
//   - ReadSegment and WriteSegment show one ready segment as the committer
//     will turn it into an Iceberg data file: its Arrow schema with the
//     Iceberg field IDs, its rows and row groups, and the partition values
//     the consumer recorded in the footer (walfile.MetaPartition), decoded
//     generically or, with the table's partition spec, as the committer
//     decodes them (tables.DecodePartition).
//   - LookupBloom answers from a bloom-filter sidecar (shared/bloom) whether
//     a value may be in a data file.
package inspect
