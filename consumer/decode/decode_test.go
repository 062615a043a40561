package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
	"github.com/icewal/ingestor/consumer/decode/decodetest"
	"github.com/jmespath/go-jmespath"
)

func days(s string) arrow.Date32 {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return arrow.Date32(t.Unix() / 86400)
}

func micros(s string) arrow.Timestamp {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return arrow.Timestamp(t.UnixMicro())
}

func mustUUID(s string) uuid.UUID { return uuid.MustParse(s) }

var (
	structAB = &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 10, Name: "a", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		{ID: 11, Name: "b", Type: iceberg.PrimitiveTypes.String},
	}}
	structNested = &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 12, Name: "inner", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 13, Name: "z", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		}}},
	}}
	listInt         = &iceberg.ListType{ElementID: 14, Element: iceberg.PrimitiveTypes.Int32}
	listIntRequired = &iceberg.ListType{ElementID: 15, Element: iceberg.PrimitiveTypes.Int32, ElementRequired: true}
	mapStringInt    = &iceberg.MapType{KeyID: 16, KeyType: iceberg.PrimitiveTypes.String, ValueID: 17, ValueType: iceberg.PrimitiveTypes.Int32}
	mapStringIntReq = &iceberg.MapType{KeyID: 16, KeyType: iceberg.PrimitiveTypes.String, ValueID: 17, ValueType: iceberg.PrimitiveTypes.Int32, ValueRequired: true}
	mapIntString    = &iceberg.MapType{KeyID: 18, KeyType: iceberg.PrimitiveTypes.Int32, ValueID: 19, ValueType: iceberg.PrimitiveTypes.String}
	mapDateLong     = &iceberg.MapType{KeyID: 20, KeyType: iceberg.PrimitiveTypes.Date, ValueID: 21, ValueType: iceberg.PrimitiveTypes.Int64}
)

func TestConvert(t *testing.T) {
	dec92 := iceberg.DecimalTypeOf(9, 2)
	dec38 := iceberg.DecimalTypeOf(38, 10)
	cases := []struct {
		name string
		typ  iceberg.Type
		json string
		want any
		// err is a substring of the error message; set for failures.
		err string
	}{
		{"string/string", iceberg.PrimitiveTypes.String, `"abc"`, "abc", ""},
		{"string/unicode", iceberg.PrimitiveTypes.String, `"h\u00e9\ud83d\ude00"`, "hé😀", ""},
		{"string/integer", iceberg.PrimitiveTypes.String, `42`, "42", ""},
		{"string/number text kept", iceberg.PrimitiveTypes.String, `1.50e3`, "1.50e3", ""},
		{"string/bool", iceberg.PrimitiveTypes.String, `true`, "true", ""},
		{"string/object", iceberg.PrimitiveTypes.String, `{"a":1}`, nil, `cannot convert JSON object to string`},
		{"string/array", iceberg.PrimitiveTypes.String, `[1]`, nil, `cannot convert JSON array to string`},

		{"int/number", iceberg.PrimitiveTypes.Int32, `42`, int32(42), ""},
		{"int/negative", iceberg.PrimitiveTypes.Int32, `-2147483648`, int32(math.MinInt32), ""},
		{"int/max", iceberg.PrimitiveTypes.Int32, `2147483647`, int32(math.MaxInt32), ""},
		{"int/string", iceberg.PrimitiveTypes.Int32, `"42"`, int32(42), ""},
		{"int/negative string", iceberg.PrimitiveTypes.Int32, `"-7"`, int32(-7), ""},
		{"int/exponent", iceberg.PrimitiveTypes.Int32, `1e3`, int32(1000), ""},
		{"int/integral fraction", iceberg.PrimitiveTypes.Int32, `42.000`, int32(42), ""},
		{"int/zero with exponent", iceberg.PrimitiveTypes.Int32, `0e999999999999`, int32(0), ""},
		{"int/overflow", iceberg.PrimitiveTypes.Int32, `2147483648`, nil, "out of range (value 2147483648)"},
		{"int/underflow", iceberg.PrimitiveTypes.Int32, `-2147483649`, nil, "out of range"},
		{"int/fraction", iceberg.PrimitiveTypes.Int32, `1.5`, nil, "has a fraction (value 1.5)"},
		{"int/fraction string", iceberg.PrimitiveTypes.Int32, `"1.5"`, nil, "has a fraction"},
		{"int/tiny", iceberg.PrimitiveTypes.Int32, `1e-400`, nil, "has a fraction"},
		{"int/huge exponent", iceberg.PrimitiveTypes.Int32, `1e999999999`, nil, "out of range"},
		{"int/word", iceberg.PrimitiveTypes.Int32, `"abc"`, nil, `not a JSON number (value "abc")`},
		{"int/empty string", iceberg.PrimitiveTypes.Int32, `""`, nil, "not a JSON number"},
		{"int/spaces", iceberg.PrimitiveTypes.Int32, `" 42"`, nil, "not a JSON number"},
		{"int/hex", iceberg.PrimitiveTypes.Int32, `"0x10"`, nil, "not a JSON number"},
		{"int/bool", iceberg.PrimitiveTypes.Int32, `true`, nil, "cannot convert JSON boolean to int"},

		{"long/max", iceberg.PrimitiveTypes.Int64, `9223372036854775807`, int64(math.MaxInt64), ""},
		{"long/min", iceberg.PrimitiveTypes.Int64, `-9223372036854775808`, int64(math.MinInt64), ""},
		{"long/beyond 2^53", iceberg.PrimitiveTypes.Int64, `9007199254740993`, int64(9007199254740993), ""},
		{"long/string", iceberg.PrimitiveTypes.Int64, `"9223372036854775807"`, int64(math.MaxInt64), ""},
		{"long/overflow", iceberg.PrimitiveTypes.Int64, `9223372036854775808`, nil, "out of range"},
		{"long/negative overflow", iceberg.PrimitiveTypes.Int64, `-9223372036854775809`, nil, "out of range"},
		{"long/huge", iceberg.PrimitiveTypes.Int64, `123456789012345678901234567890`, nil, "out of range"},
		{"long/fraction", iceberg.PrimitiveTypes.Int64, `10.01`, nil, "has a fraction"},
		{"long/object", iceberg.PrimitiveTypes.Int64, `{}`, nil, "cannot convert JSON object to long"},

		{"float/number", iceberg.PrimitiveTypes.Float32, `1.5`, float32(1.5), ""},
		{"float/string", iceberg.PrimitiveTypes.Float32, `"-2.25"`, float32(-2.25), ""},
		{"float/infinity string", iceberg.PrimitiveTypes.Float32, `"-Infinity"`, float32(math.Inf(-1)), ""},
		{"float/overflow", iceberg.PrimitiveTypes.Float32, `1e39`, nil, "out of range"},
		{"float/word", iceberg.PrimitiveTypes.Float32, `"one"`, nil, "not a JSON number"},
		{"float/bool", iceberg.PrimitiveTypes.Float32, `false`, nil, "cannot convert JSON boolean to float"},

		{"double/number", iceberg.PrimitiveTypes.Float64, `0.1`, 0.1, ""},
		{"double/max", iceberg.PrimitiveTypes.Float64, `1.7976931348623157e308`, math.MaxFloat64, ""},
		{"double/string", iceberg.PrimitiveTypes.Float64, `"1e-5"`, 1e-5, ""},
		{"double/integer", iceberg.PrimitiveTypes.Float64, `3`, 3.0, ""},
		{"double/inf string", iceberg.PrimitiveTypes.Float64, `"inf"`, math.Inf(1), ""},
		{"double/overflow", iceberg.PrimitiveTypes.Float64, `1e309`, nil, "out of range"},
		{"double/string overflow", iceberg.PrimitiveTypes.Float64, `"-1e309"`, nil, "out of range"},
		{"double/array", iceberg.PrimitiveTypes.Float64, `[1.5]`, nil, "cannot convert JSON array to double"},

		{"boolean/true", iceberg.PrimitiveTypes.Bool, `true`, true, ""},
		{"boolean/false", iceberg.PrimitiveTypes.Bool, `false`, false, ""},
		{"boolean/string", iceberg.PrimitiveTypes.Bool, `"true"`, true, ""},
		{"boolean/false string", iceberg.PrimitiveTypes.Bool, `"false"`, false, ""},
		{"boolean/other string", iceberg.PrimitiveTypes.Bool, `"yes"`, nil, `want "true" or "false"`},
		{"boolean/number", iceberg.PrimitiveTypes.Bool, `1`, nil, "cannot convert JSON number to boolean"},

		{"date/date", iceberg.PrimitiveTypes.Date, `"2026-11-30"`, days("2026-11-30"), ""},
		{"date/before epoch", iceberg.PrimitiveTypes.Date, `"1969-12-31"`, arrow.Date32(-1), ""},
		{"date/leap day", iceberg.PrimitiveTypes.Date, `"2024-02-29"`, days("2024-02-29"), ""},
		{"date/timestamp", iceberg.PrimitiveTypes.Date, `"2026-11-30T10:00:00Z"`, days("2026-11-30"), ""},
		{"date/timestamp in UTC", iceberg.PrimitiveTypes.Date, `"2026-11-30T23:30:00-05:00"`, days("2026-12-01"), ""},
		{"date/timestamp before epoch", iceberg.PrimitiveTypes.Date, `"1969-12-31T23:59:59Z"`, arrow.Date32(-1), ""},
		{"date/no leap day", iceberg.PrimitiveTypes.Date, `"2026-02-29"`, nil, "want YYYY-MM-DD"},
		{"date/month 13", iceberg.PrimitiveTypes.Date, `"2026-13-01"`, nil, "want YYYY-MM-DD"},
		{"date/short", iceberg.PrimitiveTypes.Date, `"2026-1-1"`, nil, "want YYYY-MM-DD"},
		{"date/number", iceberg.PrimitiveTypes.Date, `20261130`, nil, "cannot convert JSON number to date"},

		{"time/micros", iceberg.PrimitiveTypes.Time, `"12:34:56.789012"`, arrow.Time64((12*3600+34*60+56)*1e6 + 789012), ""},
		{"time/seconds", iceberg.PrimitiveTypes.Time, `"00:00:01"`, arrow.Time64(1e6), ""},
		{"time/hour 25", iceberg.PrimitiveTypes.Time, `"25:00:00"`, nil, "want HH:MM:SS"},
		{"time/zone", iceberg.PrimitiveTypes.Time, `"12:00:00Z"`, nil, "want HH:MM:SS"},

		{"timestamp/utc", iceberg.PrimitiveTypes.Timestamp, `"2026-11-30T12:34:56.123456Z"`, micros("2026-11-30T12:34:56.123456Z"), ""},
		{"timestamp/nanos truncated", iceberg.PrimitiveTypes.Timestamp, `"2026-11-30T12:34:56.123456789Z"`, micros("2026-11-30T12:34:56.123456Z"), ""},
		{"timestamp/offset", iceberg.PrimitiveTypes.Timestamp, `"2026-11-30T12:34:56+02:00"`, micros("2026-11-30T10:34:56Z"), ""},
		{"timestamp/no zone", iceberg.PrimitiveTypes.Timestamp, `"2026-11-30T12:34:56"`, micros("2026-11-30T12:34:56Z"), ""},
		{"timestamp/space", iceberg.PrimitiveTypes.Timestamp, `"2026-11-30 12:34:56.5"`, micros("2026-11-30T12:34:56.5Z"), ""},
		{"timestamp/date only", iceberg.PrimitiveTypes.Timestamp, `"2026-11-30"`, micros("2026-11-30T00:00:00Z"), ""},
		{"timestamp/epoch millis", iceberg.PrimitiveTypes.Timestamp, `1764505496123`, micros("2025-11-30T12:24:56.123Z"), ""},
		{"timestamp/fractional millis", iceberg.PrimitiveTypes.Timestamp, `1764505496123.5`, micros("2025-11-30T12:24:56.1235Z"), ""},
		{"timestamp/negative millis", iceberg.PrimitiveTypes.Timestamp, `-1`, arrow.Timestamp(-1000), ""},
		{"timestamp/sub-microsecond millis", iceberg.PrimitiveTypes.Timestamp, `0.0001`, nil, "more precise than the column"},
		{"timestamp/millis overflow", iceberg.PrimitiveTypes.Timestamp, `9223372036854775807`, nil, "out of range"},
		{"timestamp/offset without colon", iceberg.PrimitiveTypes.Timestamp, `"2026-11-30T12:34:56+0200"`, nil, "want an RFC 3339 timestamp"},
		{"timestamp/no seconds", iceberg.PrimitiveTypes.Timestamp, `"2026-11-30T12:34"`, nil, "want an RFC 3339 timestamp"},
		{"timestamp/word", iceberg.PrimitiveTypes.Timestamp, `"yesterday"`, nil, "want an RFC 3339 timestamp"},
		{"timestamp/bool", iceberg.PrimitiveTypes.Timestamp, `true`, nil, "cannot convert JSON boolean to timestamp"},
		{"timestamptz/utc", iceberg.PrimitiveTypes.TimestampTz, `"2026-11-30T12:34:56Z"`, micros("2026-11-30T12:34:56Z"), ""},
		{"timestamptz/offset", iceberg.PrimitiveTypes.TimestampTz, `"2026-11-30T00:30:00-01:30"`, micros("2026-11-30T02:00:00Z"), ""},
		{"timestamptz/before epoch floors", iceberg.PrimitiveTypes.TimestampTz, `"1969-12-31T23:59:59.9999995Z"`, arrow.Timestamp(-1), ""},
		{"timestamptz/millis", iceberg.PrimitiveTypes.TimestampTz, `0`, arrow.Timestamp(0), ""},
		{"timestamptz/array", iceberg.PrimitiveTypes.TimestampTz, `[]`, nil, "cannot convert JSON array to timestamptz"},
		{"timestamptz_ns/nanos", iceberg.PrimitiveTypes.TimestampTzNs, `"2026-11-30T12:34:56.123456789Z"`, arrow.Timestamp(micros("2026-11-30T12:34:56Z")*1000 + 123456789), ""},
		{"timestamp_ns/millis", iceberg.PrimitiveTypes.TimestampNs, `1.000001`, arrow.Timestamp(1000001), ""},

		{"decimal/number", dec92, `123.45`, decimal128.FromI64(12345), ""},
		{"decimal/string", dec92, `"-123.45"`, decimal128.FromI64(-12345), ""},
		{"decimal/fewer digits", dec92, `1.5`, decimal128.FromI64(150), ""},
		{"decimal/trailing zeros", dec92, `1.500`, decimal128.FromI64(150), ""},
		{"decimal/integer", dec92, `7`, decimal128.FromI64(700), ""},
		{"decimal/exponent", dec92, `1e2`, decimal128.FromI64(10000), ""},
		{"decimal/negative exponent", dec92, `15e-2`, decimal128.FromI64(15), ""},
		{"decimal/zero", dec92, `-0.0`, decimal128.FromI64(0), ""},
		{"decimal/max", dec92, `9999999.99`, decimal128.FromI64(999999999), ""},
		{"decimal/too many fraction digits", dec92, `1.505`, nil, "more than 2 fraction digits (value 1.505)"},
		{"decimal/too many digits", dec92, `12345678.9`, nil, "more than 9 digits"},
		{"decimal/huge exponent", dec92, `1e400`, nil, "more than 9 digits"},
		{"decimal/word", dec92, `"ten"`, nil, "not a JSON number"},
		{"decimal/bool", dec92, `true`, nil, "cannot convert JSON boolean to decimal(9, 2)"},
		{"decimal38/exact", dec38, `1234567890123456789012345678.1234567890`, decodetest.BigDecimal("12345678901234567890123456781234567890"), ""},
		{"decimal38/negative", dec38, `"-0.0000000001"`, decimal128.FromI64(-1), ""},
		{"decimal38/too many digits", dec38, `12345678901234567890123456789.1`, nil, "more than 38 digits"},

		{"binary/base64", iceberg.PrimitiveTypes.Binary, `"aGVsbG8="`, []byte("hello"), ""},
		{"binary/unpadded", iceberg.PrimitiveTypes.Binary, `"aGVsbG8"`, []byte("hello"), ""},
		{"binary/url alphabet", iceberg.PrimitiveTypes.Binary, `"-_8="`, []byte{0xfb, 0xff}, ""},
		{"binary/empty", iceberg.PrimitiveTypes.Binary, `""`, []byte{}, ""},
		{"binary/not base64", iceberg.PrimitiveTypes.Binary, `"***"`, nil, "not base64"},
		{"binary/number", iceberg.PrimitiveTypes.Binary, `5`, nil, "cannot convert JSON number to binary"},
		{"fixed/base64", iceberg.FixedTypeOf(4), `"AQIDBA=="`, []byte{1, 2, 3, 4}, ""},
		{"fixed/wrong length", iceberg.FixedTypeOf(4), `"AQID"`, nil, "decoded length 3, want 4"},

		{"uuid/canonical", iceberg.PrimitiveTypes.UUID, `"f81d4fae-7dec-11d0-a765-00a0c91e6bf6"`, mustUUID("f81d4fae-7dec-11d0-a765-00a0c91e6bf6"), ""},
		{"uuid/upper case", iceberg.PrimitiveTypes.UUID, `"F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6"`, mustUUID("f81d4fae-7dec-11d0-a765-00a0c91e6bf6"), ""},
		{"uuid/urn", iceberg.PrimitiveTypes.UUID, `"urn:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6"`, nil, "canonical"},
		{"uuid/bare hex", iceberg.PrimitiveTypes.UUID, `"f81d4fae7dec11d0a76500a0c91e6bf6"`, nil, "canonical"},
		{"uuid/bad hex", iceberg.PrimitiveTypes.UUID, `"g81d4fae-7dec-11d0-a765-00a0c91e6bf6"`, nil, "canonical"},
		{"uuid/number", iceberg.PrimitiveTypes.UUID, `1`, nil, "cannot convert JSON number to uuid"},

		{"struct/full", structAB, `{"a":1,"b":"x","extra":true}`, []any{int32(1), "x"}, ""},
		{"struct/optional missing", structAB, `{"a":1}`, []any{int32(1), nil}, ""},
		{"struct/optional null", structAB, `{"a":1,"b":null}`, []any{int32(1), nil}, ""},
		{"struct/required missing", structAB, `{"b":"x"}`, nil, "v.a: required field is missing or null"},
		{"struct/required null", structAB, `{"a":null}`, nil, "v.a: required field is missing or null"},
		{"struct/field type", structAB, `{"a":"x"}`, nil, `v.a: cannot convert JSON string to int: not a JSON number (value "x")`},
		{"struct/array", structAB, `[1]`, nil, "cannot convert JSON array to struct"},
		{"struct/nested missing", structNested, `{"inner":{}}`, nil, "v.inner.z: required field is missing or null"},
		{"struct/nested null parent", structNested, `{"inner":null}`, []any{nil}, ""},
		{"struct/nested ok", structNested, `{"inner":{"z":3}}`, []any{[]any{int32(3)}}, ""},

		{"list/values", listInt, `[1,2,null]`, []any{int32(1), int32(2), nil}, ""},
		{"list/empty", listInt, `[]`, []any{}, ""},
		{"list/bad element", listInt, `[1,"x"]`, nil, `v[1]: cannot convert JSON string to int`},
		{"list/object", listInt, `{}`, nil, "cannot convert JSON object to list<int>"},
		{"list/required element null", listIntRequired, `[1,null]`, nil, "v[1]: required field is missing or null"},
		{"list/required elements", listIntRequired, `[1,2]`, []any{int32(1), int32(2)}, ""},

		{"map/sorted", mapStringInt, `{"b":2,"a":1}`, MapValue{Keys: []any{"a", "b"}, Values: []any{int32(1), int32(2)}}, ""},
		{"map/empty", mapStringInt, `{}`, MapValue{Keys: []any{}, Values: []any{}}, ""},
		{"map/null value", mapStringInt, `{"a":null}`, MapValue{Keys: []any{"a"}, Values: []any{nil}}, ""},
		{"map/required value null", mapStringIntReq, `{"a":null}`, nil, `v["a"]: required field is missing or null`},
		{"map/bad value", mapStringInt, `{"a":"x"}`, nil, `v["a"]: cannot convert JSON string to int`},
		{"map/array", mapStringInt, `[]`, nil, "cannot convert JSON array to map<string, int>"},
		{"map/int keys", mapIntString, `{"10":"x","9":"y"}`, MapValue{Keys: []any{int32(10), int32(9)}, Values: []any{"x", "y"}}, ""},
		{"map/bad int key", mapIntString, `{"x":"y"}`, nil, `v["x"]: cannot convert JSON string to int: not a JSON number`},
		{"map/date keys", mapDateLong, `{"2026-01-01":1}`, MapValue{Keys: []any{days("2026-01-01")}, Values: []any{int64(1)}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(decodetest.OneColumn(tc.typ, false), map[string]string{"v": "v"})
			if err != nil {
				t.Fatal(err)
			}
			row, err := d.DecodeInto(nil, []byte(`{"v":`+tc.json+`}`))
			if tc.err != "" {
				var de *Error
				if !errors.As(err, &de) {
					t.Fatalf("Decode = %v, %v; want a Error containing %q", row, err, tc.err)
				}
				if de.Reason != ReasonConvert || de.Column != "v" {
					t.Errorf("reason %q column %q, want %q %q", de.Reason, de.Column, ReasonConvert, "v")
				}
				if !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %q does not contain %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(row[0], tc.want) {
				t.Errorf("got %#v, want %#v", row[0], tc.want)
			}
		})
	}
}

func TestConvertNaN(t *testing.T) {
	for _, typ := range []iceberg.Type{iceberg.PrimitiveTypes.Float32, iceberg.PrimitiveTypes.Float64} {
		d, err := New(decodetest.OneColumn(typ, true), map[string]string{"v": "v"})
		if err != nil {
			t.Fatal(err)
		}
		row, err := d.DecodeInto(nil, []byte(`{"v":"NaN"}`))
		if err != nil {
			t.Fatal(err)
		}
		var isNaN bool
		switch f := row[0].(type) {
		case float32:
			isNaN = f != f
		case float64:
			isNaN = math.IsNaN(f)
		}
		if !isNaN {
			t.Errorf("%s: got %#v, want NaN", typ, row[0])
		}
	}
}

func TestDecodeNullsAndMissing(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "unmapped", Type: iceberg.PrimitiveTypes.String},
	)
	d, err := New(schema, map[string]string{"id": "meta.id", "name": "name"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		payload string
		want    Row
		reason  string
	}{
		{"all present", `{"meta":{"id":5},"name":"x","unmapped":"ignored"}`, Row{int64(5), "x", nil}, ""},
		{"optional missing", `{"meta":{"id":5}}`, Row{int64(5), nil, nil}, ""},
		{"optional null", `{"meta":{"id":5},"name":null}`, Row{int64(5), nil, nil}, ""},
		{"required missing", `{"name":"x"}`, nil, ReasonMissingRequired},
		{"required null", `{"meta":{"id":null}}`, nil, ReasonMissingRequired},
		{"required parent not an object", `{"meta":[1]}`, nil, ReasonMissingRequired},
		{"top level array", `[1,2]`, nil, ReasonMissingRequired},
		{"convert", `{"meta":{"id":"x"}}`, nil, ReasonConvert},
		{"empty", ``, nil, ReasonNotJSON},
		{"whitespace", " \n", nil, ReasonNotJSON},
		{"truncated", `{"meta":{"id":5}`, nil, ReasonNotJSON},
		{"trailing garbage", `{"meta":{"id":5}} x`, nil, ReasonNotJSON},
		{"two values", `{"meta":{"id":5}} {}`, nil, ReasonNotJSON},
		{"trailing brace", `{"meta":{"id":5}}}`, nil, ReasonNotJSON},
		{"trailing whitespace", "{\"meta\":{\"id\":5}}\n\t ", Row{int64(5), nil, nil}, ""},
		{"NaN literal", `{"meta":{"id":NaN}}`, nil, ReasonNotJSON},
		{"single quotes", `{'meta':1}`, nil, ReasonNotJSON},
		{"duplicate key last wins", `{"meta":{"id":1},"meta":{"id":2}}`, Row{int64(2), nil, nil}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			row, err := d.DecodeInto(nil, []byte(tc.payload))
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(row, tc.want) {
					t.Errorf("got %#v, want %#v", row, tc.want)
				}
				return
			}
			var de *Error
			if !errors.As(err, &de) || de.Reason != tc.reason {
				t.Fatalf("Decode = %v, %v; want reason %s", row, err, tc.reason)
			}
			if row != nil {
				t.Errorf("row %v returned with an error", row)
			}
			if tc.reason == ReasonMissingRequired && (de.Column != "id" || !strings.Contains(err.Error(), `"id"`)) {
				t.Errorf("column %q, error %q: want column id", de.Column, err)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	d, err := New(decodetest.OneColumn(iceberg.PrimitiveTypes.Int32, true), map[string]string{"v": "payload.v"})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 500)
	_, err = d.DecodeInto(nil, []byte(`{"payload":{"v":"`+long+`"}}`))
	msg := err.Error()
	if !strings.HasPrefix(msg, `decode column "v": cannot convert JSON string to int: not a JSON number (value "xxxx`) {
		t.Errorf("message %q", msg)
	}
	if !strings.Contains(msg, "...") || len(msg) > 150 {
		t.Errorf("value not truncated: %d bytes: %q", len(msg), msg)
	}

	_, err = d.DecodeInto(nil, []byte(`{"payload":{"v":{"k":[`+strings.Repeat(`"abcdef",`, 100)+`1]}}}`))
	if msg := err.Error(); !strings.Contains(msg, `(value {"k":["abcdef","abcdef",`) || len(msg) > 160 {
		t.Errorf("object value not rendered and truncated: %q", msg)
	}

	_, err = d.DecodeInto(nil, []byte(`{"payload":`))
	var de *Error
	if !errors.As(err, &de) || de.Reason != ReasonNotJSON || !strings.HasPrefix(err.Error(), "decode payload: not JSON: ") {
		t.Errorf("not JSON error %v", err)
	}
	if de.Unwrap() == nil {
		t.Error("Unwrap gives nil")
	}
}

func TestNewErrors(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "note", Type: iceberg.PrimitiveTypes.String},
	)
	cases := []struct {
		name    string
		schema  *iceberg.Schema
		mapping map[string]string
		err     string
	}{
		{"unknown column", schema, map[string]string{"id": "id", "nope": "x"}, `"nope"`},
		{"nested column name", schema, map[string]string{"id": "id", "note.x": "x"}, `"note.x"`},
		{"required unmapped", schema, map[string]string{"note": "note"}, `"id"`},
		{"bad expression", schema, map[string]string{"id": "id["}, `"id"`},
		{"unsupported type", iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "var", Type: iceberg.VariantType{}}), map[string]string{}, "var"},
		{"struct map key", decodetest.OneColumn(&iceberg.MapType{KeyID: 2, KeyType: structAB, ValueID: 3, ValueType: iceberg.PrimitiveTypes.String}, false), map[string]string{}, "map key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.schema, tc.mapping)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("New error %v, want one containing %s", err, tc.err)
			}
		})
	}
	// An optional unmapped column is fine and always null.
	d, err := New(schema, map[string]string{"id": "id"})
	if err != nil {
		t.Fatal(err)
	}
	row, err := d.DecodeInto(nil, []byte(`{"id":1,"note":"x"}`))
	if err != nil || row[1] != nil {
		t.Fatalf("row %v, err %v", row, err)
	}
}

// TestDecodeGeneralExpressions covers expressions that go-jmespath evaluates:
// numbers it can compare are float64, numbers a float64 cannot hold stay
// exact.
func TestDecodeGeneralExpressions(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "cheap", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 2, Name: "n", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 3, Name: "big", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 4, Name: "big_plain", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 5, Name: "skus", Type: &iceberg.ListType{ElementID: 9, Element: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 6, Name: "total", Type: iceberg.DecimalTypeOf(10, 2)},
		iceberg.NestedField{ID: 7, Name: "price_text", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 8, Name: "precise", Type: iceberg.DecimalTypeOf(38, 23)},
	)
	d, err := New(schema, map[string]string{
		"cheap":      "items[?price < `2`].sku | [0]",
		"n":          "length(items)",
		"big":        "items[?sku == 'b'].id | [0]",
		"big_plain":  "items[1].id",
		"skus":       "items[*].sku",
		"total":      "sum(items[*].price)",
		"price_text": "items[-1].price",
		"precise":    "items[?sku == 'c'].precise | [0]",
	})
	if err != nil {
		t.Fatal(err)
	}
	row, err := d.DecodeInto(nil, []byte(`{"items":[
		{"sku":"a","price":2.5,"id":1},
		{"sku":"b","price":1.25,"id":9007199254740993},
		{"sku":"c","price":1.50,"precise":0.12345678901234567890123}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Row{"b", int64(3), int64(9007199254740993), int64(9007199254740993), []any{"a", "b", "c"},
		decimal128.FromI64(525), "1.5", decodetest.BigDecimal("12345678901234567890123")}
	if !reflect.DeepEqual(row, want) {
		t.Errorf("got  %#v\nwant %#v", row, want)
	}

	d, err = New(decodetest.OneColumn(iceberg.PrimitiveTypes.Int64, false), map[string]string{"v": "abs(v)"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.DecodeInto(nil, []byte(`{"v":"x"}`))
	var de *Error
	if !errors.As(err, &de) || de.Reason != ReasonConvert || !strings.Contains(err.Error(), "evaluate mapping") {
		t.Errorf("function type error: %v", err)
	}
}

// stdParse is the reference parser: encoding/json with UseNumber, one
// value, nothing after it but whitespace.
func stdParse(payload []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data: %v", err)
	}
	return v, nil
}

// checkParserMatchesStd wants the parser to accept what encoding/json
// accepts and to build the same value.
func checkParserMatchesStd(t *testing.T, payload []byte) {
	t.Helper()
	want, wantErr := stdParse(payload)
	p := parser{s: string(payload)}
	got, err := p.document()
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%q: parser error %v, encoding/json error %v", payload, err, wantErr)
	}
	if (err == nil) != json.Valid(payload) {
		t.Fatalf("%q: parser error %v, json.Valid %v", payload, err, json.Valid(payload))
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: parser gives %#v, encoding/json %#v", payload, got, want)
	}
	// Skipping validates the same way.
	p = parser{s: string(payload)}
	p.ws()
	skipErr := p.skip()
	if skipErr == nil {
		skipErr = p.end()
	}
	if (skipErr == nil) != (wantErr == nil) {
		t.Fatalf("%q: skip error %v, encoding/json error %v", payload, skipErr, wantErr)
	}
}

func TestDecodeParserMatchesEncodingJSON(t *testing.T) {
	inputs := []string{
		`{}`, `[]`, `{"a":1}`, ` {"a" : [1, 2.5, -3e+2, 0, -0, 1E-2] , "b":{"c":null}} `, `"x"`, `1`, `-0.0e-0`,
		`true`, `false`, `null`, `{"a":1,"a":2}`, `{"a":{"b":1},"a":{"c":2}}`,
		`"\"\\\/\b\f\n\r\t"`, `"\u00e9\u20AC"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`,
		`"\ud83dx"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`, `"\uDFFF\uD800"`, "\"\xff\"", "\"a\xc3\"",
		"\"\xed\xa0\x80\"", "\"\xef\xbf\xbd\"", "\"é😀\"", "\"\\u00e9\xff\"", "\"\x7f\"",
		// Invalid.
		``, ` `, `{`, `[`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{1:2}`, `{'a':1}`, `01`, `1.`,
		`.5`, `-`, `1e`, `1e+`, `+1`, `0x10`, `NaN`, `Infinity`, `tru`, `nulll`, `"a`, `"\x"`, `"\'"`, `"\u12"`,
		`"\u12G4"`, "\"a\x01\"", "\"\t\"", `{"a":1}}`, `[1]]`, `1 2`, `{} {}`, `"\`, `[1 2]`, `{"a":1 "b":2}`,
		"\xef\xbb\xbf{}", "{}\x00", "\u00a0{}",
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
		strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
	}
	for _, in := range inputs {
		checkParserMatchesStd(t, []byte(in))
	}
	for _, doc := range decodetest.AllTypesDocs {
		checkParserMatchesStd(t, []byte(doc))
	}
	checkParserMatchesStd(t, []byte(decodetest.NarrowEvent))
}

// TestDecodeVisitMatchesWholeDocument checks the one-pass visit against
// evaluating the same plain paths on the whole document, where duplicate
// keys, non-objects on the way and folded paths make them differ if the
// visit is wrong.
func TestDecodeVisitMatchesWholeDocument(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "first_tag", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "tags", Type: &iceberg.ListType{ElementID: 9, Element: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 5, Name: "city", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 6, Name: "city2", Type: iceberg.PrimitiveTypes.String},
	)
	d, err := New(schema, map[string]string{
		"id": "meta.id", "name": "user.name", "first_tag": "user.tags[0]", "tags": "user.tags",
		"city": "user.address.city", "city2": `"user"."address"."city"`,
	})
	if err != nil {
		t.Fatal(err)
	}
	whole := *d
	whole.root = nil
	cases := []struct {
		doc  string
		want Row
	}{
		{`{"meta":{"id":1},"user":{"name":"a","tags":["x","y"],"address":{"city":"P"}}}`, Row{int64(1), "a", "x", []any{"x", "y"}, "P", "P"}},
		{`{"meta":{"id":1},"meta":{"other":2}}`, Row{nil, nil, nil, nil, nil, nil}},
		{`{"meta":{"id":1},"meta":5}`, Row{nil, nil, nil, nil, nil, nil}},
		{`{"meta":5,"meta":{"id":2}}`, Row{int64(2), nil, nil, nil, nil, nil}},
		{`{"user":{"name":"a","address":{"city":"P"}},"user":{"tags":["z"]}}`, Row{nil, nil, "z", []any{"z"}, nil, nil}},
		{`{"user":{"address":{"city":"P","city":"Q"}}}`, Row{nil, nil, nil, nil, "Q", "Q"}},
		{`{"user":["name"],"meta":{"id":{"x":1},"id":3}}`, Row{int64(3), nil, nil, nil, nil, nil}},
		{`{"us\u0065r":{"n\u0061me":"esc"}}`, Row{nil, "esc", nil, nil, nil, nil}},
		{`[{"meta":{"id":1}}]`, Row{nil, nil, nil, nil, nil, nil}},
		{`"meta"`, Row{nil, nil, nil, nil, nil, nil}},
	}
	for _, tc := range cases {
		got, err := d.DecodeInto(nil, []byte(tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", tc.doc, err)
		}
		ref, err := whole.DecodeInto(nil, []byte(tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", tc.doc, err)
		}
		if !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(ref, tc.want) {
			t.Errorf("%s:\nvisit %#v\nwhole %#v\nwant  %#v", tc.doc, got, ref, tc.want)
		}
	}
}

func TestDecodeConcurrent(t *testing.T) {
	schema := decodetest.AllTypesSchema()
	d, err := New(schema, decodetest.AllTypesMapping())
	if err != nil {
		t.Fatal(err)
	}
	want := make([]Row, len(decodetest.AllTypesDocs))
	for i, doc := range decodetest.AllTypesDocs {
		if want[i], err = d.DecodeInto(nil, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for n := range 200 {
				i := n % len(decodetest.AllTypesDocs)
				row, err := d.DecodeInto(nil, []byte(decodetest.AllTypesDocs[i]))
				if err == nil && !reflect.DeepEqual(row, want[i]) {
					err = fmt.Errorf("doc %d decoded differently", i)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestDecodeParsePlainPath(t *testing.T) {
	plain := map[string][]pathSeg{
		"a":             {{key: "a"}},
		"a.b_2.C":       {{key: "a"}, {key: "b_2"}, {key: "C"}},
		`"a b"."c.d"`:   {{key: "a b"}, {key: "c.d"}},
		`"q\"\\\u00e9"`: {{key: "q\"\\é"}},
		"a[0].b[-1][2]": {{key: "a"}, {index: 0, isIndex: true}, {key: "b"}, {index: -1, isIndex: true}, {index: 2, isIndex: true}},
		`_x."1"`:        {{key: "_x"}, {key: "1"}},
		`""`:            {{key: ""}},
	}
	for expr, want := range plain {
		got, ok := parsePlainPath(expr)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("parsePlainPath(%q) = %v, %v; want %v", expr, got, ok, want)
		}
	}
	for _, expr := range []string{
		"", "a.", ".a", "a..b", "a b", "a[*]", "a[]", "a[0:2]", "a | b", "a.*", "@", "`1`", "'a'",
		"length(a)", "a[?b]", "a[01]", "a[1", `"a`, "1a", "a.[b]", "a.{b: b}", "a[ 1]", "a .b", "a-b",
		"a[9999999999]", "[0]", "é",
	} {
		if segs, ok := parsePlainPath(expr); ok {
			t.Errorf("parsePlainPath(%q) = %v, want not plain", expr, segs)
		}
	}
}

// TestDecodePlainPathMatchesJMESPath evaluates many random plain paths over many
// random documents both ways and wants the same results.
func TestDecodePlainPathMatchesJMESPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"a", "b", "c_1", "A", "_", "a b", "é", `q"`, `back\slash`, "1", "", "c.d", "null", "true"}
	var randValue func(depth int) any
	randValue = func(depth int) any {
		switch n := rng.IntN(9); {
		case depth > 3 || n == 0:
			return json.Number(strconv.Itoa(rng.IntN(100) - 50))
		case n == 1:
			return keys[rng.IntN(len(keys))]
		case n == 2:
			return nil
		case n == 3:
			return rng.IntN(2) == 0
		case n <= 6:
			m := map[string]any{}
			for _, k := range keys {
				if rng.IntN(3) == 0 {
					m[k] = randValue(depth + 1)
				}
			}
			return m
		default:
			a := make([]any, rng.IntN(4))
			for i := range a {
				a[i] = randValue(depth + 1)
			}
			return a
		}
	}
	quote := func(k string) string {
		b, _ := json.Marshal(k)
		return string(b)
	}
	var exprs []string
	for range 400 {
		var b strings.Builder
		for i := range 1 + rng.IntN(4) {
			if i > 0 {
				b.WriteByte('.')
			}
			k := keys[rng.IntN(len(keys))]
			if _, ok := parsePlainPath(k); ok && rng.IntN(3) > 0 {
				b.WriteString(k)
			} else {
				b.WriteString(quote(k))
			}
			for range rng.IntN(3) {
				fmt.Fprintf(&b, "[%d]", rng.IntN(7)-3)
			}
		}
		exprs = append(exprs, b.String())
	}
	compared, nonNull := 0, 0
	for range 300 {
		doc := randValue(0)
		if rng.IntN(2) == 0 {
			// Documents where the paths tend to hit.
			m := map[string]any{}
			for _, k := range keys {
				m[k] = randValue(1)
			}
			doc = m
		}
		for _, expr := range exprs {
			segs, ok := parsePlainPath(expr)
			if !ok {
				t.Fatalf("generated expression %q is not plain", expr)
			}
			jp, err := jmespath.Compile(expr)
			if err != nil {
				t.Fatalf("compile %q: %v", expr, err)
			}
			want, err := jp.Search(doc)
			if err != nil {
				t.Fatalf("search %q: %v", expr, err)
			}
			got := evalPath(segs, doc)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q over %v: plain path gives %#v, go-jmespath %#v", expr, doc, got, want)
			}
			compared++
			if got != nil {
				nonNull++
			}
		}
	}
	// The comparison means little if every path misses.
	if nonNull < compared/50 {
		t.Errorf("only %d of %d evaluations were non-null", nonNull, compared)
	}
	t.Logf("%d evaluations, %d non-null", compared, nonNull)
}

// TestPlainAndGeneralDecodeAlike decodes the same documents with every
// expression plain and with every expression forced through go-jmespath
// (an identity pipe) and wants the same rows.
func TestPlainAndGeneralDecodeAlike(t *testing.T) {
	schema := decodetest.AllTypesSchema()
	plain := decodetest.AllTypesMapping()
	general := map[string]string{}
	for k, v := range plain {
		general[k] = v + " | @"
	}
	dp, err := New(schema, plain)
	if err != nil {
		t.Fatal(err)
	}
	dg, err := New(schema, general)
	if err != nil {
		t.Fatal(err)
	}
	if dg.general != true || dp.cols[1].path == nil || dg.cols[1].expr == nil {
		t.Fatal("decoders do not use the intended paths")
	}
	for _, doc := range decodetest.AllTypesDocs {
		rp, err := dp.DecodeInto(nil, []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		rg, err := dg.DecodeInto(nil, []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rp, rg) {
			t.Errorf("plain   %#v\ngeneral %#v", rp, rg)
		}
	}
}

func TestDecodeNarrowEvent(t *testing.T) {
	s, m := decodetest.NarrowSchema()
	d, err := New(s, m)
	if err != nil {
		t.Fatal(err)
	}
	row, err := d.DecodeInto(nil, []byte(decodetest.NarrowEvent))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range row {
		if v == nil {
			t.Errorf("column %d is null", i)
		}
	}
	if n := len(decodetest.NarrowEvent); n < 550 || n > 650 {
		t.Errorf("narrow event is %d bytes", n)
	}
}

func BenchmarkDecode(b *testing.B) {
	s, m := decodetest.NarrowSchema()
	d, err := New(s, m)
	if err != nil {
		b.Fatal(err)
	}
	payload := []byte(decodetest.NarrowEvent)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.DecodeInto(nil, payload); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// TestDecodeConvertsAsItReadsAlike checks the columns the visit converts
// as it reads them (a string or a number at the end of a column's plain
// path) against converting the built document afterwards: the same rows,
// and the same error, first column first, when a value does not convert,
// a duplicate key replaces a converted value, or a required column is
// missing before one that fails.
func TestDecodeConvertsAsItReadsAlike(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 2, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 3, Name: "l", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 4, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "b", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 7, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 8, Name: "tod", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: 9, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 10, Name: "ns", Type: iceberg.PrimitiveTypes.TimestampNs},
		iceberg.NestedField{ID: 11, Name: "dec", Type: iceberg.DecimalTypeOf(9, 2)},
		iceberg.NestedField{ID: 12, Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 13, Name: "fx", Type: iceberg.FixedTypeOf(2)},
		iceberg.NestedField{ID: 14, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
	)
	mapping := map[string]string{}
	for _, f := range schema.Fields() {
		mapping[f.Name] = "p." + f.Name
	}
	mapping["l"] = "l" // a top-level key too
	d, err := New(schema, mapping)
	if err != nil {
		t.Fatal(err)
	}
	if d.root.keys.find("l").direct == nil || d.root.keys.find("p").keys.find("s").direct == nil {
		t.Fatal("the visit does not convert these columns as it reads them")
	}
	whole := *d
	whole.root = nil
	docs := []string{
		`{"l":1,"p":{"s":"x","i":2,"f":1.5,"d":-0.25,"b":true,"day":"2026-12-02","tod":"12:00:00.5","ts":"2026-12-02T10:00:00+01:00",
		  "ns":1764669600123.456,"dec":"12.30","bin":"aGk=","fx":"AQI=","u":"f81d4fae-7dec-11d0-a765-00a0c91e6bf6"}}`,
		`{"l":"42","p":{"s":7.50,"i":"3","f":"NaN","d":"-inf","b":"false","ts":1764669600000,"dec":1.5}}`,
		`{"l":300,"p":{"s":true,"i":1e3,"d":1e308,"dec":-0.01}}`,
		// values that do not convert: the first one in schema order names the error
		`{"l":1,"p":{"i":2147483648}}`,
		`{"l":1,"p":{"i":1.5,"dec":1.234}}`,
		`{"l":1,"p":{"day":"2026-13-01"}}`,
		`{"l":1,"p":{"u":"f81d4fae7dec11d0a76500a0c91e6bf6"}}`,
		`{"l":1,"p":{"fx":"AQID"}}`,
		`{"l":1,"p":{"bin":"not base64!"}}`,
		`{"l":1,"p":{"b":"yes"}}`,
		`{"l":1,"p":{"f":1e39,"d":"x"}}`,
		`{"l":1,"p":{"ns":"9999-01-01T00:00:00Z"}}`,
		`{"l":1,"p":{"s":{"a":1},"i":[1],"b":null}}`,
		// required l missing before a failing column, or not a number
		`{"p":{"i":"x"}}`,
		`{"l":null,"p":{"i":1}}`,
		`{"l":"x"}`,
		`{"l":9223372036854775808}`,
		// duplicate keys: the last occurrence wins, converted or not
		`{"l":1,"l":"x"}`,
		`{"l":"x","l":2}`,
		`{"l":1,"p":{"i":5,"i":"bad"}}`,
		`{"l":1,"p":{"i":"bad","i":5}}`,
		`{"l":1,"p":{"i":5},"p":{"d":2}}`,
		`{"l":1,"p":{"i":5},"p":null}`,
		`{"l":1,"p":{"s":"a","s":{"x":1}}}`,
		`{"l":1,"p":{"s":"esc\u0061ped","u":"F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6"}}`,
	}
	for _, doc := range docs {
		got, gerr := d.DecodeInto(nil, []byte(doc))
		ref, rerr := whole.DecodeInto(nil, []byte(doc))
		if fmt.Sprint(gerr) != fmt.Sprint(rerr) {
			t.Errorf("%s:\nvisit error %v\nwhole error %v", doc, gerr, rerr)
			continue
		}
		if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", ref) {
			t.Errorf("%s:\nvisit %#v\nwhole %#v", doc, got, ref)
		}
	}
	// The same documents into one reused row, as the consumer decodes.
	var row, ref Row
	for _, doc := range docs {
		var gerr, rerr error
		row, gerr = d.DecodeInto(row, []byte(doc))
		ref, rerr = whole.DecodeInto(ref, []byte(doc))
		if fmt.Sprint(gerr) != fmt.Sprint(rerr) || fmt.Sprintf("%#v", row) != fmt.Sprintf("%#v", ref) {
			t.Errorf("%s, reused row:\nvisit %#v, %v\nwhole %#v, %v", doc, row, gerr, ref, rerr)
		}
		if gerr != nil {
			row, ref = nil, nil
		}
	}
}

// TestDecodeStringsWordAtATime puts each byte a string's reader must look
// at (quote, backslash and escapes, control characters, multi-byte and
// invalid UTF-8, DEL and the bytes around the bounds) at every position of
// strings of 0 to 24 bytes, where the reader goes eight bytes at a time,
// and requires what encoding/json makes of them, as a key, as a value,
// and as a value that is skipped.
func TestDecodeStringsWordAtATime(t *testing.T) {
	specials := []string{`"`, `\"`, `\\`, `\n`, `\u00e9`, `\ud83d\ude00`, `\`, "\x00", "\x1f", " ", "!", "#",
		"[", "]", "\x7f", "\x80", "\xff", "é", "€", "😀", "\xe2\x82", "\xed\xa0\x80"}
	for n := 0; n <= 24; n++ {
		for pos := 0; pos <= n; pos++ {
			for _, sp := range specials {
				s := strings.Repeat("a", pos) + sp + strings.Repeat("b", n-pos)
				for _, doc := range []string{`"` + s + `"`, `{"` + s + `":1}`, `{"k":"` + s + `","x":"` + s + `"}`} {
					checkParserMatchesStd(t, []byte(doc))
				}
			}
		}
	}
	// Through the visit: a mapped key's value is read (str), the other
	// keys' values skipped (skipString).
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "k", Type: iceberg.PrimitiveTypes.String})
	d, err := New(schema, map[string]string{"k": "k"})
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n <= 24; n++ {
		for _, sp := range specials {
			s := strings.Repeat("a", n/2) + sp + strings.Repeat("b", n-n/2)
			doc := `{"skipped":"` + s + `","k":"` + s + `"}`
			row, err := d.DecodeInto(nil, []byte(doc))
			var want map[string]any
			stdErr := json.Unmarshal([]byte(doc), &want)
			if (err == nil) != (stdErr == nil) {
				t.Fatalf("%q: decode error %v, encoding/json error %v", doc, err, stdErr)
			}
			if err == nil && row[0] != want["k"] {
				t.Fatalf("%q: decoded %q, encoding/json %q", doc, row[0], want["k"])
			}
		}
	}
}
