package consumer

import (
	"log/slog"

	"github.com/apache/iceberg-go/catalog"
)

// closeCatalog releases the catalog's connections (an SQL catalog holds a
// database pool) when the consumer returns: a supervisor restarts the
// consumer in the same process in tests, and each run would leak a pool.
func closeCatalog(cat catalog.Catalog, log *slog.Logger) {
	if cl, ok := cat.(catalog.Closer); ok {
		if err := cl.Close(); err != nil {
			log.Warn("close catalog", "err", err)
		}
	}
}
