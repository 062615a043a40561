package rpc

import (
	"context"

	"github.com/icewal/ingestor/shared/pause"
	"github.com/icewal/ingestor/shared/rolestatus"
)

// Role is what each child process serves to the supervisor.
type Role interface {
	// Drain starts the role's orderly stop, by cancelling the context its
	// Run got, and returns when Run has returned (with Run's error, if
	// any) or when ctx ends.
	Drain(ctx context.Context) error
	// Status reports the role's identity, state and own status: the
	// envelope of shared/rolestatus, whose body the child's status
	// function fills.
	Status(ctx context.Context) (rolestatus.Status, error)
	// Pause stops taking in the dataset's records: an operator's pause
	// (see shared/pause), which the consumer applies; roles that have
	// nothing to pause answer nil.
	Pause(ctx context.Context, dataset string, e pause.Entry) error
	// Resume lifts the operator's pause of the dataset; roles that have
	// nothing to pause answer nil.
	Resume(ctx context.Context, dataset string) error
}

// Pauser is implemented by roles that can pause a dataset (the
// consumer); a child given one with WithPauser passes Pause and Resume on
// to it.
type Pauser = pause.Applier
