package uploader

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/icewal/ingestor/shared/bloom"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/storage"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// DefaultOrphanTTL is the safety age of an orphan object: how long after
// recovery deleted a ready segment whose offset commit never landed the
// uploader waits before it deletes the object it may have stored for that
// segment. An upload of the segment that was already running when recovery
// deleted the file (the roles run in separate processes) has long finished
// by then, so nothing writes the object again afterwards.
const DefaultOrphanTTL = time.Hour

// orphanSweeper deletes the objects that orphan notes name; see sweepOrphans.
type orphanSweeper struct {
	ttl     time.Duration
	every   time.Duration
	deleted *prometheus.CounterVec
}

func newOrphanSweeper(reg prometheus.Registerer) *orphanSweeper {
	deleted := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ingestor_uploader_orphan_objects_deleted_total",
		Help: "Segments whose stored objects were deleted because recovery deleted the segment before its offset commit landed.",
	}, []string{"dataset"})
	if err := reg.Register(deleted); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			deleted = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	return &orphanSweeper{ttl: DefaultOrphanTTL, every: time.Minute, deleted: deleted}
}

// withOrphanTTL shortens the safety age and the time between two sweeps.
func withOrphanTTL(ttl, every time.Duration) option {
	return func(u *Uploader) { u.orphans.ttl, u.orphans.every = ttl, every }
}

// tableLoader loads a dataset's table; the catalog locator is one.
type tableLoader interface {
	Table(ctx context.Context, d config.Dataset) (*table.Table, error)
}

// Table loads the dataset's table through the locator's catalog.
func (l *catalogLocator) Table(ctx context.Context, d config.Dataset) (*table.Table, error) {
	l.mu.Lock()
	if l.cat == nil {
		cat, err := tables.OpenCatalog(ctx, l.cfg)
		if err != nil {
			l.mu.Unlock()
			return nil, err
		}
		l.cat = cat
	}
	cat := l.cat
	l.mu.Unlock()
	return tables.Load(ctx, cat, d)
}

// sweepOrphans looks at the orphan notes in the WAL directory until ctx
// ends. It runs beside the uploads and stops with the drain: a note left
// is swept at the next start.
func (u *Uploader) sweepOrphans(ctx context.Context) {
	loader, ok := u.loc.(tableLoader)
	if !ok {
		return // a test's fixed locator: no catalog to check against
	}
	t := time.NewTicker(u.orphans.every)
	defer t.Stop()
	for {
		u.sweepOnce(ctx, loader)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweepOnce deletes the objects of every note past the safety age, then the
// note. An object that a kept snapshot of the table refers to is never
// deleted (tables.SegmentsInTable, exact): only its note goes. Whatever
// fails leaves the note for the next sweep.
func (u *Uploader) sweepOnce(ctx context.Context, loader tableLoader) {
	notes, bad, err := walfile.ListOrphans(u.dir)
	if err != nil {
		u.log.Warn("list orphan notes", "dir", u.dir, "error", err)
		return
	}
	for _, p := range bad {
		u.log.Warn("unreadable orphan note left in place", "file", filepath.Base(p))
	}
	now := u.now()
	for _, n := range notes {
		if ctx.Err() != nil {
			return
		}
		if now.Sub(n.Deleted) < u.orphans.ttl {
			continue
		}
		log := u.log.With("dataset", n.Dataset, "file", n.Segment)
		if _, err := os.Stat(filepath.Join(u.dir, n.Segment)); err == nil {
			// Recovery wrote the note but died before deleting the file;
			// the next recovery deletes it and writes the note again.
			continue
		}
		i := slices.IndexFunc(u.cfg.Datasets, func(d config.Dataset) bool { return d.Name == n.Dataset })
		if i < 0 {
			log.Warn("orphan note of a dataset the configuration does not name; left in place")
			continue
		}
		d := u.cfg.Datasets[i]
		tbl, err := loader.Table(ctx, d)
		if err != nil {
			log.Warn("orphan objects: load table", "error", err)
			continue
		}
		in, err := tables.SegmentsInTable(ctx, tbl, []tables.Segment{{UUID: n.UUID, Written: n.Written}})
		if err != nil {
			log.Warn("orphan objects: check the table", "error", err)
			continue
		}
		if in[n.UUID] {
			log.Warn("a kept snapshot refers to the object of a segment recovery deleted; the object stays", "uuid", n.UUID.String())
		} else if err := u.deleteObjects(ctx, tbl, d, n.Orphan); err != nil {
			log.Warn("orphan objects: delete", "error", err)
			continue
		} else {
			u.orphans.deleted.WithLabelValues(d.Name).Inc()
			log.Info("deleted the objects of a segment that recovery deleted", "uuid", n.UUID.String())
		}
		if err := walfile.Remove(n.Path); err != nil {
			log.Warn("remove orphan note", "error", err)
		}
	}
}

// deleteObjects deletes the segment's data object and its sidecars: those
// its marker named, and those the uploader would name today.
func (u *Uploader) deleteObjects(ctx context.Context, tbl *table.Table, d config.Dataset, o walfile.Orphan) error {
	loc := dataLocation(tbl)
	id := o.UUID.String()
	objects := append([]string{storage.Join(loc, id+walfile.SegmentExt)}, o.Objects...)
	for _, col := range d.BloomFilterColumns {
		objects = append(objects, storage.Join(loc, bloom.SidecarName(id, col)))
	}
	slices.Sort(objects)
	for _, obj := range slices.Compact(objects) {
		if err := u.store.Delete(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}
