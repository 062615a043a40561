// Package pause is the operator's pause of a dataset: `ingestor pause`
// and `ingestor resume`, the record that keeps a pause across restarts,
// and the control endpoint those commands reach.
//
// # The record
//
// The datasets an operator paused are recorded in RecordFile in the WAL
// directory, written atomically (walfile.WriteAtomic: tmp, fsync, rename,
// fsync the directory). The record is the truth: the consumer reads it at
// every start before it fetches anything, so a pause holds across a
// restart of the consumer or of the whole process tree until an operator
// resumes the dataset. Telling the running consumer (over the RPC channel
// in the process tree, or in the same process in the sidecar layout) only
// makes it act at once.
//
// # Crash ordering
//
// A Controller writes the record first and tells the consumer second.
// If the process dies between the two, the record holds the change and
// the consumer has not heard of it: in the process tree the supervisor's
// death takes the children with it, and the consumer that starts next
// reads the record; in the sidecar layout the consumer itself died and
// reads it when it starts again. Either way the command that asked saw
// its connection fail, and running it again is harmless: pause and
// resume are idempotent. The other order would lose a pause that the
// consumer applied but nobody recorded.
//
// # The endpoint
//
// SocketFile is a unix socket in the WAL directory, mode 0600: only the
// local machine, or the containers of the pod that mount the WAL volume,
// can reach it, and only as the ingestor's user. The supervisor serves
// it in the process tree, the consumer in the sidecar layout. It speaks
// HTTP with JSON bodies; the kernel tells the server who connected
// (SO_PEERCRED), which is what the record names as who paused.
//
// # Operator and disk pauses
//
// A dataset may be paused for two reasons that the consumer keeps apart:
// by an operator (this package), or because the WAL volume passed its
// high watermark (the consumer's backpressure). Resuming one never lifts
// the other: a dataset fetches again only when neither holds.
package pause
