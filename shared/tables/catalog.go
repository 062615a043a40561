package tables

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"

	// The catalog implementations and the Azure file IO register themselves.
	_ "github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/apache/iceberg-go/io/gocloud/azure"

	// SQL drivers for the sql catalog: sql.driver "sqlite" and "pgx".
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/redact"
)

// sqlitePragmas keep concurrent commits from failing with SQLITE_BUSY: a
// writer waits up to 5 s for the lock, and WAL journaling lets readers run
// beside the writer.
const sqlitePragmas = "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"

// OpenCatalog opens the Iceberg catalog named in the configuration, passing
// its properties to iceberg-go's catalog.Load unchanged except for one
// addition: an SQLite catalog URI without _pragma parameters gets a busy
// timeout and WAL journaling.
//
// Errors never carry the values of secret properties (credentials, tokens,
// keys, passwords, SAS tokens, connection strings, the password of a URI).
func OpenCatalog(ctx context.Context, c config.Catalog) (catalog.Catalog, error) {
	props := iceberg.Properties{}
	for k, v := range c.Properties {
		props[k] = v
	}
	if props["type"] == "sql" && isSQLite(props) {
		props["uri"] = withSQLitePragmas(props["uri"])
	}
	cat, err := catalog.Load(ctx, c.Name, props)
	if err != nil {
		return nil, maskError(fmt.Errorf("open %s catalog %q: %w", props["type"], c.Name, err), props)
	}
	return cat, nil
}

func isSQLite(props iceberg.Properties) bool {
	return strings.EqualFold(props["sql.driver"], "sqlite") || strings.EqualFold(props["sql.dialect"], "sqlite")
}

// withSQLitePragmas adds sqlitePragmas to an SQLite DSN that sets none.
func withSQLitePragmas(dsn string) string {
	if dsn == "" || strings.Contains(dsn, "_pragma=") {
		return dsn
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&" + sqlitePragmas
	}
	return dsn + "?" + sqlitePragmas
}

// openSentinels are the errors of catalog.Load a caller may branch on;
// the masked error of OpenCatalog keeps them.
var openSentinels = []error{catalog.ErrCatalogNotFound, iceberg.ErrInvalidArgument, iceberg.ErrNotImplemented}

// maskError masks every secret of props in err's text (shared/redact's
// rule); the result unwraps to the sentinels err matches, never to err.
func maskError(err error, props iceberg.Properties) error {
	return redact.Properties(props).Error(err, openSentinels...)
}
