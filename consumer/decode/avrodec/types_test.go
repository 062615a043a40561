package avrodec

import (
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/consumer/decode"
)

// allTypes has a field of every Avro type and logical type the Iceberg
// spec maps, each required and nullable.
const allTypes = `{"type":"record","name":"Event","namespace":"test","fields":[
 {"name":"b","type":"boolean"},
 {"name":"i","type":"int"},
 {"name":"l","type":"long"},
 {"name":"f","type":"float"},
 {"name":"d","type":"double"},
 {"name":"s","type":"string"},
 {"name":"by","type":"bytes"},
 {"name":"e","type":{"type":"enum","name":"Color","symbols":["RED","GREEN"]}},
 {"name":"fx","type":{"type":"fixed","name":"F4","size":4}},
 {"name":"decb","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}},
 {"name":"decf","type":{"type":"fixed","name":"D8","size":8,"logicalType":"decimal","precision":18,"scale":3}},
 {"name":"us","type":{"type":"string","logicalType":"uuid"}},
 {"name":"uf","type":{"type":"fixed","name":"U16","size":16,"logicalType":"uuid"}},
 {"name":"dt","type":{"type":"int","logicalType":"date"}},
 {"name":"tms","type":{"type":"int","logicalType":"time-millis"}},
 {"name":"tus","type":{"type":"long","logicalType":"time-micros"}},
 {"name":"tsms","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"tsus","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"ltsms","type":{"type":"long","logicalType":"local-timestamp-millis"}},
 {"name":"ltsus","type":{"type":"long","logicalType":"local-timestamp-micros"}},
 {"name":"tsns","type":{"type":"long","logicalType":"timestamp-nanos"}},
 {"name":"rec","type":{"type":"record","name":"Inner","fields":[{"name":"x","type":"int"},{"name":"y","type":["null","string"]}]}},
 {"name":"arr","type":{"type":"array","items":"long"}},
 {"name":"narr","type":{"type":"array","items":["null","string"]}},
 {"name":"m","type":{"type":"map","values":"double"}},
 {"name":"ref","type":["null","Inner"]},
 {"name":"os","type":["null","string"]},
 {"name":"ol","type":["long","null"]}
]}`

func TestTableSchemaMapsEveryType(t *testing.T) {
	got, err := TableSchema(mustParse(t, allTypes))
	if err != nil {
		t.Fatal(err)
	}
	want := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "b", Type: iceberg.PrimitiveTypes.Bool, Required: true},
		iceberg.NestedField{ID: 2, Name: "i", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: 3, Name: "l", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 4, Name: "f", Type: iceberg.PrimitiveTypes.Float32, Required: true},
		iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.PrimitiveTypes.Float64, Required: true},
		iceberg.NestedField{ID: 6, Name: "s", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 7, Name: "by", Type: iceberg.PrimitiveTypes.Binary, Required: true},
		iceberg.NestedField{ID: 8, Name: "e", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 9, Name: "fx", Type: iceberg.FixedTypeOf(4), Required: true},
		iceberg.NestedField{ID: 10, Name: "decb", Type: iceberg.DecimalTypeOf(12, 2), Required: true},
		iceberg.NestedField{ID: 11, Name: "decf", Type: iceberg.DecimalTypeOf(18, 3), Required: true},
		iceberg.NestedField{ID: 12, Name: "us", Type: iceberg.PrimitiveTypes.UUID, Required: true},
		iceberg.NestedField{ID: 13, Name: "uf", Type: iceberg.PrimitiveTypes.UUID, Required: true},
		iceberg.NestedField{ID: 14, Name: "dt", Type: iceberg.PrimitiveTypes.Date, Required: true},
		iceberg.NestedField{ID: 15, Name: "tms", Type: iceberg.PrimitiveTypes.Time, Required: true},
		iceberg.NestedField{ID: 16, Name: "tus", Type: iceberg.PrimitiveTypes.Time, Required: true},
		iceberg.NestedField{ID: 17, Name: "tsms", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 18, Name: "tsus", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 19, Name: "ltsms", Type: iceberg.PrimitiveTypes.Timestamp, Required: true},
		iceberg.NestedField{ID: 20, Name: "ltsus", Type: iceberg.PrimitiveTypes.Timestamp, Required: true},
		iceberg.NestedField{ID: 21, Name: "tsns", Type: iceberg.PrimitiveTypes.TimestampTzNs, Required: true},
		iceberg.NestedField{ID: 22, Name: "rec", Required: true, Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 29, Name: "x", Type: iceberg.PrimitiveTypes.Int32, Required: true},
			{ID: 30, Name: "y", Type: iceberg.PrimitiveTypes.String},
		}}},
		iceberg.NestedField{ID: 23, Name: "arr", Required: true, Type: &iceberg.ListType{ElementID: 31, Element: iceberg.PrimitiveTypes.Int64, ElementRequired: true}},
		iceberg.NestedField{ID: 24, Name: "narr", Required: true, Type: &iceberg.ListType{ElementID: 32, Element: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 25, Name: "m", Required: true, Type: &iceberg.MapType{KeyID: 33, KeyType: iceberg.PrimitiveTypes.String, ValueID: 34, ValueType: iceberg.PrimitiveTypes.Float64, ValueRequired: true}},
		iceberg.NestedField{ID: 26, Name: "ref", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 35, Name: "x", Type: iceberg.PrimitiveTypes.Int32, Required: true},
			{ID: 36, Name: "y", Type: iceberg.PrimitiveTypes.String},
		}}},
		iceberg.NestedField{ID: 27, Name: "os", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 28, Name: "ol", Type: iceberg.PrimitiveTypes.Int64},
	)
	if !got.Equals(want) {
		t.Fatalf("table schema:\n%s\nwant\n%s", got, want)
	}
}

func TestTableSchemaRefusesWhatNoColumnHolds(t *testing.T) {
	for name, tc := range map[string]struct{ schema, want string }{
		"two types":   {`{"type":"record","name":"R","fields":[{"name":"v","type":["null","int","string"]}]}`, "field v: union"},
		"null":        {`{"type":"record","name":"R","fields":[{"name":"v","type":"null"}]}`, "field v: type null"},
		"recursive":   {`{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}`, "field next: record Node is recursive"},
		"not record":  {`"string"`, "not a record"},
		"nested pair": {`{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":["int","string"]}}]}`, "field a[]: union"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := TableSchema(mustParse(t, tc.schema))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestDecodeEveryType(t *testing.T) {
	s := mustParse(t, allTypes)
	table, err := TableSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(table, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 11, 30, 12, 34, 56, 789_123_456, time.UTC)
	u := uuid.MustParse("0b8f7a4e-3c2d-4e1f-9a8b-7c6d5e4f3a2b")
	payload := encode(t, allTypes, map[string]any{
		"b": true, "i": int32(-7), "l": int64(1) << 40, "f": float32(1.5), "d": 2.25,
		"s": "héllo", "by": []byte{0, 1, 2}, "e": "GREEN", "fx": []byte("abcd"),
		"decb": big.NewRat(-12345, 100), "decf": big.NewRat(987654321, 1000),
		"us": u.String(), "uf": [16]byte(u),
		"dt": time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), "tms": 3*time.Hour + 4*time.Millisecond, "tus": 5*time.Hour + 6*time.Microsecond,
		"tsms": ts, "tsus": ts, "ltsms": ts, "ltsus": ts, "tsns": ts,
		"rec":  map[string]any{"x": int32(1), "y": "why"},
		"arr":  []any{int64(1), int64(-2)},
		"narr": []any{"a", nil},
		"m":    map[string]any{"k": 0.5},
		"ref":  map[string]any{"x": int32(2), "y": nil},
		"os":   "opt", "ol": nil,
	})
	row, err := d.DecodeInto(nil, payload)
	if err != nil {
		t.Fatal(err)
	}
	days := int32(ts.Truncate(24*time.Hour).Unix() / 86400)
	want := decode.Row{
		true, int32(-7), int64(1) << 40, float32(1.5), 2.25,
		"héllo", []byte{0, 1, 2}, "GREEN", []byte("abcd"),
		decimal128.FromI64(-12345), decimal128.FromI64(987654321),
		u, u,
		arrow.Date32(days), arrow.Time64((3*time.Hour + 4*time.Millisecond).Microseconds()), arrow.Time64((5*time.Hour + 6*time.Microsecond).Microseconds()),
		arrow.Timestamp(ts.UnixMilli() * 1000), arrow.Timestamp(ts.UnixMicro()),
		arrow.Timestamp(ts.UnixMilli() * 1000), arrow.Timestamp(ts.UnixMicro()), arrow.Timestamp(ts.UnixNano()),
		[]any{int32(1), "why"},
		[]any{int64(1), int64(-2)},
		[]any{"a", nil},
		decode.MapValue{Keys: []any{"k"}, Values: []any{0.5}},
		[]any{int32(2), nil},
		"opt", nil,
	}
	for i, f := range table.Fields() {
		if !reflect.DeepEqual(row[i], want[i]) {
			t.Errorf("column %s: got %#v (%T), want %#v (%T)", f.Name, row[i], row[i], want[i], want[i])
		}
	}
}

// Both orders of a nullable union, each branch, into optional columns.
func TestNullableUnions(t *testing.T) {
	const schema = `{"type":"record","name":"R","fields":[
	 {"name":"a","type":["null","string"]},
	 {"name":"b","type":["string","null"]},
	 {"name":"c","type":["long","null"],"default":0},
	 {"name":"d","type":["null",{"type":"record","name":"In","fields":[{"name":"z","type":"int"}]}]}]}`
	d := newDecoder(t, schema, nil,
		opt("a", iceberg.PrimitiveTypes.String), opt("b", iceberg.PrimitiveTypes.String),
		opt("c", iceberg.PrimitiveTypes.Int64),
		opt("d", &iceberg.StructType{FieldList: []iceberg.NestedField{{ID: 10, Name: "z", Type: iceberg.PrimitiveTypes.Int32, Required: true}}}))
	for name, tc := range map[string]struct {
		in   map[string]any
		want decode.Row
	}{
		"values": {map[string]any{"a": "x", "b": "y", "c": int64(3), "d": map[string]any{"z": int32(4)}}, decode.Row{"x", "y", int64(3), []any{int32(4)}}},
		"nulls":  {map[string]any{"a": nil, "b": nil, "c": nil, "d": nil}, decode.Row{nil, nil, nil, nil}},
	} {
		t.Run(name, func(t *testing.T) {
			row, err := d.DecodeInto(nil, encode(t, schema, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(row, tc.want) {
				t.Fatalf("row %#v, want %#v", row, tc.want)
			}
		})
	}
}

// Columns may be wider than the writer's fields where Iceberg (and Avro's
// promotion rules) allow it; long into int is range checked per value.
func TestWidening(t *testing.T) {
	const schema = `{"type":"record","name":"R","fields":[
	 {"name":"i","type":"int"},{"name":"l","type":"long"},{"name":"f","type":"float"},{"name":"s","type":"string"},
	 {"name":"e","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":1}},
	 {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}}]}`
	d := newDecoder(t, schema, map[string]string{"i2l": "i", "i2d": "i", "l2i": "l", "l2d": "l", "f2d": "f", "s2b": "s", "dec": "e", "tsns": "ts"},
		opt("i2l", iceberg.PrimitiveTypes.Int64), opt("i2d", iceberg.PrimitiveTypes.Float64),
		opt("l2i", iceberg.PrimitiveTypes.Int32), opt("l2d", iceberg.PrimitiveTypes.Float64),
		opt("f2d", iceberg.PrimitiveTypes.Float64), opt("s2b", iceberg.PrimitiveTypes.Binary),
		opt("dec", iceberg.DecimalTypeOf(9, 3)), opt("tsns", iceberg.PrimitiveTypes.TimestampTzNs))
	row, err := d.DecodeInto(nil, encode(t, schema, map[string]any{"i": int32(5), "l": int64(-6), "f": float32(0.25), "s": "hi", "e": big.NewRat(123, 10), "ts": int64(7)}))
	if err != nil {
		t.Fatal(err)
	}
	want := decode.Row{int64(5), float64(5), int32(-6), float64(-6), float64(0.25), []byte("hi"), decimal128.FromI64(12300), arrow.Timestamp(7000)}
	if !reflect.DeepEqual(row, want) {
		t.Fatalf("row %#v, want %#v", row, want)
	}
	de := decodeErr(t, d, encode(t, schema, map[string]any{"i": int32(5), "l": int64(1) << 40, "f": float32(0), "s": "", "e": big.NewRat(1, 1), "ts": int64(0)}), decode.ReasonConvert)
	if de.Column != "l2i" || !strings.Contains(de.Error(), "out of the range of int") {
		t.Fatalf("error %v, want column l2i out of range", de)
	}
}

// A column whose type the writer's field cannot become is refused at New,
// naming the column.
func TestNewRefusesIncompatibleTypes(t *testing.T) {
	const schema = `{"type":"record","name":"R","fields":[{"name":"s","type":"string"},{"name":"d","type":"double"},{"name":"fx","type":{"type":"fixed","name":"F","size":3}},
	 {"name":"big","type":{"type":"bytes","logicalType":"decimal","precision":50,"scale":40}}]}`
	for name, tc := range map[string]struct {
		field   iceberg.NestedField
		mapping string
		want    string
	}{
		"string into long":   {opt("c", iceberg.PrimitiveTypes.Int64), "s", `column "c": Avro field s of type string cannot become long`},
		"double into float":  {opt("c", iceberg.PrimitiveTypes.Float32), "d", `column "c": Avro field d of type double cannot become float`},
		"fixed of another L": {opt("c", iceberg.FixedTypeOf(4)), "fx", `column "c": Avro field fx of type fixed F cannot become fixed[4]`},
		"unknown column":     {opt("c", iceberg.PrimitiveTypes.String), "", `mapping names column "nope"`},
		"decimal scale 40":   {opt("c", iceberg.DecimalTypeOf(38, 10)), "big", `column "c": Avro field big has scale 40, over the 38 digits`},
	} {
		t.Run(name, func(t *testing.T) {
			m := map[string]string{"c": tc.mapping}
			if tc.mapping == "" {
				m = map[string]string{"nope": "s"}
			}
			_, err := New(iceberg.NewSchema(0, tc.field), m, mustParse(t, schema))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
