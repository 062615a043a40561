// Package consumer is steps 1 to 4 of the record path: it consumes each
// dataset's Kafka topic with its own consumer group, decodes every record
// (JSON, Avro or Protobuf, format.go; the writer schemas of the Confluent
// header fetched from a schema registry, registry.go) into the table's
// columns with the dataset's customMapping or by name, appends
// the row to an open WAL segment (one per Kafka partition and Iceberg
// partition), rotates segments into ready_* files and then commits the
// Kafka offset after them.
//
// A record whose schema id the registry has not answered for is not
// processed at all: its partition pauses and rewinds to it
// (schemawait.go), so its offset, and every later one, stay uncommitted
// and a crash while it waits reads it again.
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
// into column slices (a present value's copy and one definition level per
// row) and written through Parquet's column chunk writers, one batch a
// column (shared/parquetfmt), with no Arrow in between. When the buffered rows pass a quarter of the memory budget,
// the largest segments spill theirs, still encoded, to disk (spill.go),
// so that what an open segment costs is in proportion to its rows, not
// to its columns. A table with nested columns buffers its rows in Arrow
// builders (RowBuilder, which fills null columns lazily), writes them
// through pqarrow, and the budget writes them out as row groups. When the live
// heap still passes half of the budget, the partitions with the most open
// segments rotate (writer.go).
//
// A record that cannot be decoded is dropped and counted by reason; its
// offset still advances with the partition. An error while writing the WAL
// is fatal: Run returns it, the process exits and recovery runs at the next
// start.
//
// Every segment is written for one state of the dataset's table (UUID,
// schema, partition spec), recorded in its footer for the committer's
// identity check. At start the consumer adds the columns of the create
// block that the table lacks (tables.Evolve); while it runs, a table
// watch (tableview.go) reloads the table every 10 s and after each
// rotation, and a newer schema or spec is taken at the next rotation,
// which rotates every open segment so that no file mixes two schemas. A
// table recreated with other field ids is logged and not written for.
//
// Records are read with read-committed isolation: aborted transactions
// never reach the WAL, and the markers that end transactions advance a
// partition's committed offset without a row (control.go). A watchdog per
// dataset (watchdog.go) compares the brokers' view with the consumer's
// progress and reports, mends or ends a consumer that reads nothing. A
// consumer whose offset commit finds the group generation over (it was
// paused past its session) handles its files as recovery would and
// rejoins without a restart (rejoin.go).
//
// A dataset's fetching is paused (gate.go) while the WAL volume is above
// its high watermark (backpressure.go; every dataset), or while an
// operator paused it (ingestor pause; shared/pause), the two kept apart.
// A paused dataset stays in its group and keeps rotating by age and
// committing what it holds. Run reads the operators' pause record before
// any client fetches.
package consumer
