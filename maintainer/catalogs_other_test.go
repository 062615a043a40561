//go:build !linux

package maintainer

// testCatalogs is SQLite alone: the tests start PostgreSQL from Debian's
// binaries, on Linux only.
func testCatalogs() []testCatalog {
	return []testCatalog{{"sqlite", sqliteCatalog}}
}
