// Package maintainer is the fourth role: it keeps each dataset's Iceberg
// table as cheap to commit to and to read after a month as on its first
// day, while ingest runs, with no external job.
//
// Every commit of the committer adds a snapshot to metadata.json, a
// manifest list and a manifest; nothing takes them away by itself. Once
// per maintenance.intervalSeconds the maintainer loads each dataset's
// table and, in this order:
//
//   - expires snapshots (Transaction.ExpireSnapshots): by the table's
//     history.expire.max-snapshot-age-ms and
//     history.expire.min-snapshots-to-keep where it sets them, else by
//     DefaultMaxSnapshotAge and DefaultMinSnapshotsToKeep, chosen so that a
//     table at the default 20 s commit interval keeps about 180 snapshots
//     and its metadata.json well under 1 MB. The manifest lists, manifests
//     and data files that only expired snapshots referred to are deleted
//     after the commit, two at a time (deletes.go), so that a large expiry
//     does not queue the committer's appends behind it at the store.
//     Little and often: each pass expires the few snapshots that aged out
//     since the last one.
//   - merges manifests (Transaction.RewriteManifests) once the current
//     snapshot holds more than maintenance.maxManifests data manifests,
//     for tables that do not merge them at each append. Metadata only.
//   - compacts small files per partition and size level (compact.go):
//     maintenance.compactionFanIn files of one level merge into one a
//     level up, so a byte is rewritten once per level, not at every
//     merge. A partition that has received no file for
//     maintenance.idleCompactionMinutes has its small files merged into
//     one whatever the fan-in (an idle merge, compacted-idle-*.parquet),
//     at most once per byte unless the merge lifts it a level. Each
//     group's file is written by rewrite.go: the group's files read
//     once (a small one in one request, wholeread.go) with the deletes
//     that apply to them, their live rows written with the consumer's Parquet settings (shared/parquetfmt)
//     and the table schema's field ids, as one sorted
//     run in the table's sort order where it has one. The maintainer
//     does not commit them: it leaves a hand-off note
//     (walfile.Handoff) in the WAL directory, and the committer commits
//     one replace snapshot of all groups right after its next append
//     (tables.ApplyHandoff), which changes no row, and removes the
//     delete files that apply to nothing once the group's files are
//     replaced.
//   - resolves the delete debt (deletedebt.go): a partition with live
//     delete files is compacted whole, its big files included, so that
//     its equality deletes apply to nothing afterwards and leave in the
//     replace, when it is idle, when it has more delete files than the
//     fan-in and has doubled since its oldest delete (a growing
//     partition's rewrites cost about twice its size over its life),
//     when it has more than the fan-in cubed, or when its position
//     deletes remove more than a tenth of its rows.
//   - deletes orphans (orphans.go), hourly: objects under the table's
//     location that no metadata refers to, older than
//     maintenance.orphanAgeHours. The listing comes first, then
//     the table is loaded again, and again before each batch of deletes:
//     an object a commit names while the cleanup runs is never deleted,
//     however old, and one stored again since the listing neither (on
//     Azure the delete is conditional on the ETag listed). A segment
//     whose ready file is in this pod's WAL directory is kept whatever
//     its age; one waiting in another pod's may lose its object past the
//     margin, never its rows: the committer checks each object before its
//     append and hands a missing one back to the uploader, which uploads
//     it again from the local ready file.
//
// Bloom-filter sidecars (<uuid>.bloom.<column>, shared/bloom) are named by
// no table metadata, so upkeep keeps them beside their data file by name:
// the orphan cleanup keeps a sidecar while its data file is named by the
// table or still stored (a segment waiting for its append, a compacted
// file whose hand-off waits) and deletes it once the data file is gone;
// compaction writes the compacted file's sidecars, filled while its rows
// are written, before the hand-off; the expiry's deletes take each
// deleted data file's sidecars right after it (deletes.go). A crash
// between a data file and its sidecars leaves sidecars of a data file
// that is gone, which the next orphan cleanup deletes.
//
// The snapshot expiry also caps the snapshots of a table that leaves
// retention to the ingestor at maintenance.maxSnapshots, so that a short
// commit interval cannot grow metadata.json past about 450 KB.
//
// Old metadata.json versions: the tables the ingestor creates carry
// write.metadata.delete-after-commit.enabled and
// write.metadata.previous-versions-max (tables.UpkeepProperties), which
// iceberg-go applies at every commit, the committer's included. On a
// table another engine created without the first, each pass deletes the
// versions that have left the metadata log (metadatafiles.go), as the
// property would.
//
// Ingest comes first. Expiry and the manifest rewrite are catalog commits
// of their own with optimistic concurrency: when the committer appended in
// between, the step's commit fails its requirement, nothing is written,
// and the step is redone on the reloaded table a few times, else left to
// the next pass. Compaction, whose slow part (reading and writing data)
// made its commit lose nearly every race against a committer appending
// every fraction of a second, hands its commit to the committer instead:
// the pod's one writer of the table's metadata applies the replace after
// its own append, so the two never race, and an append never waits for
// it. No step adds or removes a row, so nothing can be lost or doubled by
// a conflict; a hand-off whose inputs another writer replaced first, or
// deleted rows of by position (a position delete, a deletion vector)
// after the maintainer read them, is dropped, never applied on top: its
// file still holds the deleted rows. An equality delete committed after
// the read keeps applying to the compacted file, which takes the read
// snapshot's data sequence number (the reasoning is on
// tables.ApplyHandoff).
//
// Exactly once. After expiry, the snapshot summaries that named a
// committed segment are gone; after compaction (by another engine, on
// tables where one runs), its object is no live data file either. The
// committer's ledger property (tables.LedgerPrefix), set in the same
// transaction as each append and kept by both, is what still tells the
// committer's restart that the segment is in the table.
//
// Crashes. Expiry and the manifest rewrite are one commit each: dying
// before it leaves the table as it was, dying after it (failpoints
// maintainer.after-expire, maintainer.after-manifests) leaves the step
// done, and dying during the deletion of expired files leaves some
// objects that no metadata refers to. Compaction dying before its
// hand-off note leaves written files no metadata refers to, which the
// orphan cleanup deletes; after it (maintainer.after-compact), the note
// is the committer's, which applies it whether or not the maintainer
// lives (committer.after-replace is its own crash point). The next start
// does the next pass.
//
// Several pods. One maintainer per table (lease.go): each pod's
// maintainer joins the Kafka group <consumerGroup>.maintainer of each
// dataset and upkeeps the table only while it is assigned partition 0 of
// the topic; a rebalance that takes it away waits for the pass under way.
// A drain cancels the pass and leaves the groups within a second, also
// while a join is held at the broker; a pod that dies without leaving
// hands its tables over after maintenance.leaseSessionTimeoutSeconds.
// Should two ever overlap (a member that lost its session without knowing
// it yet), the steps' optimistic concurrency still makes it a retried
// commit and a deleted compaction file, never a wrong table.
package maintainer
