// Package consumer is steps 1 to 4 of the record path: it consumes each
// dataset's Kafka topic with its own consumer group, decodes every JSON
// record into the table's columns with the dataset's customMapping, appends
// the row to an open WAL segment (one per Kafka partition and Iceberg
// partition), rotates segments into ready_* files and then commits the
// Kafka offset after them.
//
// Order matters for crash safety, and each step is written so that a crash
// at any instruction is repaired by the recovery that runs at every start
// (recovery.go):
//
//  1. rows go into open segments, in memory or in active_* files (a
//     segment's Parquet file, or its spill file of rows set aside for the
//     memory budget), which recovery always deletes: their offsets were
//     never committed, so Kafka delivers the rows again;
//  2. rotation closes and fsyncs every segment of a Kafka partition, renames
//     each to its ready_* name and fsyncs the directory;
//  3. only then is the offset after the partition's last processed record
//     committed. A crash between 2 and 3 leaves ready files whose offsets
//     Kafka has not committed: recovery deletes them, Kafka delivers the
//     rows again, and no row is written twice.
//
// A segment that reaches the size limit while its Kafka partition holds
// others rolls alone (roll.go): it becomes a ready file at once, but its
// offsets are committed with the partition's next rotation, like those of
// its neighbours, so step 3's rule covers it too.
//
// A flat table's segment holds its rows encoded compactly (rowBuffer) and
// has no file and no Parquet writer until it holds a whole row group
// (16,384 rows or 32 MB of JSON) or rotates: its rows are then replayed
// into Arrow builders (RowBuilder, which fills null columns lazily) and
// written. When the buffered rows pass a quarter of the memory budget,
// the largest segments spill theirs, still encoded, to disk (spill.go),
// so that what an open segment costs is in proportion to its rows, not
// to its columns. A table with nested columns buffers its rows in Arrow
// builders, and the budget writes them out as row groups. When the live
// heap still passes half of the budget, the partitions with the most open
// segments rotate (writer.go).
//
// A record that cannot be decoded is dropped and counted by reason; its
// offset still advances with the partition. An error while writing the WAL
// is fatal: Run returns it, the process exits and recovery runs at the next
// start.
//
// Records are read with read-committed isolation: aborted transactions
// never reach the WAL, and the markers that end transactions advance a
// partition's committed offset without a row (control.go). A watchdog per
// dataset (watchdog.go) compares the brokers' view with the consumer's
// progress and reports, mends or ends a consumer that reads nothing.
package consumer
