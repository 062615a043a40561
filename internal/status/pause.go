package status

import (
	"time"

	"github.com/icewal/ingestor/shared/pause"
)

// OperatorPause is who paused a dataset, why and since when.
type OperatorPause struct {
	// By is the user the kernel reported for the pause command.
	By string `json:"by"`
	// Reason is the operator's text; it may be empty.
	Reason string `json:"reason,omitempty"`
	// Since is when the dataset was paused; AgeSeconds how long ago.
	Since      time.Time `json:"since"`
	AgeSeconds float64   `json:"age_seconds"`
}

// operatorPauses returns the operators' pauses: as the supervisor tells
// them, else the consumer (the sidecar layout), else as the pause record
// in the WAL directory has them while neither answers.
func operatorPauses(sup, cons *probe, walDir string) (map[string]pause.Entry, error) {
	if d := details(sup).Supervisor; d != nil {
		return d.Paused, nil
	}
	if d := details(cons).Consumer; d != nil && len(d.Datasets) > 0 {
		out := map[string]pause.Entry{}
		for name, ds := range d.Datasets {
			if ds.OperatorPause != nil {
				out[name] = *ds.OperatorPause
			}
		}
		return out, nil
	}
	rec, err := pause.Read(walDir)
	if err != nil {
		return nil, err
	}
	return rec.Datasets, nil
}
