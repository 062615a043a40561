package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Sample is one series of a metric: its labels and current value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Read returns the current series of a gauge or counter (vector), for a
// role that reports its own state from the metrics it already keeps.
func Read(c prometheus.Collector) []Sample {
	var out []Sample
	ch := make(chan prometheus.Metric)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			continue
		}
		s := Sample{Labels: map[string]string{}}
		switch {
		case pb.Gauge != nil:
			s.Value = pb.Gauge.GetValue()
		case pb.Counter != nil:
			s.Value = pb.Counter.GetValue()
		default:
			continue
		}
		for _, l := range pb.Label {
			s.Labels[l.GetName()] = l.GetValue()
		}
		out = append(out, s)
	}
	return out
}

// SumBy adds up the samples by the value of one label.
func SumBy(samples []Sample, label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range samples {
		out[s.Labels[label]] += s.Value
	}
	return out
}
