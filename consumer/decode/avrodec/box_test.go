package avrodec

import (
	"math/big"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/consumer/decode"
)

// Values boxed in a row's arena keep their type and value however many
// rows are decoded after them, also when the caller reuses dst: a slot
// of a pooled arena is never written twice.
func TestRowsOutliveLaterDecodes(t *testing.T) {
	const schema = `{"type":"record","name":"R","fields":[
	 {"name":"s","type":"string"},{"name":"l","type":["null","long"]},{"name":"d","type":"double"},
	 {"name":"i","type":"int"},{"name":"b","type":"bytes"},
	 {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
	 {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}}]}`
	d := newDecoder(t, schema, nil,
		req("s", iceberg.PrimitiveTypes.String), opt("l", iceberg.PrimitiveTypes.Int64), req("d", iceberg.PrimitiveTypes.Float64),
		req("i", iceberg.PrimitiveTypes.Int32), req("b", iceberg.PrimitiveTypes.Binary), req("ts", iceberg.PrimitiveTypes.TimestampTz),
		req("dec", iceberg.DecimalTypeOf(10, 2)))
	rec := func(n int64) map[string]any {
		return map[string]any{"s": string(rune('a' + n%26)), "l": n << 20, "d": float64(n) / 4, "i": int32(n * 1000),
			"b": []byte{byte(n)}, "ts": n * 1_000_003, "dec": big.NewRat(n*101, 100)}
	}
	want := func(n int64) decode.Row {
		return decode.Row{string(rune('a' + n%26)), n << 20, float64(n) / 4, int32(n * 1000), []byte{byte(n)},
			arrow.Timestamp(n * 1_000_003), decimal128.FromI64(n * 101)}
	}
	var rows []decode.Row
	var scratch decode.Row
	for n := range int64(100) {
		row, err := d.DecodeInto(scratch, encode(t, schema, rec(n)))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, append(decode.Row(nil), row...))
		scratch = row
	}
	for n, row := range rows {
		if !reflect.DeepEqual(row, want(int64(n))) {
			t.Fatalf("row %d after 100 decodes: %#v, want %#v", n, row, want(int64(n)))
		}
		if v, ok := row[1].(int64); !ok || v != int64(n)<<20 {
			t.Fatalf("row %d: column l is %T %v", n, row[1], row[1])
		}
	}
}
