package uploader

import (
	"context"
	"io"
	"strings"
	"sync"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
)

// locator tells where a dataset's data files go.
type locator interface {
	// DataLocation returns the table's data location, without a trailing slash.
	DataLocation(ctx context.Context, d config.Dataset) (string, error)
	// Forget drops what is known of the dataset, so that the next
	// DataLocation asks the catalog again.
	Forget(dataset string)
}

// catalogLocator loads each dataset's table through the catalog once and
// keeps its data location until told to forget it.
type catalogLocator struct {
	cfg config.Catalog

	mu    sync.Mutex
	cat   catalog.Catalog
	cache map[string]string
}

func newCatalogLocator(cfg config.Catalog) *catalogLocator {
	return &catalogLocator{cfg: cfg, cache: map[string]string{}}
}

func (l *catalogLocator) DataLocation(ctx context.Context, d config.Dataset) (string, error) {
	l.mu.Lock()
	if loc, ok := l.cache[d.Name]; ok {
		l.mu.Unlock()
		return loc, nil
	}
	if l.cat == nil {
		cat, err := tables.OpenCatalog(ctx, l.cfg)
		if err != nil {
			l.mu.Unlock()
			return "", err
		}
		l.cat = cat
	}
	cat := l.cat
	l.mu.Unlock()
	// Loading reads table metadata from storage; during an outage that
	// takes the file IO's retries, and must not hold up the datasets whose
	// location is known.
	tbl, err := tables.Load(ctx, cat, d)
	if err != nil {
		return "", err
	}
	loc := dataLocation(tbl)
	l.mu.Lock()
	l.cache[d.Name] = loc
	l.mu.Unlock()
	return loc, nil
}

// dataLocation is where iceberg-go's own writers put data files: the
// write.data.path property, else the data directory of the table location.
func dataLocation(tbl *table.Table) string {
	if p := tbl.Properties()[table.WriteDataPathKey]; p != "" {
		return strings.TrimRight(p, "/")
	}
	return strings.TrimRight(tbl.Location(), "/") + "/data"
}

func (l *catalogLocator) Forget(dataset string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.cache, dataset)
}

// Close closes the catalog (an SQL catalog holds a connection pool).
func (l *catalogLocator) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.cat.(io.Closer); ok {
		l.cat = nil
		return c.Close()
	}
	return nil
}
