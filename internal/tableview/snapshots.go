package tableview

import (
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/tables"
)

// Snapshot is one snapshot the table keeps.
type Snapshot struct {
	ID        int64     `json:"id"`
	ParentID  *int64    `json:"parent_id,omitempty"`
	Time      time.Time `json:"time"`
	Operation string    `json:"operation"`
	// AddedFiles, AddedRows and TotalRows are the summary's counts; -1
	// when the summary does not have them.
	AddedFiles int64 `json:"added_files"`
	AddedRows  int64 `json:"added_rows"`
	TotalRows  int64 `json:"total_rows"`
	// Dataset and Segments are the ingestor's summary fields
	// (tables.SummaryDataset, tables.SummaryFiles): the dataset whose WAL
	// segments the append added, and their UUIDs. Both are empty for a
	// commit the committer did not make.
	Dataset  string   `json:"ingestor_dataset,omitempty"`
	Segments []string `json:"ingestor_segments,omitempty"`
	// By says who made the commit: the ingestor's committer (with the
	// dataset), the engine named in the summary, or that it is unknown.
	By string `json:"by"`
	// Current marks the snapshot the main branch points at.
	Current bool `json:"current"`
	// Summary is every summary property, secrets masked.
	Summary map[string]string `json:"summary"`
}

// ByIngestor is the start of Snapshot.By for the committer's appends.
const ByIngestor = "ingestor"

// Snapshots returns the snapshots the table keeps, oldest first. It reads
// the table metadata only.
func (v *View) Snapshots() []Snapshot {
	snaps := v.tbl.Metadata().Snapshots()
	out := make([]Snapshot, 0, len(snaps))
	for i := range snaps {
		out = append(out, v.snapshot(&snaps[i]))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

func (v *View) snapshot(s *table.Snapshot) Snapshot {
	out := Snapshot{ID: s.SnapshotID, ParentID: s.ParentSnapshotID, Time: millis(s.TimestampMs), Summary: map[string]string{}}
	if cur := v.tbl.CurrentSnapshot(); cur != nil && cur.SnapshotID == s.SnapshotID {
		out.Current = true
	}
	out.AddedFiles = orMinus(summaryInt(s, "added-data-files"))
	out.AddedRows = orMinus(summaryInt(s, "added-records"))
	out.TotalRows = orMinus(summaryInt(s, "total-records"))
	if s.Summary == nil {
		out.By = "unknown: the snapshot has no summary"
		return out
	}
	out.Operation = string(s.Summary.Operation)
	for k, val := range s.Summary.Properties {
		out.Summary[v.Redact(k)] = v.Redact(val)
	}
	out.Dataset = s.Summary.Properties[tables.SummaryDataset]
	out.Segments = strings.Fields(s.Summary.Properties[tables.SummaryFiles])
	out.By = by(s.Summary.Properties)
	return out
}

// by names who made a commit from its summary properties.
func by(p iceberg.Properties) string {
	if d := p[tables.SummaryDataset]; d != "" {
		return ByIngestor + " (dataset " + d + ")"
	}
	if u := p[tables.SummaryUpkeep]; u != "" {
		return ByIngestor + " maintainer (" + u + ")"
	}
	if e := p[iceberg.EnvironmentEngineNameKey]; e != "" {
		if ver := p[iceberg.EnvironmentEngineVersionKey]; ver != "" {
			return e + " " + ver
		}
		return e
	}
	return "unknown: not the ingestor's committer, and no engine-name in the summary"
}

func orMinus(n int64, ok bool) int64 {
	if !ok {
		return -1
	}
	return n
}
