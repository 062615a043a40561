package tableview

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/tables"
)

// Column is one field of the schema, nested fields included: Name is the
// dotted path (user.id, tags.element, attrs.key).
type Column struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required"`
	Doc      string `json:"doc,omitempty"`
}

// PartitionField is one field of the partition spec.
type PartitionField struct {
	FieldID   int    `json:"field_id"`
	Name      string `json:"name"`
	SourceID  int    `json:"source_id"`
	Source    string `json:"source"`
	Transform string `json:"transform"`
}

// SortField is one field of the sort order.
type SortField struct {
	SourceID  int    `json:"source_id"`
	Source    string `json:"source"`
	Transform string `json:"transform"`
	Direction string `json:"direction"`
	NullOrder string `json:"null_order"`
}

// Description is what `ingestor table describe` shows.
type Description struct {
	Dataset       string            `json:"dataset"`
	Table         string            `json:"table"`
	Location      string            `json:"location"`
	FormatVersion int               `json:"format_version"`
	SchemaID      int               `json:"schema_id"`
	Schema        []Column          `json:"schema"`
	SpecID        int               `json:"spec_id"`
	Partition     []PartitionField  `json:"partition"`
	SortOrderID   int               `json:"sort_order_id"`
	SortOrder     []SortField       `json:"sort_order"`
	Properties    map[string]string `json:"properties"`
	Snapshots     int               `json:"snapshots"`
	// DataFiles, Bytes and Rows are the current snapshot's totals.
	DataFiles int64 `json:"data_files"`
	Bytes     int64 `json:"bytes"`
	Rows      int64 `json:"rows"`
	// LastCommit is the current snapshot, nil for a table never written.
	LastCommit *Snapshot `json:"last_commit,omitempty"`
	// Deletes are the current snapshot's live delete files (position,
	// equality, deletion vectors), in all and per partition: what every
	// read applies until compaction resolves them. Nil for a table never
	// written.
	Deletes *tables.DeleteDebt `json:"deletes,omitempty"`
}

// Describe reads the table metadata. The totals come from the current
// snapshot's summary; a summary without them (another engine may leave
// them out) costs a listing of the current snapshot's files. The delete
// files come from the current snapshot's manifests.
func (v *View) Describe(ctx context.Context) (*Description, error) {
	md := v.tbl.Metadata()
	sc := v.tbl.Schema()
	spec := v.tbl.Spec()
	so := v.tbl.SortOrder()
	d := &Description{
		Dataset:       v.Dataset.Name,
		Table:         v.Dataset.Table,
		Location:      v.Redact(v.tbl.Location()),
		FormatVersion: md.Version(),
		SchemaID:      sc.ID,
		Schema:        Columns(sc),
		SpecID:        spec.ID(),
		SortOrderID:   so.OrderID(),
		Properties:    map[string]string{},
		Snapshots:     len(md.Snapshots()),
	}
	for _, f := range spec.Fields() {
		src := sourceIDs(f.SourceIDs)
		d.Partition = append(d.Partition, PartitionField{
			FieldID: f.FieldID, Name: f.Name, SourceID: src, Source: columnName(sc, src), Transform: f.Transform.String(),
		})
	}
	for _, f := range so.Fields() {
		d.SortOrder = append(d.SortOrder, SortField{
			SourceID: f.SourceID(), Source: columnName(sc, f.SourceID()), Transform: f.Transform.String(),
			Direction: string(f.Direction), NullOrder: string(f.NullOrder),
		})
	}
	for k, val := range v.tbl.Properties() {
		d.Properties[v.Redact(k)] = v.Redact(val)
	}
	cur := v.tbl.CurrentSnapshot()
	if cur == nil {
		return d, nil
	}
	s := v.snapshot(cur)
	d.LastCommit = &s
	files, okF := summaryInt(cur, "total-data-files")
	size, okB := summaryInt(cur, "total-files-size")
	rows, okR := summaryInt(cur, "total-records")
	if !okF || !okB || !okR {
		list, err := v.Files(ctx, nil)
		if err != nil {
			return nil, err
		}
		files, size, rows = int64(len(list)), 0, 0
		for _, f := range list {
			size += f.Bytes
			rows += f.Rows
		}
	}
	d.DataFiles, d.Bytes, d.Rows = files, size, rows
	// The delete files are in no summary total another engine keeps
	// reliably: they cost a read of the manifests.
	tf, err := tables.ReadTableFiles(ctx, v.tbl)
	if err != nil {
		return nil, err
	}
	debt := tf.DeleteDebt()
	d.Deletes = &debt
	return d, nil
}

func sourceIDs(ids []int) int {
	if len(ids) == 0 {
		return 0
	}
	return ids[0]
}

func columnName(sc *iceberg.Schema, id int) string {
	if n, ok := sc.FindColumnName(id); ok {
		return n
	}
	return "(field " + strconv.Itoa(id) + " not in the current schema)"
}

// Columns flattens a schema into its fields in order, each nested field
// after its parent.
func Columns(sc *iceberg.Schema) []Column {
	var out []Column
	var walk func(prefix string, f iceberg.NestedField)
	walk = func(prefix string, f iceberg.NestedField) {
		name := f.Name
		if prefix != "" {
			name = prefix + "." + f.Name
		}
		out = append(out, Column{ID: f.ID, Name: name, Type: f.Type.String(), Required: f.Required, Doc: f.Doc})
		switch t := f.Type.(type) {
		case *iceberg.StructType:
			for _, c := range t.FieldList {
				walk(name, c)
			}
		case *iceberg.ListType:
			walk(name, t.ElementField())
		case *iceberg.MapType:
			walk(name, t.KeyField())
			walk(name, t.ValueField())
		}
	}
	for _, f := range sc.Fields() {
		walk("", f)
	}
	return out
}

func summaryInt(s *table.Snapshot, key string) (int64, bool) {
	if s.Summary == nil {
		return 0, false
	}
	v, ok := s.Summary.Properties[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

func millis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
