package consumer

import (
	"encoding/json"
	"log/slog"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/walfile"
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

// tableIdentity is the walfile.MetaTable record of tbl: the committer
// checks it against the table at every commit.
func tableIdentity(tbl *table.Table) string {
	md := tbl.Metadata()
	spec := tbl.Spec()
	b, _ := json.Marshal(walfile.TableIdentity{UUID: md.TableUUID().String(), SchemaID: tbl.Schema().ID, SpecID: spec.ID()})
	return string(b)
}
