package supervisor

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// supervisorMetrics are the supervisor's view of its children.
type supervisorMetrics struct {
	up       *prometheus.GaugeVec
	restarts *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, roles []string) (*supervisorMetrics, error) {
	m := &supervisorMetrics{
		up: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ingestor_supervisor_role_up",
			Help: "1 while the role's child process runs and answered the handshake, 0 otherwise.",
		}, []string{"role"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestor_supervisor_role_restarts_total",
			Help: "Starts of a role's child process after the first, following an unexpected exit or a failed start.",
		}, []string{"role"}),
	}
	for _, c := range []prometheus.Collector{m.up, m.restarts} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register supervisor metrics: %w", err)
		}
	}
	// Every role shows from the first scrape, with 0 restarts.
	for _, r := range roles {
		m.up.WithLabelValues(r).Set(0)
		m.restarts.WithLabelValues(r).Add(0)
	}
	return m, nil
}
