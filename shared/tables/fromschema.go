package tables

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
)

// ErrNoWriterSchema is Load's error for a missing table whose create block
// lists no columns: only the consumer, which fetches the writers' schema,
// can create it (LoadFromSchema).
var ErrNoWriterSchema = errors.New("the table is created from the writers' schema, which only the consumer reads: it does not exist yet")

// LoadFromSchema is Load for a dataset whose table, when it must be
// created and its create block lists no columns, takes its columns from
// the writers' schema: writer, called only then, returns the Iceberg
// schema of the latest writer schema (the registry subject's, or
// avroSchemaFile's). A create block that lists columns is used as it is,
// as Load does, and so is a nil writer. A crash anywhere here leaves
// either no table or the whole table: creating it is one catalog call.
func LoadFromSchema(ctx context.Context, cat catalog.Catalog, d config.Dataset, writer func(context.Context) (*iceberg.Schema, error)) (*table.Table, error) {
	ident := table.Identifier(d.TableIdent())
	_, err := cat.LoadTable(ctx, ident)
	if err == nil || d.Create == nil || writer == nil || len(d.Create.Columns) > 0 {
		return Load(ctx, cat, d)
	}
	if !errors.Is(err, catalog.ErrNoSuchTable) && !errors.Is(err, catalog.ErrNoSuchNamespace) {
		return nil, fmt.Errorf("load table %s of dataset %s: %w", d.Table, d.Name, err)
	}
	from, err := writer(ctx)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: create table %s from the writers' schema: %w", d.Name, d.Table, err)
	}
	return create(ctx, cat, d, from)
}

// MergeSchema returns the writer schema from with the configured columns
// laid over it: a configured column replaces the writer's field of the
// same name (its type and whether it is required), one the writer lacks
// is added at the end. Field ids are assigned afresh, top-level columns
// first, in order.
func MergeSchema(from *iceberg.Schema, cols []config.Column) (*iceberg.Schema, error) {
	fields := slices.Clone(from.Fields())
	if len(cols) > 0 {
		conf, err := BuildSchema(cols)
		if err != nil {
			return nil, err
		}
		// Numbered past the writer's ids first: two fields of one id
		// would be one field to the renumbering below.
		next := from.HighestFieldID()
		if conf, err = iceberg.AssignFreshSchemaIDs(conf, func() int { next++; return next }); err != nil {
			return nil, err
		}
		for _, c := range conf.Fields() {
			i := slices.IndexFunc(fields, func(f iceberg.NestedField) bool { return f.Name == c.Name })
			if i < 0 {
				fields = append(fields, c)
			} else {
				fields[i] = c
			}
		}
	}
	next := 0
	return iceberg.AssignFreshSchemaIDs(iceberg.NewSchema(0, fields...), func() int { next++; return next })
}

// CheckWriterSchema compares a table with the latest writer schema of
// its dataset, read by name (a dataset without customMapping): a required
// column the writer has no field for would drop every record, and a
// column narrower than the writer's field (an int for a long, a float
// for a double, a decimal of less precision) would drop every record the
// value does not fit. Either is an error naming the column.
func CheckWriterSchema(d config.Dataset, tbl, writer *iceberg.Schema) error {
	for _, col := range tbl.Fields() {
		w, ok := writer.FindFieldByName(col.Name)
		if !ok {
			if col.Required {
				return fmt.Errorf("dataset %s: column %s of table %s is required, but the writers' schema has no field %s: every record would be dropped as missing_required",
					d.Name, col.Name, d.Table, col.Name)
			}
			continue
		}
		ct, cok := col.Type.(iceberg.PrimitiveType)
		wt, wok := w.Type.(iceberg.PrimitiveType)
		if cok && wok && !sameType(ct, wt) && widens(ct, wt) {
			return fmt.Errorf("dataset %s: column %s of table %s is %s, narrower than the writers' field %s (%s): widen the column",
				d.Name, col.Name, d.Table, ct, col.Name, wt)
		}
	}
	return nil
}
