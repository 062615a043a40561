package avrodec

import (
	"math/big"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/consumer/decode"
)

func TestErrorsNameReasonAndColumn(t *testing.T) {
	const schema = `{"type":"record","name":"R","fields":[
	 {"name":"id","type":"string"},
	 {"name":"n","type":["null","long"]},
	 {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
	 {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":6,"scale":3}},
	 {"name":"u","type":"string"},
	 {"name":"bin","type":"bytes"},
	 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
	 {"name":"tags","type":{"type":"array","items":["null","string"]}}]}`
	d := newDecoder(t, schema, map[string]string{"id": "id", "small": "n", "e": "e", "dec": "dec", "u": "u", "bin": "bin", "ts": "ts", "tags": "tags"},
		req("id", iceberg.PrimitiveTypes.String), req("small", iceberg.PrimitiveTypes.Int32),
		opt("e", iceberg.PrimitiveTypes.String), opt("dec", iceberg.DecimalTypeOf(4, 2)),
		opt("u", iceberg.PrimitiveTypes.UUID), opt("bin", iceberg.FixedTypeOf(2)),
		opt("ts", iceberg.PrimitiveTypes.TimestampTz),
		opt("tags", &iceberg.ListType{ElementID: 20, Element: iceberg.PrimitiveTypes.String, ElementRequired: true}))
	good := map[string]any{"id": "x", "n": int64(1), "e": "B", "dec": big.NewRat(1230, 1000), "u": "0b8f7a4e-3c2d-4e1f-9a8b-7c6d5e4f3a2b", "bin": []byte{1, 2}, "ts": int64(5), "tags": []any{"t"}}
	with := func(k string, v any) []byte {
		m := map[string]any{}
		for kk, vv := range good {
			m[kk] = vv
		}
		m[k] = v
		return encode(t, schema, m)
	}
	if _, err := d.DecodeInto(nil, encode(t, schema, good)); err != nil {
		t.Fatal(err)
	}
	ok := encode(t, schema, good)
	// The enum index is the byte after id ("x") and n (branch 1, long 1).
	badEnum := append([]byte{}, ok...)
	badEnum[4] = 4 // index 2 of 2 symbols
	for name, tc := range map[string]struct {
		payload []byte
		reason  string
		column  string
		want    string
	}{
		"truncated":       {ok[:len(ok)-1], decode.ReasonNotAvro, "tags", "tags at byte"},
		"trailing bytes":  {append(append([]byte{}, ok...), 0), decode.ReasonNotAvro, "", "1 bytes left after the record"},
		"bad varint":      {[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, decode.ReasonNotAvro, "id", "varint"},
		"bad union index": {append(str(nil, "x"), 4), decode.ReasonNotAvro, "small", "union branch index 2, not in [0, 2)"},
		"bad enum index":  {badEnum, decode.ReasonNotAvro, "e", "enum symbol index 2"},
		"negative length": {zigzag(nil, -3), decode.ReasonNotAvro, "id", "negative length -3"},
		"long into int":   {with("n", int64(1)<<33), decode.ReasonConvert, "small", "n: long 8589934592 is out of the range of int"},
		"decimal scale":   {with("dec", big.NewRat(1234, 1000)), decode.ReasonConvert, "dec", "digits beyond the column's scale 2"},
		"decimal digits":  {with("dec", big.NewRat(123450, 1000)), decode.ReasonConvert, "dec", "more than the column's 4 digits"},
		"not a uuid":      {with("u", "nope"), decode.ReasonConvert, "u", `"nope" is not a UUID`},
		"fixed length":    {with("bin", []byte{1, 2, 3}), decode.ReasonConvert, "bin", "3 bytes, the column is fixed[2]"},
		"null element":    {with("tags", []any{"a", nil}), decode.ReasonConvert, "tags", "tags[1]: required value is missing or null"},
		"timestamp range": {with("ts", int64(1)<<62), decode.ReasonConvert, "ts", "out of the column's range"},
		"missing":         {with("n", nil), decode.ReasonMissingRequired, "small", `decode column "small": required value is missing or null`},
	} {
		t.Run(name, func(t *testing.T) {
			de := decodeErr(t, d, tc.payload, tc.reason)
			if de.Column != tc.column || !strings.Contains(de.Error(), tc.want) {
				t.Fatalf("error %q on column %q, want column %q and %q", de.Error(), de.Column, tc.column, tc.want)
			}
		})
	}
}

func TestTooLarge(t *testing.T) {
	d := newDecoder(t, `{"type":"record","name":"R","fields":[{"name":"s","type":"string"}]}`, nil, opt("s", iceberg.PrimitiveTypes.String))
	d.Limit(4, 0)
	de := decodeErr(t, d, str(nil, "hello"), decode.ReasonTooLarge)
	if !strings.Contains(de.Error(), "6 bytes, over the limit of 4") {
		t.Fatalf("error %v", de)
	}
}
