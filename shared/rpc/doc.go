// Package rpc is the contract between the supervisor and its roles (the
// record path's consumer, uploader and committer, and the maintainer) when
// they run as child processes of one binary, over
// github.com/hashicorp/go-plugin.
//
// The supervisor re-executes its own binary once per role with the role's
// subcommand. The child calls ServeChild: it runs the role in a goroutine
// and serves the Role interface over go-plugin's gRPC protocol (the only
// protocol either side allows), on a Unix socket secured with AutoMTLS:
// the supervisor's client makes a certificate for each start and the
// child answers with its own, so only this supervisor can call the child. The child's stdout carries only
// go-plugin's handshake line; every log goes to stderr, which the
// supervisor passes through to its own.
//
// The stop of a child is always ordered by the supervisor: a child ignores
// SIGINT and SIGTERM (a Ctrl-C in a terminal reaches the whole process
// group), and Drain cancels the context its role runs with, which for a
// role means "drain in order and stop". The order between roles is kept by
// the roles themselves through the WAL directory locks, so the same
// ordering holds when each role runs alone as a sidecar container.
//
// A child never outlives its supervisor: the supervisor sets Pdeathsig, and
// as a fallback ServeChild checks every second whether its parent changed
// and then exits at once. It does not drain in that case: a new supervisor
// may already be starting roles that need the WAL directory locks, and
// every role recovers from what is on disk at its next start.
//
// The gRPC service (Drain, Status, Pause, Resume) is written by hand rather
// than generated: its messages are protobuf's precompiled well-known types
// (Empty, Duration, Struct), so the module needs no protoc step. Each call
// carries its context's deadline, which gRPC applies to the child's side
// as well; Drain also sends the budget left, which the child logs. The
// Status (the envelope of shared/rolestatus, with the role's typed body)
// crosses as a Struct holding its JSON object, and so do Pause's
// and Resume's requests: the dataset, and for Pause the operator's
// pause.Entry (who, why, since when), which the consumer applies
// (shared/pause). No panic crosses the RPC boundary: the server side
// turns a panic into an error.
//
// go-plugin's Kill asks the child's gRPC server to shut down. A child that
// was not draining then exits at once (code 1); one that was draining
// finishes the drain first, since the other roles' final passes wait for
// what it leaves in the WAL directory.
package rpc
