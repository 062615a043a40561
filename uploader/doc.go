// Package uploader is step 5 of the record path: it stores each ready WAL
// segment in the dataset table's data location and records that with an
// uploaded_ marker, which is what the committer waits for.
//
// The uploader reacts to a new ready_* file at once: fsnotify on the WAL
// directory names it, and it is queued without listing the directory (with
// thousands of open segments a listing costs tens of milliseconds, and a
// rotation makes thousands of files one after the other). It also lists
// the directory every 5 seconds, and when the watch missed events, which
// finds whatever a missed event, a restart or a failed attempt left
// behind. For each ready_{topic}_{partition}_{start}-{end}_{uuid}.parquet
// without an uploaded_ marker it:
//
//  1. finds the dataset that reads the topic and the table's data location
//     (the write.data.path table property, else <table location>/data),
//     loaded through the catalog once per dataset and loaded again after
//     any failed upload;
//  2. if the dataset has bloomFilterColumns, reads those columns from the
//     local file and stores one sidecar per column (shared/bloom) at
//     <data location>/<uuid>.bloom.<column>;
//  3. stores the file itself at <data location>/<uuid>.parquet;
//  4. writes the marker uploaded_{...}.json (walfile.WriteMarker) holding
//     the object's location and size and the sidecars' locations.
//
// Object names come from the segment's UUID, so doing the steps again
// writes the same names. That makes the marker's place at the end the
// whole crash-safety argument: a crash anywhere before it leaves no marker,
// the next scan uploads the file again over the same objects, and only
// then does the committer see it. The uploader never deletes a ready file;
// the committer does, after the table append.
//
// The committer may hand a segment back before its append: when its
// object is missing from the store, of another size than the marker
// records, or older than half of maintenance.orphanAgeHours, it deletes
// the marker (committer/objects.go). The ready file is then a ready file
// without a marker again; the watch sees the marker go and the file is
// uploaded again at once, over the same object names, which writes the
// object and its sidecars anew and a new marker. The same holds for a
// marker the committer moved to the quarantine as unreadable.
//
// A failed upload is logged (at most one line per dataset every 30 s),
// counted in ingestor_uploader_upload_failures_total, and tried again at a
// later scan, waiting 1 s after the first failure and twice as long after
// each next one, up to a minute. At most 4 uploads run at once.
//
// # Drain
//
// When Run's context is cancelled, the uploader keeps uploading for as
// long as the consumer still holds its lock on the WAL directory (the
// consumer is rotating its last segments), then makes one final pass that
// tries every ready file without a marker once more, ignoring backoff. The
// whole drain is bounded by ingestion.drainTimeoutSeconds counted from the
// cancellation; uploads still running at that deadline are abandoned, and
// the next start uploads those files again. Run then returns nil and drops
// its own lock, which tells the committer that no more markers will come.
package uploader
