package consumer

import (
	"sort"

	pmetrics "github.com/icewal/ingestor/shared/metrics"
	"github.com/icewal/ingestor/shared/rolestatus"
)

// Status reports what an operator asks of the consumer: whether
// consumption is paused and why (per dataset: the WAL volume, an
// operator's pause with who, why and since when), how full the WAL volume is, and per
// dataset the open segments, the assigned partitions, the lag of each
// partition (records behind the high watermark at the last fetch), the
// records consumed and those dropped by reason. It reads only the
// consumer's own metrics and backpressure gate.
func (c *Consumer) Status() rolestatus.Consumer {
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
	waiting := pmetrics.Read(c.m.schemaWaiting)

	datasets := map[string]rolestatus.ConsumerDataset{}
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
		if sumFor(waiting, d.Name) > 0 {
			dsReasons = append(dsReasons, PauseSchemaRegistry)
		}
		ds := rolestatus.ConsumerDataset{
			Topic:              d.Topic,
			ConsumerGroup:      d.ConsumerGroup,
			SegmentsOpen:       sumFor(segments, d.Name),
			PartitionsAssigned: sumFor(assigned, d.Name),
			Paused:             len(dsReasons) > 0,
			PausedReasons:      dsReasons,
			LagRecords:         lagByPartition,
			LagRecordsTotal:    total,
			Records:            sumFor(records, d.Name),
			Dropped:            droppedByReason,
			// What the watchdog sees (watchdog.go).
			UnassignedPartitions: sumFor(unassigned, d.Name),
			Stalled:              stalledReasons,
		}
		if operator {
			ds.OperatorPause = &e
		}
		datasets[d.Name] = ds
	}
	return rolestatus.Consumer{
		Paused:           len(reasons) > 0,
		PausedReasons:    reasons,
		WALVolumeUsedPct: gs.usedPct,
		HighWatermarkPct: c.gate.high,
		ResumeBelowPct:   c.gate.high - resumeGapPct,
		Datasets:         datasets,
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
