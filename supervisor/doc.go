// Package supervisor runs the three roles of the record path (consumer,
// uploader, committer), and the maintainer unless maintenance.enabled is
// false (Roles), as child processes of one ingestor process, keeps them
// running, and stops them in order.
//
// # Children
//
// Each role is the ingestor binary re-executed with the role's subcommand
// (`<role> --config <path>`), started through go-plugin (see shared/rpc)
// with AutoMTLS. A child's stderr, where its JSON logs go, is passed through
// to the supervisor's stderr line by line; its stdout carries only the
// handshake. The kernel kills a child when the supervisor dies (Pdeathsig
// SIGKILL), and the child also watches its parent itself, so no child is
// left behind by a supervisor that was killed.
//
// # Restarts
//
// A child that exits while the supervisor is not stopping is restarted
// alone; the other roles keep working, since they meet only through the WAL
// directory. Restarts wait 1s, doubling up to 30s; the wait goes back to 1s
// after a child has run for 60s. Every role recovers from what is on disk
// at start, so a restart needs nothing from the supervisor. Metrics:
// ingestor_supervisor_role_up{role} and
// ingestor_supervisor_role_restarts_total{role}.
//
// # Drain
//
// When Run's context ends (the command cancels it on SIGTERM or SIGINT),
// the supervisor asks all three children to Drain at the same time, with
// one budget for the whole shutdown: ingestion.drainTimeoutSeconds counted
// from the cancellation. It then waits for each child to exit and kills
// any child still running when the budget is spent, and Run returns nil.
//
// Why at the same time and not consumer, then uploader, then committer:
// the order is already kept where it matters, in the WAL directory. The
// uploader's final pass waits until the consumer's directory lock is
// released, and the committer's waits for both the consumer's and the
// uploader's, each bounded by the same drain budget. That ordering holds
// whatever starts the roles (this supervisor, or three sidecar containers
// that all get SIGTERM at once), and a lock is released by the kernel even
// when its holder dies, so a crashed consumer cannot hold the others back.
// Draining at once also lets the uploader and the committer work through
// files that were ready before the stop while the consumer is still
// releasing its partitions, which leaves more of the budget for the final
// passes. A sequential drain would add nothing to the ordering and would
// spend the budget one role at a time.
//
// # Pause
//
// `ingestor pause` and `ingestor resume` reach the supervisor through the
// control socket in the WAL directory (shared/pause), which the command
// layer serves with Pauses. A request is recorded in the WAL directory
// first and then sent to the consumer child over the RPC channel; after
// each start of a consumer child the supervisor sends it the whole record
// again (pause.Controller.Sync), since a request may have been recorded
// while the child started and could not be reached. Status lists the
// operators' pauses under "paused".
//
// The supervisor's own /metrics endpoint is served by the command layer
// (shared/metrics), which stops it only after Run has returned, so the
// endpoint stays up during the drain.
package supervisor
