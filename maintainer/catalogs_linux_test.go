package maintainer

import (
	"path/filepath"
	"testing"

	itest "github.com/icewal/ingestor/internal/testutil"
	"github.com/icewal/ingestor/shared/config"
)

// testCatalogs are SQLite in a file and PostgreSQL, the catalog of
// production deployments that run no REST catalog: a server of each
// test's own (Debian's binaries, `make deps`).
func testCatalogs() []testCatalog {
	return []testCatalog{{"sqlite", sqliteCatalog}, {"postgres", postgresCatalog}}
}

// postgresCatalog starts a PostgreSQL server for t, stopped when t ends,
// and returns an SQL catalog in it with the warehouse under dir.
func postgresCatalog(t *testing.T, dir string) config.Catalog {
	pg := itest.Postgres(t)
	return config.Catalog{Name: "test", Properties: pg.CatalogProperties("file://" + filepath.Join(dir, "warehouse"))}
}
