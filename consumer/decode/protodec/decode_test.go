package protodec

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/icewal/ingestor/consumer/decode"
)

// allDecoder decodes All into the table TableSchema gives it, each column
// taking the field of its name.
func allDecoder(t testing.TB) (*Decoder, protoreflect.MessageDescriptor) {
	t.Helper()
	md := allMessage(t)
	s, err := TableSchema(md)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(s, nil, md)
	if err != nil {
		t.Fatal(err)
	}
	return d, md
}

func column(t testing.TB, d *Decoder, name string) int {
	t.Helper()
	for i, n := range d.names {
		if n == name {
			return i
		}
	}
	t.Fatalf("no column %s", name)
	return -1
}

func dec(v string) decimal128.Num {
	n, err := decimal128.FromString(v, 38, 0)
	if err != nil {
		panic(err)
	}
	return n
}

// TestDecodeAllTypes decodes a message with every field set and checks
// each column's value and Go type.
func TestDecodeAllTypes(t *testing.T) {
	d, md := allDecoder(t)
	at := time.Date(2026, 11, 30, 12, 34, 56, 789_123_456, time.UTC)
	msg := marshal(t, md, map[string]any{
		"i32": int32(-5), "si32": int32(-6), "sf32": int32(-7),
		"i64": int64(-1 << 40), "si64": int64(-9), "sf64": int64(-10),
		"u32": uint32(math.MaxUint32), "f32": uint32(12),
		"u64": uint64(math.MaxUint64), "f64": uint64(1 << 63),
		"fl": float32(1.5), "db": 2.25, "b": true, "s": "héllo", "by": []byte{0, 1, 2},
		"color": protoreflect.EnumNumber(2), "opt": int64(0),
		"inner":    map[string]any{"label": "in", "n": int32(3), "leaf": map[string]any{"text": "t", "weight": 0.5}},
		"nums":     []any{int64(1), int64(-2), int64(3)},
		"tags":     []any{"a", "b"},
		"inners":   []any{map[string]any{"label": "x"}, map[string]any{"n": int32(9)}},
		"counts":   map[any]any{"k": int64(7)},
		"by_id":    map[any]any{int32(4): map[string]any{"label": "four"}},
		"ts":       map[string]any{"seconds": at.Unix(), "nanos": int32(at.Nanosecond())},
		"day":      map[string]any{"year": int32(2026), "month": int32(2), "day": int32(28)},
		"w_i64":    map[string]any{"value": int64(42)},
		"w_s":      map[string]any{"value": "wrapped"},
		"w_d":      map[string]any{"value": -0.5},
		"w_b":      map[string]any{"value": false},
		"w_u64":    map[string]any{"value": uint64(18)},
		"ref":      map[string]any{"id": "r1"},
		"number":   int32(77),
		"packed_s": []any{int32(-1), int32(2)}, "packed_d": []any{1.0, 2.5},
		"w_by": map[string]any{"value": []byte("raw")}, "w_f": map[string]any{"value": float32(0.25)},
		"w_i32": map[string]any{"value": int32(-3)}, "w_u32": map[string]any{"value": uint32(4)},
		"big_number": int64(1000),
	})
	row, err := d.DecodeInto(nil, msg)
	if err != nil {
		t.Fatal(err)
	}
	inner := func(label string, n int32, leaf any) []any { return []any{label, n, leaf} }
	want := map[string]any{
		"i32": int32(-5), "si32": int32(-6), "sf32": int32(-7),
		"i64": int64(-1 << 40), "si64": int64(-9), "sf64": int64(-10),
		"u32": int64(math.MaxUint32), "f32": int64(12),
		"u64": dec("18446744073709551615"), "f64": dec("9223372036854775808"),
		"fl": float32(1.5), "db": 2.25, "b": true, "s": "héllo", "by": []byte{0, 1, 2},
		"color": "GREEN", "opt": int64(0),
		"inner":  inner("in", 3, []any{"t", 0.5}),
		"nums":   []any{int64(1), int64(-2), int64(3)},
		"tags":   []any{"a", "b"},
		"inners": []any{inner("x", 0, nil), inner("", 9, nil)},
		"counts": decode.MapValue{Keys: []any{"k"}, Values: []any{int64(7)}},
		"by_id":  decode.MapValue{Keys: []any{int32(4)}, Values: []any{inner("four", 0, nil)}},
		"ts":     arrow.Timestamp(at.UnixMicro()),
		"day":    arrow.Date32(time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC).Unix() / 86400),
		"w_i64":  int64(42), "w_s": "wrapped", "w_d": -0.5, "w_b": false, "w_u64": dec("18"),
		"ref":  []any{"r1"},
		"name": nil, "number": int32(77),
		"packed_s": []any{int32(-1), int32(2)}, "packed_d": []any{1.0, 2.5},
		"w_by": []byte("raw"), "w_f": float32(0.25), "w_i32": int32(-3), "w_u32": int64(4),
		"big_number": int64(1000),
	}
	if len(want) != len(row) {
		t.Fatalf("%d expected values for %d columns", len(want), len(row))
	}
	for name, w := range want {
		if got := row[column(t, d, name)]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s = %#v (%T), want %#v (%T)", name, got, got, w, w)
		}
	}
}

// TestDecodeDefaults: an empty message gives proto3 scalars their zero
// values, repeated and map fields empty values, and null for messages,
// optional fields, oneof members and wrappers.
func TestDecodeDefaults(t *testing.T) {
	d, _ := allDecoder(t)
	row, err := d.DecodeInto(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"i32": int32(0), "si32": int32(0), "sf32": int32(0), "i64": int64(0), "si64": int64(0), "sf64": int64(0),
		"u32": int64(0), "f32": int64(0), "u64": dec("0"), "f64": dec("0"), "fl": float32(0), "db": 0.0,
		"b": false, "s": "", "by": []byte{}, "color": "COLOR_UNSPECIFIED", "opt": nil, "inner": nil,
		"nums": []any{}, "tags": []any{}, "inners": []any{}, "counts": decode.MapValue{}, "by_id": decode.MapValue{},
		"ts": nil, "day": nil, "w_i64": nil, "w_s": nil, "w_d": nil, "w_b": nil, "w_u64": nil, "ref": nil,
		"name": nil, "number": nil, "packed_s": []any{}, "packed_d": []any{}, "w_by": nil, "w_f": nil,
		"w_i32": nil, "w_u32": nil, "big_number": int64(0),
	}
	for name, w := range want {
		if got := row[column(t, d, name)]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s = %#v, want %#v", name, got, w)
		}
	}
	// A wrapper that is present but empty holds the zero value, which is
	// how proto3 tells zero from absent.
	row, err = d.DecodeInto(row, protowire.AppendBytes(protowire.AppendTag(nil, 26, protowire.BytesType), nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := row[column(t, d, "w_i64")]; got != int64(0) {
		t.Errorf("empty Int64Value = %#v, want 0", got)
	}
}

// TestDecodePaths maps columns to nested fields by path, and checks that
// a column under an absent message is null while a proto3 scalar in a
// present message is its zero value.
func TestDecodePaths(t *testing.T) {
	md := allMessage(t)
	table := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "label", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 2, Name: "leaf_text", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "weight", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 4, Name: "n", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 5, Name: "ref_id", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 6, Name: "unmapped", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 7, Name: "inner", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 8, Name: "n", Type: iceberg.PrimitiveTypes.Int64},
			{ID: 9, Name: "absent_in_message", Type: iceberg.PrimitiveTypes.String},
		}}},
	)
	d, err := New(table, map[string]string{
		"label": "inner.label", "leaf_text": "inner.leaf.text", "weight": "inner.leaf.weight",
		"n": "inner.n", "ref_id": "ref.id", "inner": "inner",
	}, md)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		fields map[string]any
		want   decode.Row
	}{
		{"all set", map[string]any{"ref": map[string]any{"id": "r"},
			"inner": map[string]any{"label": "L", "n": int32(-4), "leaf": map[string]any{"text": "T", "weight": 1.5}}},
			decode.Row{"L", "T", 1.5, int64(-4), "r", nil, []any{int64(-4), nil}}},
		{"inner empty", map[string]any{"ref": map[string]any{}, "inner": map[string]any{}},
			decode.Row{"", nil, nil, int64(0), "", nil, []any{int64(0), nil}}},
		{"leaf without weight", map[string]any{"ref": map[string]any{}, "inner": map[string]any{"leaf": map[string]any{"text": "T"}}},
			decode.Row{"", "T", nil, int64(0), "", nil, []any{int64(0), nil}}},
		{"inner absent", map[string]any{"ref": map[string]any{"id": "r"}},
			decode.Row{nil, nil, nil, nil, "r", nil, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row, err := d.DecodeInto(make(decode.Row, 10), marshal(t, md, tc.fields))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(row, tc.want) {
				t.Errorf("row = %#v, want %#v", row, tc.want)
			}
		})
	}
	if got := d.Missing(); len(got) != 0 {
		t.Errorf("Missing() = %v, want none", got)
	}
}

// TestDecodeNilMapping: without a mapping each column takes the top-level
// field of its name; a column the message lacks is null and listed by
// Missing, and a required one is a missing_required drop.
func TestDecodeNilMapping(t *testing.T) {
	md := allMessage(t)
	table := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "s", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 2, Name: "i32", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 3, Name: "gone", Type: iceberg.PrimitiveTypes.String},
	)
	d, err := New(table, nil, md)
	if err != nil {
		t.Fatal(err)
	}
	row, err := d.DecodeInto(nil, marshal(t, md, map[string]any{"s": "x", "i32": int32(-2), "i64": int64(5)}))
	if err != nil {
		t.Fatal(err)
	}
	if want := (decode.Row{"x", int64(-2), nil}); !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v, want %#v", row, want)
	}
	if got := d.Missing(); !reflect.DeepEqual(got, []string{"gone"}) {
		t.Errorf("Missing() = %v, want [gone]", got)
	}
}
