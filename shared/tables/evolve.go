package tables

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/config"
)

// evolveAttempts bounds the schema updates of one start that lose to
// another writer (the consumers of other pods start at the same moment).
const evolveAttempts = 5

// Evolve brings an existing table's schema up to the dataset's create
// block, the only schema change the ingestor makes itself: a configured
// column the table lacks is added (optional, with a new field id), a
// column's type is widened the way Iceberg allows (int to long, float to
// double, a decimal's precision), and a required column becomes optional
// when the configuration says so. Nothing is ever dropped, renamed or
// narrowed: a configured column that would need it, or a new column
// marked required (the table's rows so far have no value for it), is an
// error naming the column. A table column the configuration does not list
// is kept and logged. It returns the table as it is after the change; a
// dataset without a create block, or nothing to change, gives tbl back.
//
// The change is one catalog commit; a conflict with another writer
// (another pod's consumer making the same change) reloads the table and
// compares again, so the column is added once.
func Evolve(ctx context.Context, cat catalog.Catalog, tbl *table.Table, d config.Dataset, log *slog.Logger) (*table.Table, error) {
	if d.Create == nil || len(d.Create.Columns) == 0 {
		return tbl, nil // a table built from the writers' schema: nothing configured to add
	}
	want, err := BuildSchema(d.Create.Columns)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: datasets[].create.columns: %w", d.Name, err)
	}
	for attempt := 1; ; attempt++ {
		changes, err := schemaChanges(d.Name, tbl.Schema(), want)
		if err != nil {
			return nil, err
		}
		if attempt == 1 {
			for _, f := range tbl.Schema().Fields() {
				if _, ok := want.FindFieldByName(f.Name); !ok {
					log.Info("table column kept: it is not in datasets[].create.columns, and the ingestor never drops a column",
						"dataset", d.Name, "table", d.Table, "column", f.Name)
				}
			}
		}
		if len(changes) == 0 {
			return tbl, nil
		}
		tx := tbl.NewTransaction()
		us := tx.UpdateSchema(true, false)
		for _, c := range changes {
			c.apply(us)
		}
		if err := us.Commit(); err != nil {
			return nil, fmt.Errorf("dataset %s: update the schema of table %s: %w", d.Name, d.Table, err)
		}
		next, err := tx.Commit(ctx)
		if err == nil {
			for _, c := range changes {
				log.Info(c.what, "dataset", d.Name, "table", d.Table, "column", c.column, "type", c.typ.String(),
					"schema_id", next.Schema().ID)
			}
			return next, nil
		}
		if attempt >= evolveAttempts || ctx.Err() != nil {
			return nil, fmt.Errorf("dataset %s: update the schema of table %s: %w", d.Name, d.Table, err)
		}
		// Whatever the error, the table as it is now decides: another
		// writer may have made the same change first.
		if tbl, err = cat.LoadTable(ctx, tbl.Identifier()); err != nil {
			return nil, fmt.Errorf("dataset %s: reload table %s after a schema update failed: %w", d.Name, d.Table, err)
		}
	}
}

// schemaChange is one change Evolve makes to a top-level column.
type schemaChange struct {
	column string
	typ    iceberg.Type
	what   string // the log message once made
	apply  func(us *table.UpdateSchema)
}

// schemaChanges lists what turns cur into a schema holding every column of
// want, or the error that names the first column it cannot reconcile
// without dropping, renaming or narrowing.
func schemaChanges(dataset string, cur, want *iceberg.Schema) ([]schemaChange, error) {
	var out []schemaChange
	for _, w := range want.Fields() {
		path := []string{w.Name}
		have, ok := cur.FindFieldByName(w.Name)
		if !ok {
			if w.Required {
				return nil, fmt.Errorf("dataset %s: column %s is in datasets[].create.columns but not in the table, and marked required: "+
					"the rows the table holds have no value for it, so it can only be added as optional (drop `required`)", dataset, w.Name)
			}
			out = append(out, schemaChange{column: w.Name, typ: w.Type, what: "column added to the table",
				apply: func(us *table.UpdateSchema) { us.AddColumn(path, w.Type, w.Doc, false, nil) }})
			continue
		}
		if !sameType(have.Type, w.Type) {
			hp, hok := have.Type.(iceberg.PrimitiveType)
			wp, wok := w.Type.(iceberg.PrimitiveType)
			if !hok || !wok || !widens(hp, wp) {
				return nil, fmt.Errorf("dataset %s: column %s is %s in the table but %s in datasets[].create.columns: "+
					"the ingestor only widens a type (int to long, float to double, a decimal's precision) and never narrows or changes one; "+
					"set the configured type back, or change the table with another engine", dataset, w.Name, have.Type, w.Type)
			}
			out = append(out, schemaChange{column: w.Name, typ: w.Type, what: "column type widened",
				apply: func(us *table.UpdateSchema) {
					us.UpdateColumn(path, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: w.Type}})
				}})
		}
		switch {
		case have.Required && !w.Required:
			out = append(out, schemaChange{column: w.Name, typ: w.Type, what: "column made optional",
				apply: func(us *table.UpdateSchema) {
					us.UpdateColumn(path, table.ColumnUpdate{Required: iceberg.Optional[bool]{Valid: true, Val: false}})
				}})
		case !have.Required && w.Required:
			return nil, fmt.Errorf("dataset %s: column %s is optional in the table but required in datasets[].create.columns: "+
				"the ingestor never narrows a column; drop `required`, or change the table with another engine", dataset, w.Name)
		}
	}
	return out, nil
}

// widens reports whether Iceberg allows a column of type from to become to.
func widens(from, to iceberg.PrimitiveType) bool {
	switch f := from.(type) {
	case iceberg.Int32Type:
		_, ok := to.(iceberg.Int64Type)
		return ok
	case iceberg.Float32Type:
		_, ok := to.(iceberg.Float64Type)
		return ok
	case iceberg.DecimalType:
		t, ok := to.(iceberg.DecimalType)
		return ok && f.Scale() == t.Scale() && f.Precision() < t.Precision()
	}
	return false
}

// sameType compares two types by shape, names and nullability, not by
// the field ids of nested fields: a configured struct numbers its fields
// afresh.
func sameType(a, b iceberg.Type) bool {
	switch at := a.(type) {
	case *iceberg.StructType:
		bt, ok := b.(*iceberg.StructType)
		if !ok || len(at.FieldList) != len(bt.FieldList) {
			return false
		}
		for i, f := range at.FieldList {
			g := bt.FieldList[i]
			if f.Name != g.Name || f.Required != g.Required || !sameType(f.Type, g.Type) {
				return false
			}
		}
		return true
	case *iceberg.ListType:
		bt, ok := b.(*iceberg.ListType)
		return ok && at.ElementRequired == bt.ElementRequired && sameType(at.Element, bt.Element)
	case *iceberg.MapType:
		bt, ok := b.(*iceberg.MapType)
		return ok && at.ValueRequired == bt.ValueRequired && sameType(at.KeyType, bt.KeyType) && sameType(at.ValueType, bt.ValueType)
	}
	return a.Equals(b)
}
