package tables

import (
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/shared/config"
)

// UpsertKeys returns the field IDs of an upsert dataset's key columns in
// schema, in the order of upsert.keyColumns, or an error naming the key
// and what about the table keeps it from being one:
//   - a key is a required top-level column of a primitive type other than
//     floating point (an equality delete compares values exactly);
//   - every partition field takes its source from a key column: a row's
//     partition is then a function of its key, so the equality delete of a
//     key, written in the key's partition, reaches every older row of it.
//     A partition by another column (an event time's hour) would let an
//     update put a key's new row in another partition than its old one,
//     which the delete would not reach.
func UpsertKeys(d config.Dataset, schema *iceberg.Schema, spec iceberg.PartitionSpec) ([]int, error) {
	u := d.Upsert
	if u == nil {
		return nil, nil
	}
	ids := make([]int, 0, len(u.KeyColumns))
	for j, name := range u.KeyColumns {
		key := fmt.Sprintf("datasets[%s].upsert.keyColumns[%d]", d.Name, j)
		f, ok := schema.FindFieldByName(name)
		if !ok || !slices.ContainsFunc(schema.Fields(), func(t iceberg.NestedField) bool { return t.ID == f.ID }) {
			return nil, fmt.Errorf("%s: %q is not a top-level column of table %s", key, name, d.Table)
		}
		if !f.Required {
			return nil, fmt.Errorf("%s: column %q of table %s is optional: a key column must be required (a key cannot be null)", key, name, d.Table)
		}
		switch f.Type.(type) {
		case iceberg.Float32Type, iceberg.Float64Type:
			return nil, fmt.Errorf("%s: column %q is %s: floating point cannot be a key (an equality delete compares values exactly)", key, name, f.Type)
		case *iceberg.StructType, *iceberg.ListType, *iceberg.MapType:
			return nil, fmt.Errorf("%s: column %q is %s: a key column must be of a primitive type", key, name, f.Type)
		}
		ids = append(ids, f.ID)
	}
	for _, pf := range spec.Fields() {
		if !slices.Contains(ids, pf.SourceID()) {
			src, _ := schema.FindColumnName(pf.SourceID())
			return nil, fmt.Errorf("datasets[%s].upsert.keyColumns: table %s is partitioned by %s (%s of column %s), which is not a key column: "+
				"an update could move a key to another partition, where the delete of its old row does not apply; partition the table by key columns only, or not at all",
				d.Name, d.Table, pf.Name, pf.Transform, src)
		}
	}
	return ids, nil
}

// withKeys makes an upsert dataset's key columns required top-level
// columns and the schema's identifier fields, for a table the ingestor
// creates. Names that are not top-level columns are left for UpsertKeys
// to report.
func withKeys(schema *iceberg.Schema, d config.Dataset) *iceberg.Schema {
	if d.Upsert == nil {
		return schema
	}
	fields := slices.Clone(schema.Fields())
	var ids []int
	for i, f := range fields {
		if slices.Contains(d.Upsert.KeyColumns, f.Name) {
			fields[i].Required = true
			ids = append(ids, f.ID)
		}
	}
	return iceberg.NewSchemaWithIdentifiers(schema.ID, ids, fields...)
}
