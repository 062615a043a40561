package maintainer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// upkeep runs the steps of one pass over d's table, each a commit of its
// own, then records the table's health.
func (m *Maintainer) upkeep(ctx context.Context, d config.Dataset) {
	log := m.log.With("dataset", d.Name, "table", d.Table)
	release, ok := m.lease.hold(d.Name)
	m.metrics.leaseHeld.WithLabelValues(d.Name).Set(map[bool]float64{true: 1}[ok])
	if !ok {
		log.Debug("another pod's maintainer holds the table's lease")
		return
	}
	// Held to the end of the pass: a rebalance that takes the lease away
	// waits for it.
	defer release()
	cat, err := m.catalog(ctx)
	if err != nil {
		m.fail(ctx, log, d.Name, stepLoad, fmt.Errorf("open catalog: %w", err))
		return
	}
	tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier(d.TableIdent()...))
	if errors.Is(err, catalog.ErrNoSuchTable) {
		log.Debug("no table yet; the committer creates it at its first append")
		return
	}
	if err != nil {
		// The committer creates a missing table at its first commit; the
		// maintainer never does.
		m.fail(ctx, log, d.Name, stepLoad, fmt.Errorf("load table: %w", err))
		return
	}
	// The expiry's deletes after its commit go through pacedDeletes, a
	// few at a time, so that they do not queue the committer's appends
	// behind a burst of thousands at the store.
	paced := func(t *table.Table) *table.Table {
		return pacedDeletes(cat, t, m.metrics.expiredDeleted.WithLabelValues(d.Name), d.BloomFilterColumns...)
	}
	view := paced(tbl)
	if next, err := m.retry(ctx, cat, view, func(t *table.Table, tx *table.Transaction) (bool, error) { return m.expire(t, tx) }, paced); err != nil {
		m.fail(ctx, log, d.Name, stepExpire, err)
	} else {
		if next != view {
			n := len(tbl.Metadata().Snapshots()) - len(next.Metadata().Snapshots())
			m.metrics.runs.WithLabelValues(d.Name, stepExpire).Inc()
			m.metrics.expired.WithLabelValues(d.Name).Add(float64(max(n, 0)))
			log.Info("expired snapshots", "snapshots", n, "kept", len(next.Metadata().Snapshots()))
			// Dying here: the expiry is committed and its files deleted;
			// the next pass has nothing to expire yet. Dying while they
			// are deleted leaves the rest to the orphan cleanup.
			failpoint.Hit(failpoint.MaintainerAfterExpire)
			tbl = withFS(cat, next, tbl.FS)
		}
		m.done(d.Name, stepExpire)
	}
	if next, err := m.retry(ctx, cat, tbl, func(t *table.Table, tx *table.Transaction) (bool, error) { return m.mergeManifests(ctx, tx, t) }, nil); err != nil {
		m.fail(ctx, log, d.Name, stepManifests, err)
	} else {
		if next != tbl {
			m.metrics.runs.WithLabelValues(d.Name, stepManifests).Inc()
			log.Info("rewrote manifests", "manifests", m.dataManifests(ctx, next))
			// Dying here: the rewrite is committed; the old manifests
			// stay referenced by older snapshots until expiry.
			failpoint.Hit(failpoint.MaintainerAfterManifest)
		}
		tbl = next
		m.done(d.Name, stepManifests)
	}
	if plan, err := m.compact(ctx, log, cat, tbl, d.Name); err != nil {
		m.fail(ctx, log, d.Name, stepCompact, err)
	} else {
		if plan.groups > 0 {
			m.metrics.runs.WithLabelValues(d.Name, stepCompact).Inc()
			m.metrics.rewrittenBytes.WithLabelValues(d.Name).Add(float64(plan.bytes))
			m.metrics.rewrittenFiles.WithLabelValues(d.Name).Add(float64(plan.files))
			m.metrics.deletesApplied.WithLabelValues(d.Name).Add(float64(plan.deleted))
			log.Info("compacted files; the committer commits their replace", "groups", plan.groups, "files", plan.files, "bytes", plan.bytes, "deleted_rows", plan.deleted)
			// Dying here: the hand-off note is written; the committer
			// applies it whether or not this process lives.
			failpoint.Hit(failpoint.MaintainerAfterCompact)
		}
		waiting := plan.handoffs
		if plan.groups > 0 {
			waiting = 1 // the note just written
		}
		m.metrics.compactionsWaiting.WithLabelValues(d.Name).Set(float64(waiting))
		if plan.handoffs == 0 {
			// While a note waits, the table's files are as the last
			// count saw them, minus what the committer applied since.
			m.metrics.smallFiles.WithLabelValues(d.Name).Set(float64(plan.small))
		}
		m.done(d.Name, stepCompact)
	}
	// After the steps that commit, each of which adds a metadata.json
	// version: the versions they pushed out of the metadata log go in the
	// same pass.
	if n, size, err := m.deleteOldMetadata(ctx, tbl); err != nil {
		m.fail(ctx, log, d.Name, stepMetadata, err)
	} else {
		if n > 0 {
			m.metrics.runs.WithLabelValues(d.Name, stepMetadata).Inc()
			m.metrics.metadataDeleted.WithLabelValues(d.Name).Add(float64(n))
			m.metrics.metadataDeletedBytes.WithLabelValues(d.Name).Add(float64(size))
			log.Info("deleted metadata.json versions that left the metadata log", "files", n, "bytes", size)
		}
		m.done(d.Name, stepMetadata)
	}
	// Last, on the table after the other steps: the files expiry and
	// compaction left behind are among the orphans. Not while a
	// compaction's hand-off waits: its files are orphans until the
	// committer applies it, and a note that waited past the margin
	// (a committer down for days) must not find them deleted.
	if !m.handoffWaiting(log, d.Name) && m.orphansDue(d.Name) {
		if n, size, err := m.deleteOrphans(ctx, cat, tbl); err != nil {
			m.fail(ctx, log, d.Name, stepOrphans, err)
		} else {
			if n > 0 {
				m.metrics.runs.WithLabelValues(d.Name, stepOrphans).Inc()
				m.metrics.orphanFiles.WithLabelValues(d.Name).Add(float64(n))
				m.metrics.orphanBytes.WithLabelValues(d.Name).Add(float64(size))
				log.Info("deleted orphan files", "files", n, "bytes", size)
			}
			m.done(d.Name, stepOrphans)
		}
	}
	m.observe(ctx, log, d.Name, cat, tbl)
}

// retry stages a step with stage on a transaction of tbl and commits it,
// redoing both on the reloaded table when another writer (the committer's
// append, another pod's maintainer) committed first. stage reports whether
// it staged anything; when it did not, tbl is returned unchanged and
// nothing is committed. view, when set, is applied to each reloaded table
// (tbl is given with it applied).
func (m *Maintainer) retry(ctx context.Context, cat catalog.Catalog, tbl *table.Table, stage func(*table.Table, *table.Transaction) (bool, error), view func(*table.Table) *table.Table) (*table.Table, error) {
	for attempt := 1; ; attempt++ {
		tx := tbl.NewTransaction()
		staged, err := stage(tbl, tx)
		if err != nil {
			return nil, err
		}
		if !staged {
			return tbl, nil
		}
		if m.beforeCommit != nil {
			m.beforeCommit(attempt)
		}
		next, err := tx.Commit(ctx)
		if err == nil {
			return next, nil
		}
		if !tables.IsConflict(err) || attempt >= maxAttempts || ctx.Err() != nil {
			return nil, fmt.Errorf("commit (attempt %d): %w", attempt, err)
		}
		if tbl, err = cat.LoadTable(ctx, tbl.Identifier()); err != nil {
			return nil, fmt.Errorf("reload table after a conflict: %w", err)
		}
		if view != nil {
			tbl = view(tbl)
		}
	}
}

// objectSize returns the size of an object of tbl's file IO.
func objectSize(ctx context.Context, tbl *table.Table, location string) (int64, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return 0, err
	}
	f, err := fs.Open(location)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}

// expire stages the expiry of the snapshots the retention rules let go.
// The table's history.expire.* properties win; where it sets none, the
// ingestor's defaults apply. It stages nothing when no snapshot would go,
// so that a quiet table gets no commit.
func (m *Maintainer) expire(tbl *table.Table, tx *table.Transaction) (bool, error) {
	meta := tbl.Metadata()
	props := meta.Properties()
	var opts []table.ExpireSnapshotsOpt
	maxAge := m.maxSnapshotAge.Milliseconds()
	if v, ok := props[table.MaxSnapshotAgeMsKey]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return false, fmt.Errorf("table property %s=%q: %w", table.MaxSnapshotAgeMsKey, v, err)
		}
		maxAge = n
	} else {
		opts = append(opts, table.WithOlderThan(m.maxSnapshotAge))
	}
	keep := DefaultMinSnapshotsToKeep
	if v, ok := props[table.MinSnapshotsToKeepKey]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return false, fmt.Errorf("table property %s=%q: %w", table.MinSnapshotsToKeepKey, v, err)
		}
		keep = n
	} else {
		opts = append(opts, table.WithRetainLast(DefaultMinSnapshotsToKeep))
	}
	snaps := meta.Snapshots()
	cutoff := m.now().UnixMilli() - maxAge
	old := 0
	for _, s := range snaps {
		if s.TimestampMs < cutoff {
			old++
		}
	}
	// The cap (maintenance.maxSnapshots), for tables that leave the age
	// to the ingestor: an hour of snapshots is 180 at the default commit
	// interval but thousands at a short one, and each is about 1 KB of
	// metadata.json that every commit writes and every reader parses.
	// Beyond the cap the newest cap snapshots are kept whatever their age.
	if _, set := props[table.MaxSnapshotAgeMsKey]; !set && m.cfg.Maintenance.MaxSnapshots > 0 {
		if limit := max(m.cfg.Maintenance.MaxSnapshots, keep); len(snaps)-old > limit {
			opts = []table.ExpireSnapshotsOpt{table.WithOlderThan(0), table.WithRetainLast(limit)}
			old = len(snaps) - limit
		}
	}
	if old == 0 || len(snaps) <= keep {
		return false, nil
	}
	if err := tx.ExpireSnapshots(opts...); err != nil {
		return false, fmt.Errorf("expire snapshots: %w", err)
	}
	tc, err := tx.TableCommit()
	if err != nil {
		return false, err
	}
	return len(tc.Updates) > 0, nil
}

// mergeManifests stages a rewrite of the current snapshot's data manifests
// into few target-sized ones once there are more than
// maintenance.maxManifests of them.
func (m *Maintainer) mergeManifests(ctx context.Context, tx *table.Transaction, tbl *table.Table) (bool, error) {
	n := m.dataManifests(ctx, tbl)
	if n <= m.cfg.Maintenance.MaxManifests {
		return false, nil
	}
	res, err := tx.RewriteManifests(ctx)
	if err != nil {
		return false, fmt.Errorf("rewrite %d manifests: %w", n, err)
	}
	return !res.IsNoOp(), nil
}

// dataManifests counts the data manifests of tbl's current snapshot; -1 if
// they cannot be read.
func (m *Maintainer) dataManifests(ctx context.Context, tbl *table.Table) int {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return 0
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return -1
	}
	list, err := snap.Manifests(fs)
	if err != nil {
		return -1
	}
	n := 0
	for _, mf := range list {
		if mf.ManifestContent() == iceberg.ManifestContentData {
			n++
		}
	}
	return n
}

// observe records the table's health in the metrics: snapshots kept,
// metadata.json size, manifests, data files and delete files of the
// current snapshot.
// It reads the table as it is now, not as the pass left it: the committer
// commits between the steps, and deletes the metadata.json versions beyond
// write.metadata.previous-versions-max, the one tbl names among them once
// it appended that often during a long pass.
func (m *Maintainer) observe(ctx context.Context, log *slog.Logger, dataset string, cat catalog.Catalog, tbl *table.Table) {
	if now, err := cat.LoadTable(ctx, tbl.Identifier()); err == nil {
		tbl = now
	}
	m.metrics.snapshots.WithLabelValues(dataset).Set(float64(len(tbl.Metadata().Snapshots())))
	if n := m.dataManifests(ctx, tbl); n >= 0 {
		m.metrics.manifests.WithLabelValues(dataset).Set(float64(n))
	}
	if s := tbl.CurrentSnapshot(); s != nil && s.Summary != nil {
		if n, err := strconv.ParseInt(s.Summary.Properties["total-data-files"], 10, 64); err == nil {
			m.metrics.dataFiles.WithLabelValues(dataset).Set(float64(n))
		}
	}
	if files, err := tables.ReadTableFiles(ctx, tbl); err != nil {
		log.Warn("count the table's delete files", "err", err)
	} else {
		debt := files.DeleteDebt()
		m.metrics.deleteFiles.WithLabelValues(dataset).Set(float64(debt.Files()))
		m.metrics.partitionDeleteFiles.WithLabelValues(dataset).Set(float64(debt.MaxPartitionFiles))
		m.metrics.deletedRows.WithLabelValues(dataset).Set(float64(debt.DeletedRecords))
	}
	size, err := objectSize(ctx, tbl, tbl.MetadataLocation())
	if err != nil {
		log.Warn("size of metadata.json", "err", err)
		return
	}
	m.metrics.metadataBytes.WithLabelValues(dataset).Set(float64(size))
}

// handoffWaiting reports whether a compaction hand-off of dataset waits
// for the committer; when the directory cannot be read, it says so.
func (m *Maintainer) handoffWaiting(log *slog.Logger, dataset string) bool {
	notes, _, err := walfile.ListHandoffs(m.dir, dataset)
	if err != nil {
		log.Warn("list compaction hand-offs; the orphan cleanup waits", "err", err)
		return true
	}
	return len(notes) > 0
}
