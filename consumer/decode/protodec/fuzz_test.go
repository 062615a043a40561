package protodec

import (
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/icewal/ingestor/consumer/decode"
)

// FuzzProtoDecode feeds arbitrary bytes to a decoder of All (every kind,
// nested and repeated messages, maps, well-known types). DecodeInto must
// never panic, must fail with a *decode.Error of a protobuf reason, and
// must return a row whose every value has its column's Go type, with no
// null where the schema requires a value. The seed corpus runs in every
// go test.
func FuzzProtoDecode(f *testing.F) {
	d, md := allDecoder(f)
	s, err := TableSchema(md)
	if err != nil {
		f.Fatal(err)
	}
	limited, _ := allDecoder(f)
	limited.Limit(1<<12, 3)

	f.Add([]byte{})
	f.Add(marshal(f, md, map[string]any{
		"i32": int32(-5), "u64": uint64(1 << 63), "fl": float32(1.5), "s": "x", "by": []byte{1},
		"inner": map[string]any{"label": "in", "leaf": map[string]any{"weight": 0.5}},
		"nums":  []any{int64(1), int64(-2)}, "inners": []any{map[string]any{"n": int32(2)}},
		"counts": map[any]any{"k": int64(7)}, "by_id": map[any]any{int32(4): map[string]any{"label": "four"}},
		"ts":    map[string]any{"seconds": int64(1e9), "nanos": int32(5)},
		"day":   map[string]any{"year": int32(2026), "month": int32(2), "day": int32(28)},
		"w_i64": map[string]any{"value": int64(42)}, "w_u64": map[string]any{"value": uint64(18)},
		"packed_s": []any{int32(-1), int32(2)}, "packed_d": []any{1.0}, "big_number": int64(3),
	}))
	f.Add(tagBytes(tagVarint(nil, fI32, 1), fNums, protowire.AppendVarint(nil, 2)))
	f.Add(tagBytes(nil, fCounts, tagVarint(nil, 2, 9)))
	f.Add(protowire.AppendTag(nil, 901, protowire.StartGroupType))
	f.Add(tagBytes(nil, fInner, tagBytes(nil, 3, tagBytes(nil, 1, []byte{0xff}))))

	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, dd := range []*Decoder{d, limited} {
			row, err := dd.DecodeInto(nil, msg)
			if err != nil {
				var de *decode.Error
				if !errors.As(err, &de) {
					t.Fatalf("error %v is a %T, not a *decode.Error", err, err)
				}
				switch de.Reason {
				case decode.ReasonNotProtobuf, decode.ReasonConvert, decode.ReasonMissingRequired, decode.ReasonTooLarge, decode.ReasonTooDeep:
				default:
					t.Fatalf("reason %q", de.Reason)
				}
				continue
			}
			for i, f := range s.Fields() {
				if err := checkValue(f.Type, row[i], f.Required); err != nil {
					t.Fatalf("column %s: %v", f.Name, err)
				}
			}
		}
	})
}

// checkValue tells whether v is a value of type typ as decode.Row
// documents it.
func checkValue(typ iceberg.Type, v any, required bool) error {
	if v == nil {
		if required {
			return errors.New("null in a required place")
		}
		return nil
	}
	ok := false
	switch t := typ.(type) {
	case iceberg.Int32Type:
		_, ok = v.(int32)
	case iceberg.Int64Type:
		_, ok = v.(int64)
	case iceberg.Float32Type:
		_, ok = v.(float32)
	case iceberg.Float64Type:
		_, ok = v.(float64)
	case iceberg.BooleanType:
		_, ok = v.(bool)
	case iceberg.StringType:
		_, ok = v.(string)
	case iceberg.BinaryType:
		_, ok = v.([]byte)
	case iceberg.DateType:
		_, ok = v.(arrow.Date32)
	case iceberg.TimestampTzType:
		_, ok = v.(arrow.Timestamp)
	case iceberg.DecimalType:
		var n decimal128.Num
		if n, ok = v.(decimal128.Num); ok && !n.FitsInPrecision(int32(t.Precision())) {
			return fmt.Errorf("%v does not fit %s", n, t)
		}
	case *iceberg.StructType:
		s, isStruct := v.([]any)
		if !isStruct || len(s) != len(t.FieldList) {
			return fmt.Errorf("%#v is not a struct of %d fields", v, len(t.FieldList))
		}
		for i, f := range t.FieldList {
			if err := checkValue(f.Type, s[i], f.Required); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
		}
		return nil
	case *iceberg.ListType:
		l, isList := v.([]any)
		if !isList {
			return fmt.Errorf("%#v is not a list", v)
		}
		for _, e := range l {
			if err := checkValue(t.Element, e, t.ElementRequired); err != nil {
				return fmt.Errorf("element: %w", err)
			}
		}
		return nil
	case *iceberg.MapType:
		m, isMap := v.(decode.MapValue)
		if !isMap || len(m.Keys) != len(m.Values) {
			return fmt.Errorf("%#v is not a map", v)
		}
		seen := map[any]bool{}
		for i, k := range m.Keys {
			if seen[k] {
				return fmt.Errorf("key %v twice", k)
			}
			seen[k] = true
			if err := checkValue(t.KeyType, k, true); err != nil {
				return fmt.Errorf("key: %w", err)
			}
			if err := checkValue(t.ValueType, m.Values[i], t.ValueRequired); err != nil {
				return fmt.Errorf("value: %w", err)
			}
		}
		return nil
	}
	if !ok {
		return fmt.Errorf("%#v (%T) is not a %s value", v, v, typ)
	}
	return nil
}
