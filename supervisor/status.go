package supervisor

import (
	"os"
	"time"

	pmetrics "github.com/icewal/ingestor/shared/metrics"
	"github.com/icewal/ingestor/shared/rolestatus"
)

// Status reports what an operator asks of the supervisor itself, served
// on its metrics endpoint's /status: its PID and uptime, and per role
// whether a child runs, its PID, since when, and how often it was
// restarted; and the datasets an operator paused, with who, why and
// since when, as the pause record has them.
func (s *Supervisor) Status() rolestatus.Supervisor {
	now := time.Now()
	restarts := pmetrics.Read(s.metrics.restarts)
	s.mu.Lock()
	children := map[string]rolestatus.Child{}
	for _, r := range s.roles {
		ch := rolestatus.Child{Restarts: sumRole(restarts, r)}
		if c := s.children[r]; c != nil {
			up := now.Sub(c.started).Seconds()
			ch.Running = true
			ch.PID = c.pid
			ch.Started = c.started.UTC().Truncate(time.Second)
			ch.UptimeSeconds = &up
		}
		children[r] = ch
	}
	s.mu.Unlock()
	return rolestatus.Supervisor{
		PID:           os.Getpid(),
		Started:       s.started.UTC().Truncate(time.Second),
		UptimeSeconds: now.Sub(s.started).Seconds(),
		Children:      children,
		Paused:        s.pauses.Record().Datasets,
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
