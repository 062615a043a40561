package consumer

import (
	"sort"

	pmetrics "github.com/icewal/ingestor/shared/metrics"
)

// Status reports what an operator asks of the consumer: whether
// consumption is paused and why (per dataset: the WAL volume, an
// operator's pause with who, why and since when), how full the WAL volume is, and per
// dataset the open segments, the assigned partitions, the lag of each
// partition (records behind the high watermark at the last fetch), the
// records consumed and those dropped by reason. It reads only the
// consumer's own metrics and backpressure gate.
func (c *Consumer) Status() map[string]any {
	gs := c.gate.state()
	reasons := []string{}
	if gs.disk {
		reasons = append(reasons, "wal_volume_above_high_watermark")
	}
	if len(gs.operator) > 0 {
		reasons = append(reasons, PauseOperator)
	}

	segments := pmetrics.Read(c.m.segmentsOpen)
	assigned := pmetrics.Read(c.m.assigned)
	records := pmetrics.Read(c.m.records)
	dropped := pmetrics.Read(c.m.dropped)
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
		dsReasons := []string{}
		if gs.disk {
			dsReasons = append(dsReasons, PauseDisk)
		}
		e, operator := gs.operator[d.Name]
		if operator {
			dsReasons = append(dsReasons, PauseOperator)
		}
		ds := map[string]any{
			"topic":               d.Topic,
			"consumer_group":      d.ConsumerGroup,
			"segments_open":       sumFor(segments, d.Name),
			"partitions_assigned": sumFor(assigned, d.Name),
			"paused":              len(dsReasons) > 0,
			"paused_reasons":      dsReasons,
			"lag_records":         lagByPartition,
			"lag_records_total":   total,
			"records":             sumFor(records, d.Name),
			"dropped":             droppedByReason,
			// What the watchdog sees (watchdog.go).
			"unassigned_partitions": sumFor(unassigned, d.Name),
			"stalled":               stalledReasons,
		}
		if operator {
			ds["operator_pause"] = e
		}
		datasets[d.Name] = ds
	}
	return map[string]any{
		"paused":              len(reasons) > 0,
		"paused_reasons":      reasons,
		"wal_volume_used_pct": gs.usedPct,
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
