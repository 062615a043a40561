package supervisor

import (
	"os"
	"time"

	pmetrics "github.com/icewal/ingestor/shared/metrics"
)

// Status reports what an operator asks of the supervisor itself, served
// on its metrics endpoint's /status: its PID and uptime, and per role
// whether a child runs, its PID, since when, and how often it was
// restarted; and the datasets an operator paused, with who, why and
// since when, as the pause record has them.
func (s *Supervisor) Status() map[string]any {
	now := time.Now()
	restarts := pmetrics.Read(s.metrics.restarts)
	s.mu.Lock()
	children := map[string]any{}
	for _, r := range s.roles {
		ch := map[string]any{"running": false, "restarts": sumRole(restarts, r)}
		if c := s.children[r]; c != nil {
			ch["running"] = true
			ch["pid"] = c.pid
			ch["started"] = c.started.UTC().Format(time.RFC3339)
			ch["uptime_seconds"] = now.Sub(c.started).Seconds()
		}
		children[r] = ch
	}
	s.mu.Unlock()
	return map[string]any{
		"pid":            os.Getpid(),
		"started":        s.started.UTC().Format(time.RFC3339),
		"uptime_seconds": now.Sub(s.started).Seconds(),
		"children":       children,
		"paused":         s.pauses.Record().Datasets,
	}
}

func sumRole(samples []pmetrics.Sample, roleName string) float64 {
	var v float64
	for _, s := range samples {
		if s.Labels["role"] == roleName {
			v += s.Value
		}
	}
	return v
}
