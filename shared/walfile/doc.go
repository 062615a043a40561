// Package walfile is the contract of the WAL directory, the only hand-off
// between the consumer, the uploader and the committer.
//
// A segment moves through these names, each change a rename or an atomic
// write fsynced together with the directory:
//
//	active_{topic}_{partition}_{uuid}.parquet          open, written by the consumer
//	ready_{topic}_{partition}_{start}-{end}_{uuid}.parquet
//	                                                   closed and fsynced; offsets start..end
//	uploaded_{topic}_{partition}_{start}-{end}_{uuid}.json
//	                                                   written by the uploader beside the
//	                                                   ready file once the object is stored
//
// The committer deletes the ready file and then its uploaded marker after
// the table append that holds the file succeeded. Before the append it may
// delete the marker alone, handing the segment back: its object was
// missing, of the wrong size, or near the orphan cleanup's margin. The
// ready file is then ready and not uploaded again, and the uploader
// uploads it anew; until the append the ready file is the only sure copy
// of its rows. Names starting with
// "tmp_" are half-written and never acted upon; RemoveTmp removes those
// old enough not to be another role's write in flight.
//
// The start and end offsets are the first and last Kafka offsets of the
// rows in the file; the consumer commits the offset after the last record
// it processed for the partition once every segment of the partition is
// ready. Files of one rotation of a partition interleave their offsets.
//
// The consumer's recovery writes orphan_{uuid}.json (WriteOrphan) before it
// deletes a ready segment whose offset commit never landed: the note names
// the object the uploader may already have stored for it, which the
// uploader deletes after a safety age unless a kept snapshot refers to it.
//
// Before the rename to ready_, the consumer writes sum_{uuid}.json
// (WriteSum): the CRC32C and size of the whole file. The uploader verifies
// the file against it (Verify) before it uploads; a ready file that fails,
// cannot be read, or whose name does not parse is moved to the quarantine/
// subdirectory with a note of its reason and offsets (Quarantine), and no
// role acts on it again. The committer moves a marker that is empty or not
// JSON there too, and the uploader then uploads its ready file again.
//
// The directory's id, in .wal-id (WALID), names its offset commits in the
// commit ledger. It is created only while no ready segment or marker is in
// the directory; missing, empty or garbled otherwise, WALID refuses with an
// *IDError rather than guess.
//
// Each role holds an exclusive lock file (".consumer.lock" and so on) in
// the directory while it runs, so that a draining role can tell whether the
// role before it in the record path is still writing.
package walfile
