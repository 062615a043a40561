package rolestatus

import "github.com/icewal/ingestor/shared/pause"

// Consumer is what the consumer tells: whether consumption is paused and
// why, how full the WAL volume is, and each dataset's state.
type Consumer struct {
	// Paused tells whether any consumption is paused; PausedReasons says
	// why: wal_volume_above_high_watermark, operator.
	Paused        bool     `json:"paused"`
	PausedReasons []string `json:"paused_reasons"`
	// WALVolumeUsedPct is the WAL volume's use the consumer measured last.
	WALVolumeUsedPct float64 `json:"wal_volume_used_pct"`
	// HighWatermarkPct is where consumption pauses, ResumeBelowPct where
	// it resumes.
	HighWatermarkPct float64 `json:"high_watermark_pct"`
	ResumeBelowPct   float64 `json:"resume_below_pct"`
	// Datasets holds each configured dataset, by name.
	Datasets map[string]ConsumerDataset `json:"datasets"`
}

// ConsumerDataset is one dataset as the consumer sees it.
type ConsumerDataset struct {
	// Topic and ConsumerGroup are the dataset's, from the configuration.
	Topic         string `json:"topic"`
	ConsumerGroup string `json:"consumer_group"`
	// SegmentsOpen counts the open segments, PartitionsAssigned the
	// Kafka partitions assigned to this consumer.
	SegmentsOpen       float64 `json:"segments_open"`
	PartitionsAssigned float64 `json:"partitions_assigned"`
	// Paused tells whether the dataset's fetching is paused;
	// PausedReasons says why: disk, operator.
	Paused        bool     `json:"paused"`
	PausedReasons []string `json:"paused_reasons"`
	// LagRecords is the records behind the high watermark at the last
	// fetch, by partition; LagRecordsTotal adds them up.
	LagRecords      map[string]float64 `json:"lag_records"`
	LagRecordsTotal float64            `json:"lag_records_total"`
	// Records counts the records consumed, Dropped those dropped, by
	// reason.
	Records float64            `json:"records"`
	Dropped map[string]float64 `json:"dropped"`
	// UnassignedPartitions and Stalled are what the watchdog sees: the
	// partitions no member of the group owns, and its problems now.
	UnassignedPartitions float64  `json:"unassigned_partitions"`
	Stalled              []string `json:"stalled"`
	// OperatorPause is an operator's pause of the dataset; nil when none.
	OperatorPause *pause.Entry `json:"operator_pause,omitempty"`
}
