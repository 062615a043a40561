package rpc

import (
	"context"

	"github.com/icewal/ingestor/shared/pause"
)

// States a child reports in Status.
const (
	// StateRunning: the role's Run is working.
	StateRunning = "running"
	// StateDraining: the role's context was cancelled and Run has not
	// returned yet.
	StateDraining = "draining"
	// StateStopped: Run has returned; the process is about to exit.
	StateStopped = "stopped"
)

// Role is what each child process serves to the supervisor.
type Role interface {
	// Drain starts the role's orderly stop, by cancelling the context its
	// Run got, and returns when Run has returned (with Run's error, if
	// any) or when ctx ends.
	Drain(ctx context.Context) error
	// Status reports the role's identity and state.
	Status(ctx context.Context) (Status, error)
	// Pause stops taking in the dataset's records: an operator's pause
	// (see shared/pause), which the consumer applies; roles that have
	// nothing to pause answer nil.
	Pause(ctx context.Context, dataset string, e pause.Entry) error
	// Resume lifts the operator's pause of the dataset; roles that have
	// nothing to pause answer nil.
	Resume(ctx context.Context, dataset string) error
}

// Status is a child's answer to Status.
type Status struct {
	// Role is the role's name: consumer, uploader or committer.
	Role string `json:"role"`
	// PID is the child's process id.
	PID int `json:"pid"`
	// MetricsAddress is the address the child's /metrics endpoint is bound to.
	MetricsAddress string `json:"metrics_address,omitempty"`
	// State is StateRunning, StateDraining or StateStopped.
	State string `json:"state"`
	// Details is free-form, role-specific information. It crosses the
	// process boundary as JSON, so numbers come back as float64.
	Details map[string]any `json:"details,omitempty"`
}

// Pauser is implemented by roles that can pause a dataset (the
// consumer); a child given one with WithPauser passes Pause and Resume on
// to it.
type Pauser = pause.Applier
