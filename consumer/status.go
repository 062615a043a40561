package consumer

import (
	"sort"

	pmetrics "github.com/icewal/ingestor/shared/metrics"
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

	segments := pmetrics.Read(c.m.segmentsOpen)
	assigned := pmetrics.Read(c.m.assigned)
	records := pmetrics.Read(c.m.records)
	dropped := pmetrics.Read(c.m.dropped)
	pausedDs := pmetrics.Read(c.m.paused)
	lag := pmetrics.Read(c.m.lag)
	unassigned := pmetrics.Read(c.m.unassigned)
	stalled := pmetrics.Read(c.m.stalled)

	datasets := map[string]any{}
	for _, d := range c.cfg.Datasets {
		lagByPartition := map[string]float64{}
		var total float64
		for _, s := range lag {
			if s.Labels["dataset"] == d.Name {
				lagByPartition[s.Labels["partition"]] = s.Value
				total += s.Value
			}
		}
		droppedByReason := map[string]float64{}
		for _, s := range dropped {
			if s.Labels["dataset"] == d.Name {
				droppedByReason[s.Labels["reason"]] += s.Value
			}
		}
		stalledReasons := []string{}
		for _, s := range stalled {
			if s.Labels["dataset"] == d.Name && s.Value > 0 {
				stalledReasons = append(stalledReasons, s.Labels["reason"])
			}
		}
		sort.Strings(stalledReasons)
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
			// What the watchdog sees (watchdog.go).
			"unassigned_partitions": sumFor(unassigned, d.Name),
			"stalled":               stalledReasons,
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

// sumFor adds the values of the series of one dataset.
func sumFor(samples []pmetrics.Sample, dataset string) float64 {
	var v float64
	for _, s := range samples {
		if s.Labels["dataset"] == dataset {
			v += s.Value
		}
	}
	return v
}
