package maintainer

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"gocloud.dev/blob"
	"golang.org/x/sync/errgroup"

	"github.com/icewal/ingestor/shared/bloom"
	"github.com/icewal/ingestor/shared/storage"
	"github.com/icewal/ingestor/shared/walfile"
)

// DefaultOrphanInterval is how often the orphan cleanup lists a table's
// location: a listing of every object, which costs far more than the
// other steps, for objects that only cost storage while they wait.
const DefaultOrphanInterval = time.Hour

// orphanBatch is how many orphans are deleted between two reloads of the
// table: each reload reads only what the commits since the last one
// added, so the time in which a commit can name an object the cleanup
// is about to delete is one batch's requests, not the whole deletion.
const orphanBatch = 16

// orphanReadConcurrency bounds the manifest lists and manifests read at
// once to find what the table names.
const orphanReadConcurrency = 4

// Why an old object that looked like an orphan is kept: the values of
// the reason label of ingestor_maintainer_orphans_kept_total.
const (
	// keptCommitted: a commit named it after the listing, between two
	// reloads of the cleanup.
	keptCommitted = "committed"
	// keptChanged: it was written again after the listing (its ETag or
	// time changed), an upload of the same name.
	keptChanged = "changed"
	// keptSidecar: a bloom-filter sidecar whose data file no metadata
	// names yet but is stored, a segment waiting for its append.
	keptSidecar = "sidecar"
	// keptWaiting: a segment whose ready file is in this pod's WAL
	// directory: uploaded, not yet appended (a committer outage).
	keptWaiting = "waiting"
)

// listedObject is one object of the cleanup's listing.
type listedObject struct {
	location string
	size     int64
	modTime  time.Time
	etag     string // Azure's, when the listing gives one
	sidecar  string // the data file it describes, for a bloom sidecar
}

// deleteOrphans deletes the objects under tbl's location that no kept
// snapshot or metadata refers to and that are older than the margin
// (maintenance.orphanAgeHours): what a crash during the deletion of
// expired files left, a compaction's file whose commit never landed, a
// metadata.json a failed commit wrote, the bloom-filter sidecars of data
// files that are gone. It returns the objects and bytes deleted.
//
// Never what a commit named since the listing. The committer appends
// while the cleanup runs, and an append may name an object that has
// waited longer than the margin (a segment uploaded before a long
// committer outage). So the order is: list first, then load the table
// again and take what it names, then delete; and again before each batch
// of orphanBatch deletes, reading only the snapshots that are new since.
// An object the table names at any of these loads is kept. An object
// written again since the listing (the uploader's retry of the same
// name) is kept too: on Azure the delete carries If-Match with the ETag
// the listing saw, elsewhere the object's time is looked at again just
// before the delete. What remains is the time between a batch's load and
// its deletes, a few requests: an append that lands just then naming an
// old object of the batch is the one case the loads cannot see, which
// the next paragraph and the margin cover.
//
// Nor a segment waiting for its append in this pod's WAL directory (a
// ready file whose object is stored, the committer down for longer than
// the margin): it is kept by its name, whatever its age. A segment
// waiting in another pod's WAL directory is out of this maintainer's
// sight: past the margin it is an orphan to this cleanup. Its rows are
// not lost: the committer checks each object right before its append and
// hands a missing one back to the uploader, which uploads it again from
// the local ready file; the margin only sets how often that happens.
//
// Sidecars (<id>.bloom.<column>, shared/bloom) are named by no metadata:
// one is kept while its data file <id>.parquet is named by the table or
// still stored (a segment waiting for its append, a compacted file whose
// hand-off waits), and deleted with the data file, once both are past the
// margin. Data files go first, their sidecars after them.
//
// Crashes. Dying during the listing or a load deletes nothing. Dying
// between a batch's load and its deletes deletes nothing of that batch;
// the next cleanup lists again. Dying part way through a batch leaves
// some orphans and their sidecars, which the next cleanup deletes; a
// sidecar whose data file went in this pass is deleted then, since its
// data file is neither named nor stored any more.
func (m *Maintainer) deleteOrphans(ctx context.Context, cat catalog.Catalog, tbl *table.Table) (int, int64, error) {
	dataset := m.datasetOf(tbl)
	log := m.log.With("dataset", dataset, "table", strings.Join(tbl.Identifier(), "."))
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return 0, 0, err
	}
	lister, ok := fsys.(icebergio.ListableIO)
	if !ok {
		return 0, 0, fmt.Errorf("file IO %T cannot list the table's location", fsys)
	}
	cutoff := m.now().Add(-m.orphanAge)
	stored := map[string]bool{} // every listed object, young or old
	var old, sidecars []listedObject
	err = lister.WalkDir(tbl.Location(), func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		stored[p] = true
		if !info.ModTime().Before(cutoff) {
			return nil
		}
		o := listedObject{location: p, size: info.Size(), modTime: info.ModTime(), etag: etagOf(info)}
		if o.sidecar, ok = bloom.SidecarDataFile(p); ok {
			sidecars = append(sidecars, o)
		} else {
			old = append(old, o)
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("list %s: %w", tbl.Location(), err)
	}
	// Data files before sidecars: a sidecar's fate depends on whether its
	// data file is deleted in this pass.
	old = append(old, sidecars...)
	// The segments of this pod's WAL directory, read after the listing
	// and before the reload: a ready file the committer appends and
	// deletes in between is named at the reload; one still on disk is
	// waiting for its append, whatever its object's age, and kept.
	waiting, err := m.localSegments()
	if err != nil {
		return 0, 0, err
	}

	store := storage.Open(m.cfg.Catalog.Properties)
	if c, ok := store.(interface{ CloseIdleConnections() }); ok {
		defer c.CloseIdleConnections()
	}
	refs := newReferences()
	deleted := map[string]bool{}
	var n int
	var bytes int64
	for start := 0; start < len(old); start += orphanBatch {
		// The load after the listing (and before every batch): whatever a
		// commit named until now is kept. Dying here deletes nothing.
		cur, err := cat.LoadTable(ctx, tbl.Identifier())
		if err != nil {
			return n, bytes, fmt.Errorf("reload table before deleting orphans: %w", err)
		}
		if err := refs.add(ctx, cur); err != nil {
			return n, bytes, err
		}
		for _, o := range old[start:min(start+orphanBatch, len(old))] {
			if gen, ok := refs.named(o.location); ok {
				if gen > 0 {
					m.kept(log, dataset, o, keptCommitted)
				}
				continue
			}
			if waiting[path.Base(o.location)] {
				m.kept(log, dataset, o, keptWaiting)
				continue
			}
			if o.sidecar != "" {
				if _, ok := refs.named(o.sidecar); ok {
					continue // its data file is live
				}
				if stored[o.sidecar] && !deleted[o.sidecar] {
					m.kept(log, dataset, o, keptSidecar)
					continue
				}
			}
			err := m.deleteObject(ctx, fsys, store, o)
			switch {
			case errors.Is(err, storage.ErrChanged):
				m.kept(log, dataset, o, keptChanged)
				continue
			case errors.Is(err, iofs.ErrNotExist):
				deleted[o.location] = true // gone already: its sidecars may go
				continue
			case err != nil:
				return n, bytes, err
			}
			deleted[o.location] = true
			n++
			bytes += o.size
		}
	}
	return n, bytes, nil
}

// deleteObject deletes one orphan unless it was written again since the
// listing: on Azure in one conditional request, elsewhere after a fresh
// look at its time (a file store's uploads are a rename of a new file, so
// a new upload has a new time; the look and the delete are two steps,
// the window between them microseconds on one machine).
func (m *Maintainer) deleteObject(ctx context.Context, fsys icebergio.IO, store storage.Store, o listedObject) error {
	if cd, ok := store.(storage.ConditionalDeleter); ok && o.etag != "" {
		return cd.DeleteIfMatch(ctx, o.location, o.etag)
	}
	f, err := fsys.Open(o.location)
	if err != nil {
		return err
	}
	info, err := f.Stat()
	f.Close()
	if err != nil {
		return err
	}
	if !info.ModTime().Equal(o.modTime) || info.Size() != o.size {
		return storage.ErrChanged
	}
	if err := fsys.Remove(o.location); err != nil {
		return fmt.Errorf("delete orphan %s: %w", o.location, err)
	}
	return nil
}

// localSegments returns the object names (<uuid>.parquet) of the
// segments in the WAL directory, ready or uploaded: their local file is
// the only copy of their rows until the committer's append.
func (m *Maintainer) localSegments() (map[string]bool, error) {
	files, err := walfile.List(m.dir)
	if err != nil {
		return nil, fmt.Errorf("segments waiting in the WAL directory: %w", err)
	}
	out := map[string]bool{}
	for _, f := range files {
		if f.State == walfile.Ready || f.State == walfile.Uploaded {
			out[f.UUID.String()+walfile.SegmentExt] = true
		}
	}
	return out, nil
}

// kept counts and logs an old object the cleanup did not delete for
// reason.
func (m *Maintainer) kept(log *slog.Logger, dataset string, o listedObject, reason string) {
	m.metrics.orphansKept.WithLabelValues(dataset, reason).Inc()
	log.Info("orphan cleanup keeps an old object", "file", o.location, "reason", reason, "modified", o.modTime.UTC().Format(time.RFC3339))
}

// datasetOf is the name of the dataset whose table tbl is.
func (m *Maintainer) datasetOf(tbl *table.Table) string {
	for _, d := range m.cfg.Datasets {
		if slices.Equal(d.TableIdent(), tbl.Identifier()) {
			return d.Name
		}
	}
	return strings.Join(tbl.Identifier(), ".")
}

// etagOf is the ETag of a listed Azure blob, "" for any other store.
func etagOf(info iofs.FileInfo) string {
	obj, ok := info.Sys().(*blob.ListObject)
	if !ok {
		return ""
	}
	var item container.BlobItem
	if !obj.As(&item) || item.Properties == nil || item.Properties.ETag == nil {
		return ""
	}
	return string(*item.Properties.ETag)
}

// references is what a table names, grown at each load: metadata.json
// versions of the log, statistics, manifest lists, manifests and the
// files their live entries name. Snapshots and manifests never change,
// so each is read once per cleanup. Objects are compared by their last
// path element, which holds a UUID for every file a writer of the table
// names: two spellings of one location (file:///p and /p, abfs and
// abfss) are one object, and an object never counts as unnamed because
// of how a writer spelled its location.
type references struct {
	gen       int            // loads so far
	names     map[string]int // base name -> the load that found it named
	snapshots map[int64]bool
	manifests map[string]bool
}

func newReferences() *references {
	return &references{names: map[string]int{}, snapshots: map[int64]bool{}, manifests: map[string]bool{}}
}

// named reports whether the table names the object at location, and at
// which load (0: the first, right after the listing).
func (r *references) named(location string) (int, bool) {
	gen, ok := r.names[path.Base(location)]
	return gen, ok
}

func (r *references) name(location string) {
	if location == "" {
		return
	}
	if _, ok := r.names[path.Base(location)]; !ok {
		r.names[path.Base(location)] = r.gen
	}
}

// add reads what tbl names beyond what earlier loads found.
func (r *references) add(ctx context.Context, tbl *table.Table) error {
	meta := tbl.Metadata()
	r.name(tbl.MetadataLocation())
	for e := range meta.PreviousFiles() {
		r.name(e.MetadataFile)
	}
	r.name(strings.TrimRight(meta.Location(), "/") + "/metadata/version-hint.text")
	for s := range meta.Statistics() {
		r.name(s.StatisticsPath)
	}
	for s := range meta.PartitionStatistics() {
		r.name(s.StatisticsPath)
	}
	var fresh []table.Snapshot
	for _, s := range meta.Snapshots() {
		if !r.snapshots[s.SnapshotID] {
			fresh = append(fresh, s)
		}
	}
	if len(fresh) == 0 {
		r.gen++
		return nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	lists := make([][]iceberg.ManifestFile, len(fresh))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(orphanReadConcurrency)
	for i, s := range fresh {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			list, err := s.Manifests(fsys)
			if err != nil {
				return fmt.Errorf("manifest list of snapshot %d: %w", s.SnapshotID, err)
			}
			lists[i] = list
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	var manifests []iceberg.ManifestFile
	for i, s := range fresh {
		r.name(s.ManifestList)
		for _, mf := range lists[i] {
			r.name(mf.FilePath())
			if !r.manifests[mf.FilePath()] {
				r.manifests[mf.FilePath()] = true
				manifests = append(manifests, mf)
			}
		}
	}
	var mu sync.Mutex
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(orphanReadConcurrency)
	for _, mf := range manifests {
		g.Go(func() error {
			var files []string
			// Entries marked deleted are skipped, as Iceberg's own
			// cleanup does: a file only a deleted entry names was
			// live in an expired snapshot only.
			for e, err := range mf.Entries(fsys, true) {
				if err != nil {
					return fmt.Errorf("manifest %s: %w", mf.FilePath(), err)
				}
				if err := gctx.Err(); err != nil {
					return err
				}
				df := e.DataFile()
				files = append(files, df.FilePath())
				if dv, ok := df.(interface{ ReferencedDataFile() *string }); ok && dv.ReferencedDataFile() != nil {
					files = append(files, *dv.ReferencedDataFile())
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, f := range files {
				r.name(f)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		// What this load read stays named; a manifest that failed is
		// read again at the next load.
		for _, mf := range manifests {
			delete(r.manifests, mf.FilePath())
		}
		return err
	}
	for _, s := range fresh {
		r.snapshots[s.SnapshotID] = true
	}
	r.gen++
	return nil
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
