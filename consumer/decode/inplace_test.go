package decode

import (
	"bytes"
	"reflect"
	"testing"
	"unsafe"

	"github.com/apache/iceberg-go"
)

// inPayload tells whether the bytes of s lie inside payload.
func inPayload(s string, payload []byte) bool {
	if len(s) == 0 || len(payload) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(payload)))
	return p >= lo && p+uintptr(len(s)) <= lo+uintptr(len(payload))
}

// DecodeInto reads the payload in place: every string of the row is
// right, an unescaped string shares the payload's bytes (the contract the
// row buffer's copy relies on), and an escaped one, which had to be
// rewritten, does not.
func TestDecodeStringsInPlace(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "plain", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 2, Name: "escaped", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "unicode", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "number_text", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 5, Name: "n", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 6, Name: "st", Type: structAB},
		iceberg.NestedField{ID: 7, Name: "tags", Type: &iceberg.ListType{ElementID: 20, Element: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 8, Name: "attrs", Type: &iceberg.MapType{KeyID: 21, KeyType: iceberg.PrimitiveTypes.String, ValueID: 22, ValueType: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 9, Name: "blob", Type: iceberg.PrimitiveTypes.Binary},
	)
	mapping := map[string]string{
		"plain": "a.plain", "escaped": "a.escaped", "unicode": "a.unicode", "number_text": "a.num",
		"n": "a.num", "st": "st", "tags": "tags", "attrs": "attrs", "blob": "blob",
	}
	const doc = `{"a":{"plain":"hello world","escaped":"say \"hi\"\n","unicode":"zürich ☃","num":12345},` +
		`"st":{"a":7,"b":"inner"},"tags":["x","y\u0041"],"attrs":{"k1":"v1","k\"2":"v2"},"blob":"aGVsbG8="}`
	want := Row{"hello world", "say \"hi\"\n", "zürich ☃", "12345", int64(12345),
		[]any{int32(7), "inner"}, []any{"x", "yA"},
		MapValue{Keys: []any{"k\"2", "k1"}, Values: []any{"v2", "v1"}}, []byte("hello")}

	general := map[string]string{}
	for k, v := range mapping {
		general[k] = v
	}
	general["tags"] = "tags[*]" // one general expression: the whole document is built
	for name, m := range map[string]map[string]string{"plain paths": mapping, "general": general} {
		t.Run(name, func(t *testing.T) {
			d, err := New(schema, m)
			if err != nil {
				t.Fatal(err)
			}
			payload := []byte(doc)
			row, err := d.DecodeInto(nil, payload)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(row, want) {
				t.Fatalf("got  %#v\nwant %#v", row, want)
			}
			for i, s := range []string{row[0].(string), row[2].(string), row[5].([]any)[1].(string), row[6].([]any)[0].(string), row[7].(MapValue).Values[0].(string)} {
				if !inPayload(s, payload) {
					t.Errorf("string %d %q was copied: the payload is to be read in place", i, s)
				}
			}
			for i, s := range []string{row[1].(string), row[6].([]any)[1].(string), row[7].(MapValue).Keys[0].(string)} {
				if inPayload(s, payload) {
					t.Errorf("escaped string %d %q shares the payload: it must be unescaped into its own bytes", i, s)
				}
			}
			if b := row[8].([]byte); len(b) > 0 && &b[0] == &payload[0] {
				t.Error("binary value shares the payload")
			}

			// The contract: once the payload is overwritten the unescaped
			// strings change with it, the rewritten and converted values
			// do not.
			copy(payload, bytes.Repeat([]byte{'#'}, len(payload)))
			if row[0].(string) == "hello world" {
				t.Error("plain string unchanged after its payload was overwritten: not read in place")
			}
			if row[1].(string) != "say \"hi\"\n" || row[4].(int64) != 12345 || string(row[8].([]byte)) != "hello" {
				t.Errorf("values that own their bytes changed with the payload: %#v", row)
			}
		})
	}
}

// An error outlives the payload (the writer logs it and dead-letters it
// after the next record may have reused the buffer), so it must hold
// nothing of it.
func TestDecodeErrorOwnsItsValue(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 2, Name: "st", Type: structAB},
	)
	d, err := New(schema, map[string]string{"n": "n", "st": "st"})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{`{"n":"not a number"}`, `{"st":{"a":"seven","b":"x"}}`, `{"st":"a string"}`} {
		payload := []byte(doc)
		_, err := d.DecodeInto(nil, payload)
		if err == nil {
			t.Fatalf("%s: decoded, want a convert error", doc)
		}
		msg := err.Error()
		copy(payload, bytes.Repeat([]byte{'#'}, len(payload)))
		if got := err.Error(); got != msg {
			t.Errorf("%s: error changed with its payload:\n%s\n%s", doc, msg, got)
		}
	}
}
