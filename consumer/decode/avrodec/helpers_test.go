package avrodec

import (
	"errors"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/twmb/avro"

	"github.com/icewal/ingestor/consumer/decode"
)

// encode writes v as Avro binary of schema with twmb/avro, an encoder
// independent of the decoder under test.
func encode(t testing.TB, schema string, v any) []byte {
	t.Helper()
	s, err := avro.Parse(schema)
	if err != nil {
		t.Fatalf("parse schema with twmb/avro: %v", err)
	}
	b, err := s.Encode(v)
	if err != nil {
		t.Fatalf("encode %v: %v", v, err)
	}
	return b
}

func mustParse(t testing.TB, schema string) *Schema {
	t.Helper()
	s, err := Parse(schema)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newDecoder builds a decoder for table columns fields and writer schema.
func newDecoder(t testing.TB, schema string, mapping map[string]string, fields ...iceberg.NestedField) *Decoder {
	t.Helper()
	for i := range fields {
		fields[i].ID = i + 1
	}
	d, err := New(iceberg.NewSchema(0, fields...), mapping, mustParse(t, schema))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// decodeErr decodes payload, which must fail with reason, and returns the
// error.
func decodeErr(t *testing.T, d *Decoder, payload []byte, reason string) *decode.Error {
	t.Helper()
	row, err := d.DecodeInto(nil, payload)
	var de *decode.Error
	if !errors.As(err, &de) {
		t.Fatalf("decode %x: got row %v, error %v; want a *decode.Error %s", payload, row, err, reason)
	}
	if de.Reason != reason {
		t.Fatalf("decode %x: reason %s (%v), want %s", payload, de.Reason, err, reason)
	}
	return de
}

func opt(name string, typ iceberg.Type) iceberg.NestedField {
	return iceberg.NestedField{Name: name, Type: typ}
}

func req(name string, typ iceberg.Type) iceberg.NestedField {
	return iceberg.NestedField{Name: name, Type: typ, Required: true}
}

// zigzag appends an Avro long, for payloads built by hand (negative block
// counts, bad indexes) that an encoder does not write.
func zigzag(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

func str(b []byte, s string) []byte {
	b = zigzag(b, int64(len(s)))
	return append(b, s...)
}
