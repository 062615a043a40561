package avrodec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/consumer/decode"
)

const nested = `{"type":"record","name":"Event","fields":[
 {"name":"id","type":"string"},
 {"name":"user","type":{"type":"record","name":"User","fields":[
   {"name":"name","type":"string"},
   {"name":"address","type":{"type":"record","name":"Address","fields":[
     {"name":"city","type":"string"},{"name":"zip","type":["null","int"]}]}}]}},
 {"name":"order","type":["null",{"type":"record","name":"Order","fields":[
   {"name":"amount","type":"long"},{"name":"note","type":"string"}]}]},
 {"name":"tail","type":"long"}]}`

// Paths address fields of nested records, also through a nullable record,
// whose null leaves its columns null.
func TestPathsIntoNestedRecords(t *testing.T) {
	d := newDecoder(t, nested,
		map[string]string{"id": "id", "city": "user.address.city", "zip": "user.address.zip", "amount": "order.amount", "tail": "tail", "again": "tail"},
		req("id", iceberg.PrimitiveTypes.String), opt("city", iceberg.PrimitiveTypes.String),
		opt("zip", iceberg.PrimitiveTypes.Int32), opt("amount", iceberg.PrimitiveTypes.Int64),
		req("tail", iceberg.PrimitiveTypes.Int64), opt("again", iceberg.PrimitiveTypes.Float64))
	user := map[string]any{"name": "ann", "address": map[string]any{"city": "Oslo", "zip": int32(150)}}
	for name, tc := range map[string]struct {
		in   map[string]any
		want decode.Row
	}{
		"order": {map[string]any{"id": "e1", "user": user, "order": map[string]any{"amount": int64(99), "note": "n"}, "tail": int64(7)},
			decode.Row{"e1", "Oslo", int32(150), int64(99), int64(7), float64(7)}},
		"no order": {map[string]any{"id": "e2", "user": user, "order": nil, "tail": int64(-1)},
			decode.Row{"e2", "Oslo", int32(150), nil, int64(-1), float64(-1)}},
	} {
		t.Run(name, func(t *testing.T) {
			row, err := d.DecodeInto(make(decode.Row, 1, 8), encode(t, nested, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(row, tc.want) {
				t.Fatalf("row %#v, want %#v", row, tc.want)
			}
		})
	}
}

// A mapped path the writer schema lacks leaves its column null; for a
// required column each record is dropped as missing_required, as a JSON
// record without the field is.
func TestWriterSchemaLackingMappedField(t *testing.T) {
	in := map[string]any{"id": "e1", "user": map[string]any{"name": "ann", "address": map[string]any{"city": "Oslo", "zip": nil}}, "order": nil, "tail": int64(1)}
	payload := encode(t, nested, in)

	d := newDecoder(t, nested, map[string]string{"id": "id", "phone": "user.phone", "deep": "tail.x"},
		req("id", iceberg.PrimitiveTypes.String), opt("phone", iceberg.PrimitiveTypes.String), opt("deep", iceberg.PrimitiveTypes.Int64))
	row, err := d.DecodeInto(nil, payload)
	if err != nil {
		t.Fatal(err)
	}
	if want := (decode.Row{"e1", nil, nil}); !reflect.DeepEqual(row, want) {
		t.Fatalf("row %#v, want %#v", row, want)
	}

	d = newDecoder(t, nested, map[string]string{"id": "id", "phone": "user.phone"},
		req("id", iceberg.PrimitiveTypes.String), req("phone", iceberg.PrimitiveTypes.String))
	de := decodeErr(t, d, payload, decode.ReasonMissingRequired)
	if de.Column != "phone" || !strings.Contains(de.Error(), `"phone"`) {
		t.Fatalf("error %v names column %q, want phone", de, de.Column)
	}
}

// Without a mapping each column takes the top-level field of its name; a
// struct column takes a record's fields by name and leaves out the others.
func TestNilMappingAndStructByName(t *testing.T) {
	d := newDecoder(t, nested, nil,
		req("tail", iceberg.PrimitiveTypes.Int64), opt("missing", iceberg.PrimitiveTypes.String),
		opt("user", &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 10, Name: "address", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
				{ID: 11, Name: "zip", Type: iceberg.PrimitiveTypes.Int64},
				{ID: 12, Name: "country", Type: iceberg.PrimitiveTypes.String}}}},
		}}))
	in := map[string]any{"id": "e1", "user": map[string]any{"name": "ann", "address": map[string]any{"city": "Oslo", "zip": int32(9)}}, "order": nil, "tail": int64(3)}
	row, err := d.DecodeInto(nil, encode(t, nested, in))
	if err != nil {
		t.Fatal(err)
	}
	want := decode.Row{int64(3), nil, []any{[]any{int64(9), nil}}}
	if !reflect.DeepEqual(row, want) {
		t.Fatalf("row %#v, want %#v", row, want)
	}
}
