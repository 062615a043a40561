package rolestatus

import (
	"time"

	"github.com/icewal/ingestor/shared/pause"
)

// Supervisor is what the supervisor tells of itself and of its children.
type Supervisor struct {
	// PID is the supervisor's process id.
	PID int `json:"pid"`
	// Started is when the supervisor started, to the second.
	Started time.Time `json:"started"`
	// UptimeSeconds is how long it has run.
	UptimeSeconds float64 `json:"uptime_seconds"`
	// Children holds each role the supervisor runs, by name.
	Children map[string]Child `json:"children"`
	// Paused are the datasets an operator paused, with who, why and since
	// when, as the pause record has them.
	Paused map[string]pause.Entry `json:"paused"`
}

// Child is one role as the supervisor sees it.
type Child struct {
	// Running tells whether a child process runs the role now.
	Running bool `json:"running"`
	// Restarts counts the role's restarts.
	Restarts float64 `json:"restarts"`
	// PID, Started (to the second) and UptimeSeconds are the running
	// child's; absent while none runs.
	PID           int       `json:"pid,omitempty"`
	Started       time.Time `json:"started,omitzero"`
	UptimeSeconds *float64  `json:"uptime_seconds,omitempty"`
}
