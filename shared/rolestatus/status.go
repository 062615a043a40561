package rolestatus

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/icewal/ingestor/shared/metrics"
	"github.com/icewal/ingestor/shared/role"
)

// States a child reports in Status.State.
const (
	// StateRunning: the role's Run is working.
	StateRunning = "running"
	// StateDraining: the role's context was cancelled and Run has not
	// returned yet.
	StateDraining = "draining"
	// StateStopped: Run has returned; the process is about to exit.
	StateStopped = "stopped"
)

// Status is the envelope of a process's status, on its /status endpoint
// and as a child's answer to the supervisor's Status call.
type Status struct {
	// Role is the process's name: supervisor, consumer, uploader,
	// committer or maintainer. It says which body Details holds.
	Role string `json:"role"`
	// PID is the process id.
	PID int `json:"pid"`
	// MetricsAddress is the address the child's /metrics endpoint is bound
	// to; a child tells it over RPC.
	MetricsAddress string `json:"metrics_address,omitempty"`
	// State is StateRunning, StateDraining or StateStopped; a child tells
	// it over RPC.
	State string `json:"state,omitempty"`
	// Time is when the answer was made; the /status endpoint tells it.
	Time time.Time `json:"time,omitzero"`
	// Details is the role's own status.
	Details Details `json:"details,omitzero"`
}

// Details holds the body of one role, the one Status.Role names; the
// others are nil. In JSON it is that body's object.
type Details struct {
	Supervisor *Supervisor
	Consumer   *Consumer
	Uploader   *Uploader
	Committer  *Committer
	Maintainer *Maintainer
}

// IsZero reports whether no body is set.
func (d Details) IsZero() bool { return d.body() == nil }

// body returns the one body that is set, or nil.
func (d Details) body() any {
	switch {
	case d.Supervisor != nil:
		return d.Supervisor
	case d.Consumer != nil:
		return d.Consumer
	case d.Uploader != nil:
		return d.Uploader
	case d.Committer != nil:
		return d.Committer
	case d.Maintainer != nil:
		return d.Maintainer
	}
	return nil
}

// MarshalJSON writes the body that is set, or null.
func (d Details) MarshalJSON() ([]byte, error) {
	n := 0
	for _, set := range []bool{d.Supervisor != nil, d.Consumer != nil, d.Uploader != nil, d.Committer != nil, d.Maintainer != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		return nil, errors.New("status details: more than one role's body is set")
	}
	return json.Marshal(d.body())
}

// UnmarshalJSON decodes the envelope and its details as the body of the
// role it names.
func (s *Status) UnmarshalJSON(b []byte) error {
	type plain Status
	aux := struct {
		*plain
		// Shadows plain.Details: the body is decoded once the role is known.
		Details json.RawMessage `json:"details"`
	}{plain: (*plain)(s)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	s.Details = Details{}
	if len(aux.Details) == 0 || string(aux.Details) == "null" {
		return nil
	}
	var body any
	switch s.Role {
	case metrics.Supervisor:
		s.Details.Supervisor = &Supervisor{}
		body = s.Details.Supervisor
	case role.Consumer:
		s.Details.Consumer = &Consumer{}
		body = s.Details.Consumer
	case role.Uploader:
		s.Details.Uploader = &Uploader{}
		body = s.Details.Uploader
	case role.Committer:
		s.Details.Committer = &Committer{}
		body = s.Details.Committer
	case role.Maintainer:
		s.Details.Maintainer = &Maintainer{}
		body = s.Details.Maintainer
	default:
		return fmt.Errorf("status details of role %q: no such role", s.Role)
	}
	if err := json.Unmarshal(aux.Details, body); err != nil {
		return fmt.Errorf("status details of %s: %w", s.Role, err)
	}
	return nil
}
