package rolestatus

import "time"

// Committer is what the committer tells: its interval and each dataset's
// commits.
type Committer struct {
	// IntervalSeconds is the commit interval.
	IntervalSeconds float64 `json:"interval_seconds"`
	// Datasets holds each configured dataset, by name.
	Datasets map[string]CommitterDataset `json:"datasets"`
}

// CommitterDataset is one dataset as the committer sees it.
type CommitterDataset struct {
	// Table is the dataset's table.
	Table string `json:"table"`
	// Commits counts the commits made since start.
	Commits float64 `json:"commits"`
	// FilesWaitingOffsetCommit counts the uploaded files waiting for a
	// Kafka offset commit.
	FilesWaitingOffsetCommit float64 `json:"files_waiting_offset_commit"`
	// AppendsStopped is true while segments written for another table stop
	// the appends; LastError says which and why.
	AppendsStopped bool `json:"appends_stopped"`
	// SegmentsHandedBack counts, by reason (missing, size, aged), the
	// uploaded segments handed back to the uploader since start because
	// their objects were unfit for the append; absent when none.
	SegmentsHandedBack map[string]float64 `json:"segments_handed_back,omitempty"`
	// SegmentsObjectMissing counts the segments since start that the table
	// holds but whose objects were gone, their local copies kept in the
	// WAL directory's quarantine.
	SegmentsObjectMissing float64 `json:"segments_object_missing"`
	// LastCommit is the time of the last successful commit since start,
	// LastCommitAgeSeconds how long ago; both absent before the first.
	LastCommit           time.Time `json:"last_commit,omitzero"`
	LastCommitAgeSeconds *float64  `json:"last_commit_age_seconds,omitempty"`
	// LastError is the last failed attempt, kept after later successes.
	LastError *CommitError `json:"last_error,omitempty"`
}

// CommitError is a failed commit attempt.
type CommitError struct {
	// Time is when it failed, AgeSeconds how long ago.
	Time       time.Time `json:"time"`
	AgeSeconds float64   `json:"age_seconds"`
	// Reason is a value of the failures metric's reason label.
	Reason string `json:"reason"`
	// Step is what the committer was doing.
	Step string `json:"step"`
	// Error is the error's text, cleared of secrets.
	Error string `json:"error"`
}
