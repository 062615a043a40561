package consumer

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
)

// markerColumn names the delete marker in the small schema the upserter
// decodes values with: a name no table column can take from a
// configuration, so it never clashes with a key column.
const markerColumn = "\x00delete-marker"

// upserter recognises the deletes of an upsert dataset and builds their
// rows. A delete is written into the segment as a row like any other, in
// Kafka offset order, holding the key columns (required columns it does not
// know hold their type's zero value, optional ones null); the segment lists
// its position in the footer (walfile.MetaDeletes), and the committer
// removes it with the older rows of its key (committer/upsert.go). The
// consumer deduplicates nothing: what is "in the table" is decided in one
// place, the committer's snapshot, so that a crash anywhere before it
// changes nothing.
type upserter struct {
	fields []iceberg.NestedField
	// keyIdx are the key columns' positions in the table's top-level
	// fields, in the order of upsert.keyColumns.
	keyIdx []int
	// marker decodes a value's key columns and its delete marker
	// (deleteWhen.path), in this order; nil without deleteWhen.
	marker *recordDecoder
	mrow   decode.Row
	equals map[string]bool
	// keyJSON decodes a tombstone's Kafka key that is a JSON object
	// holding the key columns by name.
	keyJSON *decode.Decoder
	krow    decode.Row
	zero    []any
	row     Row
}

// newUpserter builds the upserter of an upsert dataset for one table
// schema; nil for a dataset without upsert. It fails, naming the key, when
// the table's key columns or partition spec cannot carry upserts.
func newUpserter(ds config.Dataset, f *valueFormat, schema *iceberg.Schema, spec iceberg.PartitionSpec) (*upserter, error) {
	if ds.Upsert == nil {
		return nil, nil
	}
	ids, err := tables.UpsertKeys(ds, schema, spec)
	if err != nil {
		return nil, err
	}
	u := &upserter{fields: schema.Fields()}
	keyFields := make([]iceberg.NestedField, len(ids))
	for i, id := range ids {
		for j, fl := range u.fields {
			if fl.ID == id {
				u.keyIdx = append(u.keyIdx, j)
				keyFields[i] = fl
			}
		}
	}
	u.zero = make([]any, len(u.fields))
	for i, fl := range u.fields {
		if fl.Required {
			u.zero[i] = zeroValue(fl.Type)
		}
	}
	u.row = make(Row, len(u.fields))
	keySchema := iceberg.NewSchema(0, keyFields...)
	if u.keyJSON, err = decode.New(keySchema, byNameMapping(keySchema, nil)); err != nil {
		return nil, fmt.Errorf("upsert key columns: %w", err)
	}
	if w := ds.Upsert.DeleteWhen; w != nil {
		u.equals = map[string]bool{}
		for _, v := range w.Equals {
			u.equals[v] = true
		}
		maxID := 0
		for _, fl := range u.fields {
			maxID = max(maxID, fl.ID)
		}
		mfields := append(keyFields[:len(keyFields):len(keyFields)],
			iceberg.NestedField{ID: maxID + 1, Name: markerColumn, Type: iceberg.PrimitiveTypes.String})
		mapping := map[string]string{markerColumn: w.Path}
		for _, fl := range keyFields {
			mapping[fl.Name] = keyPath(f, fl.Name)
		}
		mf := *f
		mf.mapping = mapping
		if u.marker, err = newRecordDecoder(&mf, iceberg.NewSchema(0, mfields...)); err != nil {
			return nil, fmt.Errorf("upsert.deleteWhen.path %q: %w", w.Path, err)
		}
	}
	return u, nil
}

// keyPath is the expression that reads key column name in f's values:
// its customMapping, else the top-level field of its name.
func keyPath(f *valueFormat, name string) string {
	if e, ok := f.mapping[name]; ok {
		return e
	}
	if f.name == config.FormatJSON {
		q, _ := json.Marshal(name) // a JMESPath quoted identifier
		return string(q)
	}
	return name
}

// deleteOf reports whether a value is a delete by deleteWhen, and if so
// returns its row. A value whose marker or keys do not decode is not a
// delete here: the table's decoder then says why it is dropped. A schema
// not fetched yet is returned as the decoders return it.
func (u *upserter) deleteOf(payload []byte, maxBytes, maxDepth int) (Row, error) {
	if u.marker == nil {
		return nil, nil
	}
	if b, d := u.marker.Limits(); b != maxBytes || d != maxDepth {
		u.marker.Limit(maxBytes, maxDepth)
	}
	row, err := u.marker.DecodeInto(u.mrow, payload)
	if row != nil {
		u.mrow = row
	}
	if _, wait := err.(*schemaWaitError); wait {
		return nil, err
	}
	if err != nil {
		return nil, nil
	}
	op, _ := row[len(u.keyIdx)].(string)
	if !u.equals[op] {
		return nil, nil
	}
	return u.deleteRow(row), nil
}

// tombstone returns the delete row of a record with a null value, its key
// read from the Kafka record key: a JSON object holding the key columns by
// name, or, for one key column, the key's bytes as its value.
func (u *upserter) tombstone(key []byte) (Row, error) {
	if len(key) == 0 {
		return nil, &decode.Error{Reason: decode.ReasonMissingRequired, Err: fmt.Errorf("a tombstone (a null value) without a Kafka key: there is no key to delete")}
	}
	if key[0] == '{' {
		row, err := u.keyJSON.DecodeInto(u.krow, key)
		if row != nil {
			u.krow = row
		}
		if err != nil {
			return nil, fmt.Errorf("tombstone's Kafka key: %w", err)
		}
		return u.deleteRow(row), nil
	}
	if len(u.keyIdx) != 1 {
		return nil, &decode.Error{Reason: decode.ReasonConvert, Err: fmt.Errorf("tombstone's Kafka key %q: with %d key columns the key must be a JSON object holding them", truncate(string(key), 64), len(u.keyIdx))}
	}
	fl := u.fields[u.keyIdx[0]]
	v, err := keyValue(fl.Type, key)
	if err != nil {
		return nil, &decode.Error{Reason: decode.ReasonConvert, Err: fmt.Errorf("tombstone's Kafka key %q as key column %s: %w", truncate(string(key), 64), fl.Name, err)}
	}
	u.krow = append(u.krow[:0], v)
	return u.deleteRow(u.krow), nil
}

// deleteRow lays the key values (in upsert.keyColumns order) over the
// zero row.
func (u *upserter) deleteRow(keys decode.Row) Row {
	copy(u.row, u.zero)
	for i, j := range u.keyIdx {
		u.row[j] = keys[i]
	}
	return u.row
}

// keyValue reads a plain Kafka key as a key column's value.
func keyValue(t iceberg.Type, key []byte) (any, error) {
	switch t.(type) {
	case iceberg.StringType:
		return string(key), nil
	case iceberg.Int32Type:
		v, err := strconv.ParseInt(string(key), 10, 32)
		return int32(v), err
	case iceberg.Int64Type:
		return strconv.ParseInt(string(key), 10, 64)
	case iceberg.UUIDType:
		return uuid.ParseBytes(key)
	case iceberg.BinaryType:
		return append([]byte(nil), key...), nil
	}
	return nil, fmt.Errorf("a %s key column needs a JSON object key", t)
}

// zeroValue is the Row value a delete row holds in a required column that
// is not a key: the type's zero, never read (the row is deleted in the
// snapshot that adds it).
func zeroValue(t iceberg.Type) any {
	switch t := t.(type) {
	case iceberg.StringType:
		return ""
	case iceberg.Int32Type:
		return int32(0)
	case iceberg.Int64Type:
		return int64(0)
	case iceberg.Float32Type:
		return float32(0)
	case iceberg.Float64Type:
		return float64(0)
	case iceberg.BooleanType:
		return false
	case iceberg.DateType:
		return arrow.Date32(0)
	case iceberg.TimeType:
		return arrow.Time64(0)
	case iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return arrow.Timestamp(0)
	case iceberg.DecimalType:
		return decimal128.Num{}
	case iceberg.BinaryType:
		return []byte{}
	case iceberg.FixedType:
		return make([]byte, t.Len())
	case iceberg.UUIDType:
		return uuid.UUID{}
	case *iceberg.StructType:
		vals := make([]any, len(t.FieldList))
		for i, f := range t.FieldList {
			if f.Required {
				vals[i] = zeroValue(f.Type)
			}
		}
		return vals
	case *iceberg.ListType:
		return []any{}
	case *iceberg.MapType:
		return decode.MapValue{}
	}
	return nil
}

// keyMatches reports whether a record's Kafka key names the row's key, as
// far as a plain key of one key column can be compared: a Kafka key that
// is not the key column's value may put versions of one key in several
// Kafka partitions, where they have no order. An empty key, a JSON key and
// keys of several columns are not compared.
func (u *upserter) keyMatches(kafkaKey []byte, row Row) bool {
	if len(kafkaKey) == 0 || kafkaKey[0] == '{' || len(u.keyIdx) != 1 {
		return true
	}
	switch v := row[u.keyIdx[0]].(type) {
	case string:
		return v == string(kafkaKey)
	case int64:
		k, err := strconv.ParseInt(string(kafkaKey), 10, 64)
		return err == nil && k == v
	case int32:
		k, err := strconv.ParseInt(string(kafkaKey), 10, 32)
		return err == nil && int32(k) == v
	}
	return true
}
