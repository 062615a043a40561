package consumer

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Status reports what an operator asks of the consumer: whether
// consumption is paused and why, how full the WAL volume is, and per
// dataset the open segments, the assigned partitions, the lag of each
// partition (records behind the high watermark at the last fetch), the
// records consumed and those dropped by reason. It reads only the
// consumer's own metrics and backpressure gate.
func (c *Consumer) Status() map[string]any {
	c.gate.mu.Lock()
	paused, disk, manual, usedPct := c.gate.paused, c.gate.disk, c.gate.manual, c.gate.usedPct
	c.gate.mu.Unlock()
	reasons := []string{}
	if disk {
		reasons = append(reasons, "wal_volume_above_high_watermark")
	}
	if manual {
		reasons = append(reasons, "supervisor")
	}

	segments := statusSeries(c.m.segmentsOpen)
	assigned := statusSeries(c.m.assigned)
	records := statusSeries(c.m.records)
	dropped := statusSeries(c.m.dropped)
	pausedDs := statusSeries(c.m.paused)
	lag := statusSeries(c.m.lag)

	datasets := map[string]any{}
	for _, d := range c.cfg.Datasets {
		lagByPartition := map[string]float64{}
		var total float64
		for _, s := range lag {
			if s.labels["dataset"] == d.Name {
				lagByPartition[s.labels["partition"]] = s.value
				total += s.value
			}
		}
		droppedByReason := map[string]float64{}
		for _, s := range dropped {
			if s.labels["dataset"] == d.Name {
				droppedByReason[s.labels["reason"]] += s.value
			}
		}
		datasets[d.Name] = map[string]any{
			"topic":               d.Topic,
			"consumer_group":      d.ConsumerGroup,
			"segments_open":       sumFor(segments, d.Name),
			"partitions_assigned": sumFor(assigned, d.Name),
			"paused":              sumFor(pausedDs, d.Name) > 0,
			"lag_records":         lagByPartition,
			"lag_records_total":   total,
			"records":             sumFor(records, d.Name),
			"dropped":             droppedByReason,
		}
	}
	return map[string]any{
		"paused":              paused,
		"paused_reasons":      reasons,
		"wal_volume_used_pct": usedPct,
		"high_watermark_pct":  c.gate.high,
		"resume_below_pct":    c.gate.high - resumeGapPct,
		"datasets":            datasets,
	}
}

// statusSample is one series of a metric: its labels and current value.
type statusSample struct {
	labels map[string]string
	value  float64
}

// statusSeries reads the current series of a gauge or counter (vector).
func statusSeries(c prometheus.Collector) []statusSample {
	var out []statusSample
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
		s := statusSample{labels: map[string]string{}}
		switch {
		case pb.Gauge != nil:
			s.value = pb.Gauge.GetValue()
		case pb.Counter != nil:
			s.value = pb.Counter.GetValue()
		default:
			continue
		}
		for _, l := range pb.Label {
			s.labels[l.GetName()] = l.GetValue()
		}
		out = append(out, s)
	}
	return out
}

// sumFor adds the values of the series of one dataset.
func sumFor(samples []statusSample, dataset string) float64 {
	var v float64
	for _, s := range samples {
		if s.labels["dataset"] == dataset {
			v += s.value
		}
	}
	return v
}
