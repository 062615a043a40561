package rolestatus

import "time"

// Maintainer is what the maintainer tells: its interval and each table's
// health after its last pass.
type Maintainer struct {
	// IntervalSeconds is the time between passes.
	IntervalSeconds float64 `json:"interval_seconds"`
	// Datasets holds each configured dataset, by name.
	Datasets map[string]MaintainerDataset `json:"datasets"`
}

// MaintainerDataset is one dataset's table as the maintainer last saw it.
// The gauges are absent until a pass measured them.
type MaintainerDataset struct {
	// Table is the dataset's table.
	Table string `json:"table"`
	// SnapshotsExpired counts the snapshots expired since start.
	SnapshotsExpired float64 `json:"snapshots_expired"`
	// Snapshots kept, the current metadata.json's bytes, the data
	// manifests and data files of the current snapshot, the files waiting
	// for compaction, and the bytes compaction rewrote since start.
	Snapshots     *float64 `json:"snapshots,omitempty"`
	MetadataBytes *float64 `json:"metadata_bytes,omitempty"`
	Manifests     *float64 `json:"manifests,omitempty"`
	DataFiles     *float64 `json:"data_files,omitempty"`
	SmallFiles    *float64 `json:"small_files,omitempty"`
	// CompactionsWaiting is the compaction hand-offs that wait for the
	// committer to commit their replace.
	CompactionsWaiting *float64 `json:"compactions_waiting,omitempty"`
	RewrittenBytes     *float64 `json:"rewritten_bytes,omitempty"`
	// DeleteFiles is the live delete files of the current snapshot,
	// PartitionDeleteFiles those of the partition with the most, and
	// DeletedRows their records (rows of position deletes, keys of
	// equality deletes): the delete debt every read pays until compaction
	// resolves it. DeletesApplied counts the rows compaction left out of
	// its files for their deletes since start.
	DeleteFiles          *float64 `json:"delete_files,omitempty"`
	PartitionDeleteFiles *float64 `json:"partition_delete_files_max,omitempty"`
	DeletedRows          *float64 `json:"deleted_rows,omitempty"`
	DeletesApplied       *float64 `json:"deletes_applied,omitempty"`
	// The last outcome of each step of a pass; absent until it ran.
	LastLoad      *StepOutcome `json:"last_load,omitempty"`
	LastExpire    *StepOutcome `json:"last_expire,omitempty"`
	LastManifests *StepOutcome `json:"last_manifests,omitempty"`
	LastCompact   *StepOutcome `json:"last_compact,omitempty"`
	LastOrphans   *StepOutcome `json:"last_orphans,omitempty"`
}

// StepOutcome is a step's last success and last error, the error kept
// after later successes with its time.
type StepOutcome struct {
	LastSuccess time.Time  `json:"last_success,omitzero"`
	LastError   *StepError `json:"last_error,omitempty"`
}

// StepError is a failed step.
type StepError struct {
	// Time is when it failed, AgeSeconds how long ago.
	Time       time.Time `json:"time"`
	AgeSeconds float64   `json:"age_seconds"`
	// Error is the error's text, cleared of secrets.
	Error string `json:"error"`
}
