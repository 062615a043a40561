// Package committer is step 6 of the record path: it adds the uploaded WAL
// segments to their Iceberg tables and then deletes the local copies.
//
// At most once per interval (ingestion.commitIntervalSeconds, shifted by up
// to ±5 % per process so that pods do not commit together) the committer
// takes, for each dataset, every ready_ segment that has its uploaded_
// marker, and adds them all to the dataset's table in one append. The
// interval counts from the dataset's last append, not from a fixed clock:
// files uploaded after a quiet spell are committed as soon as their batch
// settles (every file of the dataset uploaded, or the oldest upload a
// quarter interval old, at most 5 s), which takes up to an interval off
// the freshness of the first rows without adding appends. It never reads the
// rows again: each Iceberg data file is built from the local segment's
// Parquet footer (column statistics, and the partition values the consumer
// recorded under walfile.MetaPartition), with the object location and size
// from the marker.
//
// Exactly once. Each append records the UUIDs of the segments it adds in
// its snapshot summary (tables.SnapshotProperties). Before each append the
// committer drops from the batch every segment that a kept snapshot
// already holds (tables.SegmentsInTable, which reads the summaries and,
// only for segments older than a snapshot that maintenance expired, the
// manifests): those landed before, and only their local files go. The
// check runs on the table as the dataset's last successful commit returned
// it, or on a fresh load after anything else (reuse.go: a first append, a
// failure, a batch the kept table cannot describe, another writer). So an
// append whose outcome is unknown (a timeout, a catalog 5xx, a crash right
// after the commit) is never blindly retried and never lost: the next
// interval's reload decides. A commit conflict (another writer changed the
// table first) is retried at once on the reloaded table, a bounded number
// of times.
//
// Offsets first. A segment is added only when Kafka holds a committed
// offset of the dataset's consumer group for the segment's partition that
// is past the segment's last offset. A ready file whose offset commit never
// landed will be delivered by Kafka again; adding it would duplicate its
// rows, so the committer leaves it for the consumer's recovery to delete
// (metric ingestor_committer_files_waiting_offset_commit).
//
// Objects checked before the append. Until a segment's append lands, no
// table metadata names its object, and the maintainer's orphan cleanup
// deletes every object under the table's location that no metadata names
// once it is older than maintenance.orphanAgeHours. A committer down for
// longer than that (a pod on a dead node, a crash loop, a catalog that
// refuses this committer only) would otherwise append objects the cleanup
// had deleted, then delete the local copies: every scan of the table would
// fail and the rows would be gone. So right before each append the
// committer checks each object of the batch in the store (one HEAD each,
// 16 in flight) and hands back to the uploader every segment whose object
// is missing, is not the size its marker records, or is older than half
// the margin: it deletes the segment's marker, and the uploader uploads
// the local ready file again at once (objects.go). The others are
// appended, and the append is bounded to end (its outcome then unknown,
// decided by the next pass) before any of them reaches the margin. The
// record path thus holds whatever the outage and whatever the margin; the
// margin only bounds how long an object no metadata names costs storage.
// A check that cannot be made (the store unreachable) appends nothing and
// is retried at the next interval. An age is the local clock less the
// object's time in the store, as the cleanup counts it.
//
// A segment the table already holds whose object the store no longer has
// (deleted by hand, or by a cleanup that did not know the table named it)
// keeps its local copy: instead of its deletion, the ready file, marker
// and checksum record are moved to the quarantine with reason
// object_missing (docs/operations.md tells how to put the object back).
//
// Table identity. Each segment records the table UUID, schema id and spec
// id it was written for. A segment of the same table goes in described
// with the schema and spec it was written for (valid by field id whatever
// changed since); one written for a table since dropped and recreated
// goes in only if each of its field ids names a column of the same name
// now. Otherwise the dataset's appends stop, nothing of it is added, and
// the check runs again at every pass (identity.go).
//
// Deletion order. Only after the append succeeded, the committer deletes
// the ready file, then its marker, and fsyncs the directory. A crash in
// between leaves either both files (the next pass finds the segment in the
// table and deletes them) or a marker without its ready file (deleted as an
// orphan at the next pass).
//
// Compaction. The maintainer writes compacted files and leaves their
// replace to the committer in a hand-off note (walfile.Handoff): after a
// dataset's append, on the table the append left, the committer commits
// each note as one replace snapshot (handoff.go, tables.ApplyHandoff),
// then deletes it. One writer of metadata per pod means the replace never
// races the pod's own appends, and an append never waits for upkeep. A
// crash after the replace and before the note's deletion
// (committer.after-replace) finds the replace in the table at the next
// pass, by the snapshot summary ingestor.handoff or the compacted file
// being live, and deletes the note only.
//
// Drain. When Run's context is cancelled the committer waits until neither
// the consumer nor the uploader holds its lock on the WAL directory (they
// rotate and upload everything first), then commits everything uploaded,
// all within ingestion.drainTimeoutSeconds, and returns.
package committer
