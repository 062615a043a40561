package tables

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"sort"
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
		return nil, redact(fmt.Errorf("open %s catalog %q: %w", props["type"], c.Name, err), props)
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

// secretKeyParts mark a property whose value must not appear in errors.
var secretKeyParts = []string{"credential", "token", "key", "secret", "password", "sas", "connection-string", "signature"}

// dsnPassword finds the password of a key=value DSN (PostgreSQL style).
var dsnPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('[^']*'|\S+)`)

// secrets returns the secret values among props, longest first.
func secrets(props iceberg.Properties) []string {
	var out []string
	for k, v := range props {
		if v == "" {
			continue
		}
		lk := strings.ToLower(k)
		for _, part := range secretKeyParts {
			if strings.Contains(lk, part) {
				out = append(out, v)
				break
			}
		}
		for _, m := range dsnPassword.FindAllStringSubmatch(v, -1) {
			out = append(out, strings.Trim(m[2], "'"))
		}
		if u, err := url.Parse(v); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok && pw != "" {
				out = append(out, pw, url.QueryEscape(pw), url.PathEscape(pw))
			}
		}
		if u, err := url.Parse(v); err == nil {
			for qk, qv := range u.Query() {
				lqk := strings.ToLower(qk)
				for _, part := range append(secretKeyParts, "sig") {
					if strings.Contains(lqk, part) {
						for _, s := range qv {
							if s != "" {
								out = append(out, s, url.QueryEscape(s))
							}
						}
					}
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// redactedError hides secret values in the text of an error while keeping
// the wrapped error for errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact replaces every secret value of props found in err's text.
func redact(err error, props iceberg.Properties) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, s := range secrets(props) {
		if len(s) < 3 {
			continue // too short to replace without mangling the message
		}
		msg = strings.ReplaceAll(msg, s, "REDACTED")
	}
	return &redactedError{msg: msg, err: err}
}
