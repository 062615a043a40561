package tableview

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/redact"
	"github.com/icewal/ingestor/shared/tables"
)

// Output formats.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// View is one dataset's table, loaded once.
type View struct {
	Dataset config.Dataset
	tbl     *table.Table
	cat     catalog.Catalog
	red     *redact.Redactor
}

// Open loads the table of the dataset named dataset through the
// configured catalog. Unlike the roles it never creates a missing table.
// Errors are redacted.
func Open(ctx context.Context, cfg *config.Config, dataset string) (*View, error) {
	red := redact.New(cfg)
	d, ok := cfg.Dataset(dataset)
	if !ok {
		return nil, fmt.Errorf("no dataset %q in the configuration (it has %s)", dataset, datasetNames(cfg))
	}
	cat, err := tables.OpenCatalog(ctx, cfg.Catalog)
	if err != nil {
		return nil, redacted(red, fmt.Errorf("dataset %s: %w", d.Name, err))
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier(d.TableIdent()))
	if err != nil {
		closeCatalog(cat)
		return nil, redacted(red, fmt.Errorf("load table %s of dataset %s: %w", d.Table, d.Name, err))
	}
	return &View{Dataset: d, tbl: tbl, cat: cat, red: red}, nil
}

// Close releases the catalog's connections.
func (v *View) Close() { closeCatalog(v.cat) }

// Redact returns s with the configuration's secrets masked.
func (v *View) Redact(s string) string { return v.red.String(s) }

func (v *View) err(err error) error { return redacted(v.red, err) }

func closeCatalog(cat catalog.Catalog) {
	if c, ok := cat.(io.Closer); ok {
		c.Close()
	}
}

func datasetNames(cfg *config.Config) string {
	s := ""
	for i, d := range cfg.Datasets {
		if i > 0 {
			s += ", "
		}
		s += d.Name
	}
	if s == "" {
		return "none"
	}
	return s
}

// redactedError masks secrets in an error's text and keeps the wrapped
// error for errors.Is.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redacted(red *redact.Redactor, err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{msg: red.String(err.Error()), err: err}
}
