package committer

import (
	"context"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// applyHandoffs commits the maintainer's compaction hand-offs of d
// (walfile.Handoff), each as one replace snapshot, on tbl: the table as
// the committer's append left it, or nil to load it when there are any.
// The committer is this pod's one writer of the table's metadata: the
// replace comes after its append and never races it, so upkeep never
// makes an append wait or retry (another pod's append may still make the
// replace retry, which is a reload and a commit of metadata).
//
// A failure leaves the note for the next pass; nothing of it is in the
// table until its commit lands.
//
// It returns the table as its last commit left it (tbl when there was
// nothing to apply), nil after a failure: what the next append may start
// from (reuse.go).
func (c *Committer) applyHandoffs(ctx context.Context, log *slog.Logger, d config.Dataset, tbl *table.Table) *table.Table {
	notes, bad, err := walfile.ListHandoffs(c.dir, d.Name)
	if err != nil {
		log.Error("list compaction hand-offs", "err", err)
		return nil
	}
	for _, p := range bad {
		// The maintainer writes notes atomically: only a damaged disk
		// makes one unreadable. Its files stay orphans, its rows are in
		// the files it would have replaced.
		log.Warn("unreadable compaction hand-off left in place; its compacted files are orphans", "file", p)
	}
	if len(notes) == 0 {
		return tbl
	}
	cat, err := c.catalog(ctx)
	if err != nil {
		log.Error("open catalog for a compaction hand-off", "err", err)
		return nil
	}
	if tbl == nil {
		if tbl, err = cat.LoadTable(ctx, catalog.ToIdentifier(d.TableIdent()...)); err != nil {
			log.Error("load table for a compaction hand-off", "err", err)
			return nil
		}
	}
	for _, n := range notes {
		var beforeCommit func(int)
		if c.beforeCommit != nil {
			beforeCommit = func(attempt int) { c.beforeCommit(ctx, d.Name, attempt) }
		}
		start := time.Now()
		next, res, err := tables.ApplyHandoff(ctx, cat, tbl, n.Handoff, beforeCommit)
		if err != nil {
			c.metrics.handoffFailures.WithLabelValues(d.Name).Inc()
			log.Warn("compaction hand-off not applied; retried at the next pass", "handoff", n.ID, "err", err)
			return nil
		}
		tbl = next
		if res.Applied > 0 {
			log.Info("committed the maintainer's compaction", "handoff", n.ID, "files", res.Applied,
				"rows", res.Rows, "bytes", res.Bytes, "attempts", res.Attempts,
				"delete_files_removed", res.DeleteFilesRemoved, "delete_files_read", res.TargetReads,
				"duration_ms", time.Since(start).Milliseconds())
			// Dying here: the replace is committed and the note still
			// on disk; the next pass finds the replace in the table
			// (tables.SummaryHandoff) and only deletes the note.
			failpoint.Hit(failpoint.CommitterAfterReplace)
		}
		if res.Dropped > 0 {
			log.Info("compacted files dropped: another writer replaced or deleted rows of their files first; left to the orphan cleanup",
				"handoff", n.ID, "files", res.DroppedFiles, "for_deletes", res.DroppedForDeletes)
		}
		c.metrics.handoffs.WithLabelValues(d.Name, handoffApplied).Add(float64(res.Applied))
		c.metrics.handoffs.WithLabelValues(d.Name, handoffDropped).Add(float64(res.Dropped))
		if err := walfile.Remove(n.Path); err != nil {
			log.Error("delete an applied compaction hand-off; the next pass finds it applied", "file", n.Path, "err", err)
			continue
		}
		if err := walfile.SyncDir(c.dir); err != nil {
			log.Error("sync wal dir after a hand-off's deletion", "err", err)
		}
	}
	return tbl
}
