package protodec

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/icewal/ingestor/consumer/decode"
)

// Field numbers of All (testdata/all.proto).
const (
	fI32     = 1
	fU64     = 9
	fS       = 14
	fColor   = 16
	fInner   = 18
	fNums    = 19
	fCounts  = 22
	fTS      = 24
	fDay     = 25
	fPackedS = 34
	fPackedD = 35
	fBig     = 5000
)

func tagVarint(b []byte, num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

func tagBytes(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

// TestDecodeWireSemantics builds messages by hand to cover what a
// serializer may write that dynamicpb does not: packed and unpacked
// occurrences of one repeated field, repeated occurrences of singular
// fields, repeated map keys, and unknown fields of every wire type.
func TestDecodeWireSemantics(t *testing.T) {
	d, _ := allDecoder(t)
	var b []byte
	// Unknown fields before, between and after, of every wire type,
	// including a group and a number beyond the dense table.
	b = protowire.AppendFixed32(protowire.AppendTag(b, 900, protowire.Fixed32Type), 7)
	b = tagVarint(b, fI32, 1)
	b = tagVarint(b, fI32, math.MaxUint64) // -1 as a varint int32: the last one wins
	b = protowire.AppendTag(b, 901, protowire.StartGroupType)
	b = tagBytes(b, 1, []byte("inside a group"))
	b = protowire.AppendTag(b, 901, protowire.EndGroupType)
	b = tagVarint(b, fNums, 1) // unpacked
	b = tagBytes(b, fNums, protowire.AppendVarint(protowire.AppendVarint(nil, 2), 3))
	b = tagVarint(b, fNums, 4)
	b = tagBytes(b, fPackedS, protowire.AppendVarint(nil, protowire.EncodeZigZag(-5)))
	b = protowire.AppendFixed64(protowire.AppendTag(b, fPackedD, protowire.Fixed64Type), math.Float64bits(0.5))
	b = tagBytes(b, fS, []byte("first"))
	b = tagBytes(b, fS, []byte("second"))
	// Two occurrences of a singular message merge: label from the first,
	// n from the second, which also replaces nothing it lacks.
	b = tagBytes(b, fInner, tagBytes(nil, 1, []byte("L")))
	b = tagBytes(b, fInner, tagVarint(nil, 2, 8))
	entry := func(k string, v uint64) []byte { return tagVarint(tagBytes(nil, 1, []byte(k)), 2, v) }
	b = tagBytes(b, fCounts, entry("a", 1))
	b = tagBytes(b, fCounts, entry("b", 2))
	b = tagBytes(b, fCounts, entry("a", 3))
	b = tagBytes(b, fCounts, tagVarint(nil, 2, 9)) // no key: the zero key ""
	b = tagVarint(b, fColor, 99)                   // a value the enum does not name
	b = tagVarint(b, fBig, 12)
	b = protowire.AppendFixed64(protowire.AppendTag(b, 902, protowire.Fixed64Type), 7)
	row, err := d.DecodeInto(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"i32":        int32(-1),
		"nums":       []any{int64(1), int64(2), int64(3), int64(4)},
		"packed_s":   []any{int32(-5)},
		"packed_d":   []any{0.5},
		"s":          "second",
		"inner":      []any{"L", int32(8), nil},
		"counts":     decode.MapValue{Keys: []any{"b", "a", ""}, Values: []any{int64(2), int64(3), int64(9)}},
		"color":      "99",
		"big_number": int64(12),
	}
	for name, w := range want {
		if got := row[column(t, d, name)]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s = %#v, want %#v", name, got, w)
		}
	}
}

// TestDecodeStringsAlias documents that strings and binary values point
// into the payload: the caller copies them before reusing it.
func TestDecodeStringsAlias(t *testing.T) {
	d, _ := allDecoder(t)
	msg := tagBytes(nil, fS, []byte("abc"))
	row, err := d.DecodeInto(nil, msg)
	if err != nil {
		t.Fatal(err)
	}
	copy(msg[2:], "xyz")
	if got := row[column(t, d, "s")]; got != "xyz" {
		t.Errorf("s = %q after the payload changed, want it to follow the payload (\"xyz\")", got)
	}
}

func TestDecodeErrors(t *testing.T) {
	d, md := allDecoder(t)
	ts := func(secs, nanos uint64) []byte {
		return tagBytes(nil, fTS, tagVarint(tagVarint(nil, 1, secs), 2, nanos))
	}
	date := func(y, m, dd uint64) []byte {
		return tagBytes(nil, fDay, tagVarint(tagVarint(tagVarint(nil, 1, y), 2, m), 3, dd))
	}
	for _, tc := range []struct {
		name   string
		msg    []byte
		reason string
		column string
		text   string
	}{
		{"truncated tag", []byte{0x80}, decode.ReasonNotProtobuf, "", "not Protobuf"},
		{"field number 0", []byte{0x00, 0x01}, decode.ReasonNotProtobuf, "", "not Protobuf"},
		{"truncated length", []byte{byte(fS<<3 | 2), 5, 'a'}, decode.ReasonNotProtobuf, "", "not Protobuf"},
		{"wrong wire type", tagBytes(nil, fI32, []byte("x")), decode.ReasonNotProtobuf, "", "wire type"},
		{"unterminated group", protowire.AppendTag(nil, 900, protowire.StartGroupType), decode.ReasonNotProtobuf, "", "not Protobuf"},
		{"bad nested message", tagBytes(nil, fInner, []byte{0xff}), decode.ReasonNotProtobuf, "", "not Protobuf"},
		{"invalid UTF-8", tagBytes(nil, fS, []byte{0xff, 0xfe}), decode.ReasonConvert, "s", "UTF-8"},
		{"nested invalid UTF-8", tagBytes(nil, fInner, tagBytes(nil, 1, []byte{0xc3})), decode.ReasonConvert, "inner", "inner.label"},
		{"nanos out of range", ts(0, 1e9), decode.ReasonConvert, "ts", "outside years 1 to 9999"},
		{"seconds out of range", ts(253_402_300_800, 0), decode.ReasonConvert, "ts", "outside years 1 to 9999"},
		{"February 30", date(2026, 2, 30), decode.ReasonConvert, "day", "2026-02-30 is not a calendar date"},
		{"date without a year", date(0, 5, 1), decode.ReasonConvert, "day", "not a calendar date"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.DecodeInto(nil, tc.msg)
			var de *decode.Error
			if !errors.As(err, &de) || de.Reason != tc.reason || de.Column != tc.column || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("err = %v (%#v), want reason %s column %q and a message containing %q", err, de, tc.reason, tc.column, tc.text)
			}
		})
	}

	// A uint64 over 2^63-1 does not fit a long column; a decimal column
	// too narrow for a value is a convert drop as well.
	narrow := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "big", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "small", Type: iceberg.DecimalTypeOf(3, 1)},
		iceberg.NestedField{ID: 3, Name: "need", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 4, Name: "huge", Type: iceberg.DecimalTypeOf(38, 37)},
	)
	nd, err := New(narrow, map[string]string{"big": "u64", "small": "i32", "need": "w_s", "huge": "i64"}, md)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		msg    []byte
		reason string
		column string
		text   string
	}{
		{"uint64 over long", tagVarint(nil, fU64, math.MaxUint64), decode.ReasonConvert, "big", "18446744073709551615 does not fit a long"},
		{"decimal precision", tagVarint(nil, fI32, 100), decode.ReasonConvert, "small", "100 does not fit decimal(3,1)"},
		// 10^18 scaled by 10^37 would wrap around 128 bits.
		{"decimal scaled past 38 digits", tagVarint(nil, 4, 1e18), decode.ReasonConvert, "huge", "1000000000000000000 does not fit decimal(38,37)"},
		{"required absent", tagVarint(nil, fU64, 1), decode.ReasonMissingRequired, "need", `"need"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := nd.DecodeInto(nil, tc.msg)
			var de *decode.Error
			if !errors.As(err, &de) || de.Reason != tc.reason || de.Column != tc.column || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("err = %v, want reason %s column %q and a message containing %q", err, tc.reason, tc.column, tc.text)
			}
		})
	}
	row, err := nd.DecodeInto(nil, append(tagVarint(nil, fI32, 99), tagBytes(nil, 27, nil)...))
	if err != nil || row[1] != decimal128.FromI64(990) || row[2] != "" || row[3] != decimal128.FromI64(0) {
		t.Errorf("row = %v, %v; want 99.0 as 990 unscaled and the empty wrapped string", row, err)
	}
}

func TestDecodeLimits(t *testing.T) {
	d, _ := allDecoder(t)
	d.Limit(10, 2)
	if b, dep := d.Limits(); b != 10 || dep != 2 {
		t.Errorf("Limits() = %d %d, want 10 2", b, dep)
	}
	var de *decode.Error
	_, err := d.DecodeInto(nil, make([]byte, 11))
	if !errors.As(err, &de) || de.Reason != decode.ReasonTooLarge {
		t.Errorf("11 bytes: err = %v, want too_large", err)
	}
	// inner.leaf is at depth 3.
	leaf := tagBytes(nil, fInner, tagBytes(nil, 3, nil))
	if _, err := d.DecodeInto(nil, leaf); !errors.As(err, &de) || de.Reason != decode.ReasonTooDeep {
		t.Errorf("depth 3: err = %v, want too_deep", err)
	}
	if _, err := d.DecodeInto(nil, tagBytes(nil, fInner, nil)); err != nil {
		t.Errorf("depth 2: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	md := allMessage(t)
	col := func(name string, typ iceberg.Type, required bool) *iceberg.Schema {
		return iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: name, Type: typ, Required: required})
	}
	for _, tc := range []struct {
		name    string
		table   *iceberg.Schema
		mapping map[string]string
		want    string
	}{
		{"narrower type", col("x", iceberg.PrimitiveTypes.Int32, false), map[string]string{"x": "i64"}, `column "x": protobuf int64 x does not convert to int`},
		{"string to long", col("x", iceberg.PrimitiveTypes.Int64, false), map[string]string{"x": "s"}, "does not convert to long"},
		{"message to string", col("x", iceberg.PrimitiveTypes.String, false), map[string]string{"x": "inner"}, "does not convert to string"},
		{"timestamp to date", col("x", iceberg.PrimitiveTypes.Date, false), map[string]string{"x": "ts"}, "does not convert to date"},
		{"repeated to scalar", col("x", iceberg.PrimitiveTypes.Int64, false), map[string]string{"x": "nums"}, "does not convert to long"},
		{"map to list", col("x", &iceberg.ListType{ElementID: 2, Element: iceberg.PrimitiveTypes.String}, false), map[string]string{"x": "counts"}, "does not convert to list"},
		{"through a scalar", col("x", iceberg.PrimitiveTypes.String, false), map[string]string{"x": "s.y"}, "not a singular message"},
		{"through a list", col("x", iceberg.PrimitiveTypes.String, false), map[string]string{"x": "inners.label"}, "not a singular message"},
		{"empty segment", col("x", iceberg.PrimitiveTypes.String, false), map[string]string{"x": "inner..label"}, "not a path"},
		{"unknown column", col("x", iceberg.PrimitiveTypes.String, false), map[string]string{"y": "s"}, `column "y"`},
		{"binary map keys", col("x", &iceberg.MapType{KeyID: 2, KeyType: iceberg.PrimitiveTypes.Binary, ValueID: 3, ValueType: iceberg.PrimitiveTypes.Int64}, false), map[string]string{"x": "counts"}, "binary keys are not supported"},
		{"required unmapped", col("x", iceberg.PrimitiveTypes.String, true), map[string]string{}, `required column "x" has no mapping`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.table, tc.mapping, md)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
