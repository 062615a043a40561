package avrodec

import (
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/consumer/decode"
)

// skipAll has a field of every type before the one mapped field, last:
// if any skip read a byte too many or too few, last would be wrong or
// the payload would not end with the record.
const skipAll = `{"type":"record","name":"R","fields":[
 {"name":"n","type":"null"},
 {"name":"b","type":"boolean"},
 {"name":"i","type":"int"},
 {"name":"l","type":"long"},
 {"name":"f","type":"float"},
 {"name":"d","type":"double"},
 {"name":"s","type":"string"},
 {"name":"by","type":"bytes"},
 {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B","C"]}},
 {"name":"fx","type":{"type":"fixed","name":"F","size":3}},
 {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"rec","type":{"type":"record","name":"In","fields":[{"name":"a","type":"string"},{"name":"b","type":["null","long"]}]}},
 {"name":"arr","type":{"type":"array","items":"In"}},
 {"name":"m","type":{"type":"map","values":{"type":"array","items":"double"}}},
 {"name":"u","type":["null","string","In","long"]},
 {"name":"list","type":["null",{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}]},
 {"name":"empty","type":{"type":"array","items":"null"}},
 {"name":"last","type":"string"}]}`

func TestSkipsEveryType(t *testing.T) {
	d := newDecoder(t, skipAll, map[string]string{"last": "last"}, req("last", iceberg.PrimitiveTypes.String))
	in := map[string]any{
		"n": nil, "b": true, "i": int32(-300), "l": int64(1) << 50, "f": float32(1), "d": 2.0,
		"s": "skip me", "by": []byte{1, 2, 3, 4}, "e": "C", "fx": []byte("xyz"),
		"dec": big.NewRat(31415, 100), "ts": time.Unix(1700000000, 0),
		"rec": map[string]any{"a": "aa", "b": int64(5)},
		"arr": []any{map[string]any{"a": "x", "b": nil}, map[string]any{"a": "y", "b": int64(1)}},
		"m":   map[string]any{"k1": []any{1.0, 2.0}, "k2": []any{}},
		"u":   map[string]any{"In": map[string]any{"a": "u", "b": nil}},
		"list": map[string]any{"v": int32(1), "next": map[string]any{"v": int32(2), "next": map[string]any{
			"v": int32(3), "next": nil}}},
		"empty": []any{nil, nil, nil},
		"last":  "the end",
	}
	row, err := d.DecodeInto(nil, encode(t, skipAll, in))
	if err != nil {
		t.Fatal(err)
	}
	if want := (decode.Row{"the end"}); !reflect.DeepEqual(row, want) {
		t.Fatalf("row %#v, want %#v", row, want)
	}
}

// Writers may split arrays and maps into blocks, and give a block's size
// in bytes after a negative count so that readers can jump over it. Both
// a skipped and a decoded array and map must read them.
func TestBlocksWithNegativeCounts(t *testing.T) {
	const schema = `{"type":"record","name":"R","fields":[
	 {"name":"sa","type":{"type":"array","items":"string"}},
	 {"name":"sm","type":{"type":"map","values":"long"}},
	 {"name":"a","type":{"type":"array","items":"string"}},
	 {"name":"m","type":{"type":"map","values":"long"}},
	 {"name":"last","type":"int"}]}`
	var arr []byte
	block := str(str(nil, "one"), "two")
	arr = zigzag(arr, -2)
	arr = zigzag(arr, int64(len(block)))
	arr = append(arr, block...)
	arr = zigzag(arr, 1)
	arr = str(arr, "three")
	arr = zigzag(arr, 0)
	var m []byte
	entry := zigzag(str(nil, "k"), 42)
	m = zigzag(m, -1)
	m = zigzag(m, int64(len(entry)))
	m = append(m, entry...)
	m = zigzag(m, 1)
	m = zigzag(str(m, "j"), -1)
	m = zigzag(m, 0)
	payload := append(append(append(append([]byte{}, arr...), m...), arr...), m...)
	payload = zigzag(payload, 9)

	d := newDecoder(t, schema, map[string]string{"a": "a", "m": "m", "last": "last"},
		opt("a", &iceberg.ListType{ElementID: 10, Element: iceberg.PrimitiveTypes.String, ElementRequired: true}),
		opt("m", &iceberg.MapType{KeyID: 11, KeyType: iceberg.PrimitiveTypes.String, ValueID: 12, ValueType: iceberg.PrimitiveTypes.Int64, ValueRequired: true}),
		req("last", iceberg.PrimitiveTypes.Int32))
	row, err := d.DecodeInto(nil, payload)
	if err != nil {
		t.Fatal(err)
	}
	want := decode.Row{
		[]any{"one", "two", "three"},
		decode.MapValue{Keys: []any{"k", "j"}, Values: []any{int64(42), int64(-1)}},
		int32(9),
	}
	if !reflect.DeepEqual(row, want) {
		t.Fatalf("row %#v, want %#v", row, want)
	}
}

// A recursive value deeper than the limit is dropped as too deep, not
// walked on until the stack runs out.
func TestRecursionDepthLimit(t *testing.T) {
	const schema = `{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}`
	d := newDecoder(t, schema, map[string]string{"v": "v"}, opt("v", iceberg.PrimitiveTypes.Int32))
	d.Limit(0, 10)
	var p []byte
	for range 20 {
		p = append(zigzag(p, 1), 2) // v = 1, then branch Node
	}
	p = append(zigzag(p, 1), 0)
	de := decodeErr(t, d, p, decode.ReasonTooDeep)
	if !strings.Contains(de.Error(), "deeper than the limit") {
		t.Fatalf("error %v", de)
	}
	if mb, md := d.Limits(); mb != 0 || md != 10 {
		t.Fatalf("Limits() = %d, %d", mb, md)
	}
}
