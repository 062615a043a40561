// Package decodetest holds the documents and schemas that the decoder's
// tests, its fuzzer and the consumer's Arrow tests share: a table with
// every supported type and documents that fill it, and a narrow event.
package decodetest

import (
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
)

// AllTypesSchema has every supported type, nested ones included.
func AllTypesSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "age", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "score", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "ratio", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "active", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 7, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 8, Name: "tod", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: 9, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 10, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 11, Name: "amount", Type: iceberg.DecimalTypeOf(18, 4)},
		iceberg.NestedField{ID: 12, Name: "big", Type: iceberg.DecimalTypeOf(38, 10)},
		iceberg.NestedField{ID: 13, Name: "blob", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 14, Name: "fx", Type: iceberg.FixedTypeOf(4)},
		iceberg.NestedField{ID: 15, Name: "uid", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: 16, Name: "user", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 17, Name: "name", Type: iceberg.PrimitiveTypes.String, Required: true},
			{ID: 18, Name: "address", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
				{ID: 19, Name: "city", Type: iceberg.PrimitiveTypes.String},
				{ID: 20, Name: "zip", Type: iceberg.PrimitiveTypes.Int32},
			}}},
			{ID: 21, Name: "tags", Type: &iceberg.ListType{ElementID: 22, Element: iceberg.PrimitiveTypes.String, ElementRequired: true}},
		}}},
		iceberg.NestedField{ID: 23, Name: "nums", Type: &iceberg.ListType{ElementID: 24, Element: iceberg.PrimitiveTypes.Int64}},
		iceberg.NestedField{ID: 25, Name: "matrix", Type: &iceberg.ListType{ElementID: 26, Element: &iceberg.ListType{ElementID: 27, Element: iceberg.PrimitiveTypes.Int32}}},
		iceberg.NestedField{ID: 28, Name: "attrs", Type: &iceberg.MapType{KeyID: 29, KeyType: iceberg.PrimitiveTypes.String, ValueID: 30, ValueType: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 31, Name: "counts", Type: &iceberg.MapType{KeyID: 32, KeyType: iceberg.PrimitiveTypes.Int32, ValueID: 33, ValueType: iceberg.PrimitiveTypes.Int64, ValueRequired: true}},
		iceberg.NestedField{ID: 34, Name: "events", Type: &iceberg.ListType{ElementID: 35, Element: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 36, Name: "kind", Type: iceberg.PrimitiveTypes.String, Required: true},
			{ID: 37, Name: "at", Type: iceberg.PrimitiveTypes.TimestampTz},
			{ID: 38, Name: "meta", Type: &iceberg.MapType{KeyID: 39, KeyType: iceberg.PrimitiveTypes.String, ValueID: 40, ValueType: iceberg.DecimalTypeOf(9, 2)}},
		}}}},
		iceberg.NestedField{ID: 41, Name: "nitems", Type: iceberg.PrimitiveTypes.Int64},
	)
}

func AllTypesMapping() map[string]string {
	m := map[string]string{}
	for _, f := range AllTypesSchema().Fields() {
		m[f.Name] = f.Name
	}
	m["id"] = "meta.id"
	m["tstz"] = `meta."event time"`
	m["nitems"] = "length(events || `[]`)"
	delete(m, "ts") // unmapped optional column: always null
	return m
}

var AllTypesDocs = []string{
	`{"meta":{"id":1,"event time":"2026-11-30T12:00:00.123456Z"},"name":"alice","age":42,"score":1.5,"ratio":0.1,
	  "active":true,"day":"2026-11-30","tod":"23:59:59.999999","ts":"2026-11-30T12:00:00Z","amount":"12345678901234.5678",
	  "big":-1234567890123456789012345678.1234567890,"blob":"aGVsbG8=","fx":"AQIDBA==","uid":"f81d4fae-7dec-11d0-a765-00a0c91e6bf6",
	  "user":{"name":"Alice","address":{"city":"Paris","zip":75001},"tags":["a","b"]},
	  "nums":[1,null,9223372036854775807],"matrix":[[1,2],[],null,[null,3]],
	  "attrs":{"k1":"v1","k2":null},"counts":{"1":10,"-2":20},
	  "events":[{"kind":"click","at":1764505496123,"meta":{"x":"1.25","y":null}},{"kind":"view"},null]}`,
	// Nulls at the top level and inside nested values.
	`{"meta":{"id":2,"event time":"2026-11-30T12:00:00+01:00"},"user":{"name":"Bob","address":null,"tags":[]},
	  "nums":[],"matrix":[],"attrs":{},"counts":{},"events":[]}`,
	`{"meta":{"id":3,"event time":0},"user":null,"nums":null,"matrix":null,"attrs":null,"counts":null,"events":null}`,
	`{"meta":{"id":-4,"event time":"1969-07-20T20:17:40Z"},"name":"","age":-1,"score":-0.0,"ratio":1e300,
	  "active":"false","day":"1969-07-20T23:59:59-05:00","amount":-0.0001,"big":"0","blob":"","fx":"/////w==",
	  "user":{"name":"Ünïcødé","address":{"zip":"99999"},"tags":["x"]},"events":[{"kind":"k","meta":{}}]}`,
}

// NarrowEvent is a 15-column event with nested objects, about 600 bytes.
const NarrowEvent = `{"event_id":"4f9c2a8e-1b7d-4c3e-9a6f-2d8e5b7c1a90","event_type":"purchase",` +
	`"occurred_at":"2026-11-30T12:34:56.789123Z","user":{"id":918273645,"email":"someone@example.com",` +
	`"country":"FR","plan":"premium"},"device":{"os":"android","version":"14.2.1","model":"Pixel 9"},` +
	`"session":{"id":"sess-7f3a9c2e5d1b","duration_ms":183452},"order":{"amount":"1249.99","currency":"EUR",` +
	`"items":3,"coupon":null},"page":{"url":"https://shop.example.com/checkout/confirm?step=3","referrer":` +
	`"https://www.example.org/search?q=shoes"},"flags":{"beta":true,"internal":false},"tags":["sale","mobile"]}`

func NarrowSchema() (*iceberg.Schema, map[string]string) {
	s := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "event_id", Type: iceberg.PrimitiveTypes.UUID, Required: true},
		iceberg.NestedField{ID: 2, Name: "event_type", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "occurred_at", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 4, Name: "user_id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 5, Name: "email", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 6, Name: "country", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 7, Name: "os", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 8, Name: "os_version", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 9, Name: "session_id", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 10, Name: "duration_ms", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 11, Name: "amount", Type: iceberg.DecimalTypeOf(12, 2)},
		iceberg.NestedField{ID: 12, Name: "currency", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 13, Name: "items", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 14, Name: "url", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 15, Name: "beta", Type: iceberg.PrimitiveTypes.Bool},
	)
	return s, map[string]string{
		"event_id": "event_id", "event_type": "event_type", "occurred_at": "occurred_at",
		"user_id": "user.id", "email": "user.email", "country": "user.country",
		"os": "device.os", "os_version": "device.version", "session_id": "session.id",
		"duration_ms": "session.duration_ms", "amount": "order.amount", "currency": "order.currency",
		"items": "order.items", "url": "page.url", "beta": "flags.beta",
	}
}

// FuzzSeeds is the seed corpus of the decoder's fuzzers: the documents
// above, and invalid JSON, valid JSON of the wrong shape, huge numbers,
// NaN strings, invalid UTF-8, duplicate keys, wrong types inside nested
// values and deep nesting, for AllTypesSchema and AllTypesMapping.
func FuzzSeeds() [][]byte {
	var out [][]byte
	add := func(b []byte) { out = append(out, b) }
	for _, doc := range AllTypesDocs {
		add([]byte(doc))
	}
	add([]byte(NarrowEvent))
	for _, seed := range []string{
		// Invalid JSON.
		``, ` `, `{`, `}`, `{"meta":}`, `{"meta":{"id":1}} trailing`, `{"a":1}{"a":2}`, `nul`, `[1,]`,
		`{"meta":{"id":01}}`, `{"meta":{"id":1.}}`, `{"meta":{"id":-}}`, "{\"name\":\"a\x01b\"}",
		// Valid JSON of the wrong shape.
		`null`, `1`, `"x"`, `[]`, `[{"meta":{"id":1}}]`, `{"meta":null}`, `{"meta":{"id":[]}}`,
		// Huge numbers.
		`{"meta":{"id":1e999999999999999999,"event time":0}}`,
		`{"meta":{"id":123456789012345678901234567890,"event time":1e30}}`,
		`{"meta":{"id":1,"event time":-9223372036854775808},"big":1e-999999999,"amount":99999999999999999999999999999999999999999}`,
		`{"meta":{"id":1,"event time":0},"ratio":1e400,"score":-1e400,"age":2147483648}`,
		// NaN and infinity strings.
		`{"meta":{"id":1,"event time":0},"ratio":"NaN","score":"-Infinity","amount":"NaN","age":"Inf"}`,
		`{"meta":{"id":"NaN","event time":"NaN"}}`,
		// Invalid UTF-8 and escapes.
		"{\"meta\":{\"id\":1,\"event time\":0},\"name\":\"\xff\xfe\",\"attrs\":{\"\xc3\":\"\xed\xa0\x80\"}}",
		`{"meta":{"id":1,"event time":0},"name":"\ud800","uid":"\u0000"}`,
		// Duplicate keys.
		`{"meta":{"id":1,"event time":0},"meta":{"id":"x"}}`,
		`{"meta":{"id":1,"event time":0},"counts":{"1":1,"1":null}}`,
		// Wrong types inside nested values.
		`{"meta":{"id":1,"event time":0},"user":{"name":null}}`,
		`{"meta":{"id":1,"event time":0},"user":{"name":"x","tags":[null]}}`,
		`{"meta":{"id":1,"event time":0},"events":[{"kind":1,"meta":{"a":"1.234"}}]}`,
		`{"meta":{"id":1,"event time":0},"matrix":[[1,[2]]],"counts":{"x":1}}`,
		`{"meta":{"id":1,"event time":"2026-02-30T00:00:00Z"},"day":"0000-01-01","ts":"9999-12-31T23:59:59.999999999-23:59"}`,
	} {
		add([]byte(seed))
	}
	add([]byte(`{"meta":{"id":1,"event time":0},"user":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}`))
	add([]byte(`{"meta":{"id":1,"event time":0},"matrix":` + strings.Repeat(`[`, 20000) + strings.Repeat(`]`, 20000) + `}`))

	return out
}

// OneColumn is a schema of one column v.
func OneColumn(typ iceberg.Type, required bool) *iceberg.Schema {
	return iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "v", Type: typ, Required: required})
}

// BigDecimal is the unscaled decimal of the integer s; it panics when s is
// not one.
func BigDecimal(s string) decimal128.Num {
	b, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return decimal128.FromBigInt(b)
}
