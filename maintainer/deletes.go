package maintainer

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/icewal/ingestor/shared/bloom"
)

// expiryDeleteConcurrency bounds the objects deleted at once after an
// expiry commit. iceberg-go deletes an expiry's manifest lists, manifests
// and data files right after the commit, 16 at a time. On a store with
// little request capacity that burst queues the committer's next append
// behind it: measured in the soak on the emulator, which deletes about 20
// objects a second, an expiry of 255 snapshots (2,692 compacted files)
// held the store for 2.6 minutes and the appends of that time took 30 to
// 42 s instead of 0.6 s. Two in flight delete as fast where the store
// serves requests one at a time, and still overlap the round trips of a
// real one; ingest comes first.
const expiryDeleteConcurrency = 2

// pacedDeletes returns tbl with a file IO whose bulk delete, the one an
// expiry commit runs after it lands, deletes expiryDeleteConcurrency
// objects at a time and counts them in deleted. Reads and writes pass
// through. The tables a commit of it returns keep that IO; withFS gives
// them the original one back.
//
// With bloom-filter columns, each data file deleted takes its sidecars
// (<id>.bloom.<column>) with it, right after it: no metadata names them,
// and a sidecar left would wait for the orphan cleanup.
func pacedDeletes(cat table.CatalogIO, tbl *table.Table, deleted prometheus.Counter, bloomColumns ...string) *table.Table {
	return wrapFS(cat, tbl, func(ctx context.Context, inner icebergio.IO) icebergio.IO {
		w, ok := inner.(icebergio.WriteFileIO)
		if !ok {
			return inner // a commit needs writes: it fails as it would without this
		}
		return &pacedIO{WriteFileIO: w, ctx: ctx, deleted: deleted, bloomColumns: bloomColumns}
	})
}

// withFS returns tbl's metadata as a table whose file IO is fsF's.
func withFS(cat table.CatalogIO, tbl *table.Table, fsF table.FSysF) *table.Table {
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), fsF, cat)
}

// wrapFS returns tbl's metadata as a table whose file IO is tbl's own
// as wrap returns it.
func wrapFS(cat table.CatalogIO, tbl *table.Table, wrap func(ctx context.Context, inner icebergio.IO) icebergio.IO) *table.Table {
	return withFS(cat, tbl, func(ctx context.Context) (icebergio.IO, error) {
		inner, err := tbl.FS(ctx)
		if err != nil {
			return nil, err
		}
		return wrap(ctx, inner), nil
	})
}

// pacedIO is a file IO whose DeleteFiles runs expiryDeleteConcurrency
// deletes at a time.
type pacedIO struct {
	icebergio.WriteFileIO
	// ctx is the commit's: once it is done (a drain), no more object is
	// deleted, here or by iceberg-go's one-by-one fallback through
	// Remove. Dying or stopping part way leaves the rest to the orphan
	// cleanup: the expiry is committed, so no metadata refers to them.
	ctx     context.Context
	deleted prometheus.Counter
	// bloomColumns are the dataset's bloomFilterColumns: the sidecars a
	// deleted data file may have.
	bloomColumns []string
}

// Remove deletes one object, unless the commit's context is done.
func (p *pacedIO) Remove(name string) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	return p.WriteFileIO.Remove(name)
}

// remove deletes one object; a missing one counts as deleted. Through the
// store's bulk delete where it has one: it takes a missing object for
// deleted in one request, where its Remove tries a directory marker too.
func (p *pacedIO) remove(path string) error {
	if bulk, ok := p.WriteFileIO.(icebergio.BulkRemovableIO); ok {
		_, err := bulk.DeleteFiles(p.ctx, []string{path})
		return err
	}
	if err := p.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// removeSidecars deletes the bloom-filter sidecars of the data file at
// path, if it is one; a missing sidecar (a column configured after the
// file was written) counts as deleted.
func (p *pacedIO) removeSidecars(path string) error {
	base, ok := strings.CutSuffix(path, ".parquet")
	if !ok {
		return nil
	}
	var errs error
	for _, col := range p.bloomColumns {
		if err := p.remove(bloom.SidecarName(base, col)); err != nil {
			errs = errors.Join(errs, err)
		}
	}
	return errs
}

// DeleteFiles deletes paths, expiryDeleteConcurrency at a time. A missing
// object counts as deleted (io.BulkRemovableIO's contract); the others'
// errors are joined, and those objects are left to the orphan cleanup.
func (p *pacedIO) DeleteFiles(ctx context.Context, paths []string) ([]string, error) {
	var (
		mu      sync.Mutex
		deleted = make([]string, 0, len(paths))
		errs    error
		wg      sync.WaitGroup
		next    = make(chan string)
	)
	for range min(expiryDeleteConcurrency, len(paths)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for path := range next {
				err := p.remove(path)
				var serr error
				if err == nil {
					// Dying between the data file and its sidecars leaves
					// sidecars of a data file that is gone: the orphan
					// cleanup deletes them.
					serr = p.removeSidecars(path)
				}
				mu.Lock()
				errs = errors.Join(errs, serr)
				if err != nil {
					errs = errors.Join(errs, err)
				} else {
					deleted = append(deleted, path)
					p.deleted.Inc()
				}
				mu.Unlock()
			}
		}()
	}
	for _, path := range paths {
		if ctx.Err() != nil {
			break // the rest stay, for the orphan cleanup
		}
		next <- path
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		errs = errors.Join(errs, err)
	}
	return deleted, errs
}
