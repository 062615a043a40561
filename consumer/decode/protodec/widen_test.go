package protodec

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/icewal/ingestor/consumer/decode"
)

// TestDecodeOtherColumnTypes covers the pairs New accepts beyond the
// types TableSchema gives: wider numbers, decimals from integers and
// strings, uuid and fixed from bytes or strings, enums as numbers,
// timestamps in nanoseconds.
func TestDecodeOtherColumnTypes(t *testing.T) {
	fd := compile(t, `syntax = "proto3";
import "google/protobuf/timestamp.proto";
enum E { E0 = 0; E1 = 1; }
message M {
  int32 i = 1; float f = 2; string dec = 3; int64 l = 4; bytes u = 5; string us = 6;
  bytes fx = 7; E e = 8; google.protobuf.Timestamp ts = 9; string bin = 10; uint64 u64 = 11;
}`, nil)
	md := fd.Messages().ByName("M")
	f := func(id int, name string, typ iceberg.Type) iceberg.NestedField {
		return iceberg.NestedField{ID: id, Name: name, Type: typ}
	}
	table := iceberg.NewSchema(0,
		f(1, "i", iceberg.PrimitiveTypes.Int64), f(2, "f", iceberg.PrimitiveTypes.Float64),
		f(3, "dec", iceberg.DecimalTypeOf(9, 2)), f(4, "l", iceberg.DecimalTypeOf(10, 3)),
		f(5, "u", iceberg.PrimitiveTypes.UUID), f(6, "us", iceberg.PrimitiveTypes.UUID),
		f(7, "fx", iceberg.FixedTypeOf(2)), f(8, "e", iceberg.PrimitiveTypes.Int32),
		f(9, "ts", iceberg.PrimitiveTypes.TimestampTzNs), f(10, "bin", iceberg.PrimitiveTypes.Binary),
		f(11, "u64", iceberg.PrimitiveTypes.Int64),
	)
	d, err := New(table, nil, md)
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.MustParse("0b9e7c1a-52f4-4c3e-9d6b-8a1f2e3d4c5b")
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	row, err := d.DecodeInto(nil, marshal(t, md, map[string]any{
		"i": int32(-3), "f": float32(0.5), "dec": "-1234.5", "l": int64(7), "u": id[:], "us": id.String(),
		"fx": []byte{1, 2}, "e": protoreflect.EnumNumber(1), "ts": map[string]any{"seconds": at.Unix(), "nanos": int32(6)},
		"bin": "text", "u64": uint64(5),
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := decode.Row{int64(-3), 0.5, decimal128.FromI64(-123450), decimal128.FromI64(7000), id, id,
		[]byte{1, 2}, int32(1), arrow.Timestamp(at.UnixNano()), []byte("text"), int64(5)}
	if !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v\nwant %#v", row, want)
	}

	for _, tc := range []struct {
		name   string
		fields map[string]any
		column string
		text   string
	}{
		{"decimal fraction too long", map[string]any{"dec": "1.234"}, "dec", "more than 2 fraction digits"},
		{"decimal too many digits", map[string]any{"dec": "12345678.9"}, "dec", "does not fit decimal(9,2)"},
		{"not a decimal", map[string]any{"dec": "1e5"}, "dec", "not a decimal number"},
		{"empty decimal", map[string]any{"dec": "-"}, "dec", "not a decimal number"},
		{"uuid bytes", map[string]any{"u": []byte{1}}, "u", "not a UUID"},
		{"uuid text", map[string]any{"us": "{" + id.String() + "}"}, "us", "not a UUID"},
		{"fixed length", map[string]any{"fx": []byte{1}}, "fx", "do not fit fixed[2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.DecodeInto(nil, marshal(t, md, tc.fields))
			var de *decode.Error
			if !errors.As(err, &de) || de.Reason != decode.ReasonConvert || de.Column != tc.column || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("err = %v, want a convert error of column %s containing %q", err, tc.column, tc.text)
			}
		})
	}
}
