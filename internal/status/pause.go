package status

import (
	"encoding/json"
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
	decode := func(v any) (map[string]pause.Entry, bool) {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, false
		}
		var out map[string]pause.Entry
		return out, json.Unmarshal(b, &out) == nil
	}
	if d := details(sup); d != nil {
		if v, ok := d["paused"]; ok {
			if out, ok := decode(v); ok {
				return out, nil
			}
		}
	}
	if d := details(cons); d != nil {
		dss, _ := d["datasets"].(map[string]any)
		found := map[string]any{}
		for name, v := range dss {
			if ds, ok := v.(map[string]any); ok && ds["operator_pause"] != nil {
				found[name] = ds["operator_pause"]
			}
		}
		if out, ok := decode(found); ok && len(dss) > 0 {
			return out, nil
		}
	}
	rec, err := pause.Read(walDir)
	if err != nil {
		return nil, err
	}
	return rec.Datasets, nil
}
