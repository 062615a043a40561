// Package failpoint holds the named crash points of the record path, the
// proof behind its crash-safety claims: a test arms one point, the process
// dies exactly there, and the test checks that recovery still puts every
// event in the table exactly once.
//
// A role marks a step boundary with a one-line call:
//
//	failpoint.Hit("consumer.after-rename")
//
// Without the environment variable INGESTOR_FAILPOINTS the call costs one
// atomic load and returns. With it, a point the variable names makes the
// process write one line to stderr,
//
//	failpoint consumer.after-rename hit (1): exiting with code 77
//
// and exit at once with code 77 (ExitCode): no deferred function runs, no
// buffer is flushed and no lock file is unlocked by the process, as after a
// SIGKILL (the kernel drops the flock when the process is gone).
//
// # The variable
//
// INGESTOR_FAILPOINTS is a comma-separated list of name=trigger[@marker]:
//
//	consumer.after-rename=1            crash at the first hit in this process
//	uploader.before-marker=3           crash at the third hit
//	committer.after-append=p0.01       crash at each hit with probability 0.01
//	consumer.after-rename=1@/tmp/fired crash once per marker file
//
// Counts are per process: a child the supervisor restarts inherits the
// variable and would crash again at its own first hit, forever. A marker
// path makes a point fire once across every process that inherits it: the
// point fires only if it can create the marker file (O_CREATE|O_EXCL), so
// after the first crash it stays quiet in every later process, and the
// marker tells the test that it fired. A marker that exists when the
// process starts disarms the point from the start.
//
// Children inherit the variable: the supervisor starts its roles with the
// default environment of os/exec, which is the parent's.
//
// # The points
//
// Consumer, in the order of one rotation (consumer/segment.go, writer.go),
// of recovery (consumer/recovery.go) and of a rejoin in place
// (consumer/rejoin.go):
//
//	consumer.before-rename      a segment is closed and fsynced, not yet renamed to ready_
//	consumer.after-roll         a segment at the size limit is ready alone (consumer/roll.go), its
//	                            partition's offset not committed until the partition rotates
//	consumer.before-dir-sync    the rotation's renames are done, the directory not yet fsynced
//	consumer.after-rename       the renames are durable, the offset not yet committed
//	consumer.after-commit       the offset commit landed, the writer's state not yet updated
//	consumer.during-recovery    recovery deleted a ready file but not yet its marker
//	consumer.generation-lost    an offset commit found the group generation over (consumer/rejoin.go);
//	                            the partitions' open segments and ready files not yet handled
//	consumer.before-topic-record recovery is done, the topic's id record (consumer/topicgen.go)
//	                            not yet written: hit at every start of a dataset's consumer
//
// Uploader, in the order of one upload (uploader/uploader.go):
//
//	uploader.before-object      the bloom-filter sidecars are stored, the data object not yet
//	uploader.before-marker      the data object is stored, the uploaded_ marker not yet written
//	uploader.after-marker       the marker is written, the attempt not yet recorded
//
// Quarantine, which the uploader and the committer share (shared/walfile/quarantine.go):
//
//	quarantine.before-note      a bad file (and its marker and checksum record) is moved
//	                            into quarantine/, its reason note not yet written
//
// Committer, in the order of one pass (committer/committer.go):
//
//	committer.after-delete-files an upsert batch's delete files are written, not committed
//	committer.after-append      the append is committed, no local file deleted yet
//	committer.between-deletes   a committed ready file is deleted, its marker not yet
//	committer.after-dataset     one dataset's append and deletes are done; the other
//	                            datasets of the pass may still be appending
//	committer.after-replace     a compaction hand-off's replace is committed
//	                            (committer/handoff.go), the note not yet deleted
//	committer.after-hand-back   segments whose objects are missing, of the wrong size or
//	                            near the orphan margin had their uploaded_ markers deleted
//	                            (committer/objects.go), the uploader not yet done again
//
// Maintainer, in the order of one pass over a table (maintainer/steps.go):
//
//	maintainer.after-expire     the expiry is committed and its unreferenced files deleted
//	maintainer.after-manifests  the manifest rewrite is committed
//	maintainer.after-compact    the compaction's files are written and its hand-off
//	                            note (shared/walfile/handoff.go) left for the committer
//
// Operator's pause (shared/pause/controller.go), in the supervisor, or in
// the consumer in the sidecar layout:
//
//	pause.after-record          a pause or resume is recorded in the WAL
//	                            directory, the consumer not yet told
//
// Names lists them; e2e/failpoint_test.go crashes the binary at each in
// turn, except pause.after-record, which only a pause request reaches
// (e2e/pause_test.go crashes it), and committer.after-hand-back, which
// only an object gone before its append reaches
// (e2e/orphanmargin_test.go crashes it).
package failpoint
