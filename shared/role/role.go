// Package role holds what the roles (the record path's consumer, uploader
// and committer, and the maintainer beside it) are given by whoever starts
// them: the supervisor
// when it runs them as child processes, or the command line when each runs
// alone as a sidecar container.
package role

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the roles, as used in lock files, commands and metrics.
const (
	Consumer  = "consumer"
	Uploader  = "uploader"
	Committer = "committer"
	// Maintainer keeps the tables healthy beside the record path; it is
	// not in All, and runs when maintenance.enabled is true.
	Maintainer = "maintainer"
)

// All lists the roles in record-path order, which is also drain order.
var All = []string{Consumer, Uploader, Committer}

// Options are what a role is built with.
type Options struct {
	// Logger receives the role's structured logs.
	Logger *slog.Logger
	// Registerer receives the role's metrics; each process has its own.
	Registerer prometheus.Registerer
}

// Defaults fills a nil logger or registerer with a discarding one.
func (o Options) Defaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	return o
}
