package maintainer

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"
)

// DefaultOrphanInterval is how often the orphan cleanup lists a table's
// location: a listing of every object, which costs far more than the
// other steps, for objects that only cost storage while they wait.
const DefaultOrphanInterval = time.Hour

// deleteOrphans deletes the objects under tbl's location that no kept
// snapshot or metadata refers to and that are older than the margin
// (maintenance.orphanAgeHours): what a crash during the deletion of
// expired files left, a compaction's file whose commit never landed, a
// metadata.json a failed commit wrote. iceberg-go's DeleteOrphanFiles
// lists the location and compares it with every file the table's
// metadata.json versions, manifest lists and manifests name.
//
// The margin is what keeps the uploader's objects safe: a segment is
// uploaded into the table's data directory before the committer appends
// it, so until then no metadata names it. Every uploaded segment older
// than the margin that the committer has not appended yet would be
// deleted; the margin must outlast any committer outage (3 days by
// default, Iceberg's own).
//
// Dying here leaves some orphans undeleted; the next cleanup deletes them.
func (m *Maintainer) deleteOrphans(ctx context.Context, tbl *table.Table) (int, int64, error) {
	res, err := tbl.DeleteOrphanFiles(ctx,
		table.WithFilesOlderThan(m.orphanAge),
		table.WithPrefixMismatchMode(table.PrefixMismatchError))
	if err != nil {
		return 0, 0, fmt.Errorf("delete orphan files: %w", err)
	}
	return len(res.DeletedFiles), res.TotalSizeBytes, nil
}

// orphansDue reports whether the orphan cleanup of dataset is due: at the
// first pass, then once per orphanInterval.
func (m *Maintainer) orphansDue(dataset string) bool {
	if m.orphanAge <= 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	last, ok := m.lastOrphans[dataset]
	if ok && m.now().Sub(last) < m.orphanInterval {
		return false
	}
	if m.lastOrphans == nil {
		m.lastOrphans = map[string]time.Time{}
	}
	m.lastOrphans[dataset] = m.now()
	return true
}
