package maintainer

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/icewal/ingestor/shared/config"
)

// testCatalog is an SQL catalog the maintainer's tests run on: open
// returns the catalog of one test, its files under dir.
type testCatalog struct {
	name string
	open func(t *testing.T, dir string) config.Catalog
}

// forEachCatalog runs test once per catalog of testCatalogs, each in a
// subtest named after it with a directory and a catalog of its own. The
// steps commit through the catalog's atomic swap of the metadata
// location, which each database does its own way (SQLite locks the
// file, PostgreSQL the row): what a test proves on one it proves on all.
func forEachCatalog(t *testing.T, test func(t *testing.T, dir string, cat config.Catalog)) {
	t.Helper()
	for _, c := range testCatalogs() {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			test(t, dir, c.open(t, dir))
		})
	}
}

// sqliteCatalog is an SQL catalog in an SQLite file under dir, with the
// warehouse beside it.
func sqliteCatalog(_ *testing.T, dir string) config.Catalog {
	return config.Catalog{Name: "test", Properties: map[string]string{
		"type":        "sql",
		"uri":         "file:" + filepath.Join(dir, "catalog.db"),
		"sql.driver":  "sqlite",
		"sql.dialect": "sqlite",
		"warehouse":   "file://" + filepath.Join(dir, "warehouse"),
	}}
}

// catalogYAML is cat as the catalog section of a configuration file.
func catalogYAML(cat config.Catalog) string {
	fields := []string{"name: " + fmt.Sprintf("%q", cat.Name)}
	for _, k := range slices.Sorted(maps.Keys(cat.Properties)) {
		fields = append(fields, fmt.Sprintf("%q: %q", k, cat.Properties[k]))
	}
	return "{" + strings.Join(fields, ", ") + "}"
}
