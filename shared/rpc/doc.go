// Package rpc is the contract between the supervisor and the three roles of
// the record path (consumer, uploader, committer) when they run as child
// processes of one binary, over github.com/hashicorp/go-plugin.
//
// The supervisor re-executes its own binary once per role with the role's
// subcommand. The child calls ServeChild: it runs the role in a goroutine
// and serves the Role interface over go-plugin's net/rpc protocol, on a
// Unix socket secured with AutoMTLS. The child's stdout carries only
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
// Methods take a context on the Go side. net/rpc carries no context, so the
// client sends the time left before the context's deadline with each call
// and stops waiting when the context ends; the child applies that time to
// its own context. No panic crosses the RPC boundary: the server side turns
// a panic into an error.
package rpc
