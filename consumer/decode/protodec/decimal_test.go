package protodec

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/consumer/decode"
)

// TestConfluentDecimal: a confluent.type.Decimal field with its precision
// and scale in (confluent.field_meta).params is a decimal column, and its
// values (two's complement bytes and a scale) decode exactly.
func TestConfluentDecimal(t *testing.T) {
	fd := compile(t, `syntax = "proto3";
import "confluent/meta.proto";
import "confluent/type/decimal.proto";
message Order {
  confluent.type.Decimal amount = 1 [(confluent.field_meta) = {params: [{key: "precision", value: "9"}, {key: "scale", value: "2"}]}];
}`, nil)
	md := fd.Messages().ByName("Order")
	s, err := TableSchema(md)
	if err != nil {
		t.Fatal(err)
	}
	if want := "table {\n\t1: amount: optional decimal(9, 2)\n}"; s.String() != want {
		t.Fatalf("schema:\n%s\nwant:\n%s", s, want)
	}
	d, err := New(s, nil, md)
	if err != nil {
		t.Fatal(err)
	}
	amount := func(value []byte, scale uint64) []byte {
		return tagBytes(nil, 1, tagVarint(tagVarint(tagBytes(nil, 1, value), 2, 9), 3, scale))
	}
	for _, tc := range []struct {
		name string
		msg  []byte
		want any
		err  string
	}{
		{"-123.45", amount([]byte{0xcf, 0xc7}, 2), decimal128.FromI64(-12345), ""},
		{"1234.5", amount([]byte{0x30, 0x39}, 1), decimal128.FromI64(123450), ""},
		{"zero without bytes", amount(nil, 0), decimal128.FromI64(0), ""},
		{"absent", nil, nil, ""},
		{"three fraction digits", amount([]byte{0x30, 0x39}, 3), nil, "12345e-3 has more than 2 fraction digits"},
		{"too many digits", amount([]byte{0x3b, 0x9a, 0xca, 0x00}, 0), nil, "1000000000e-0 does not fit decimal(9,2)"},
		{"over 16 bytes", amount(make([]byte, 17), 0), nil, "17 bytes does not fit 128 bits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row, err := d.DecodeInto(nil, tc.msg)
			if tc.err != "" {
				var de *decode.Error
				if !errors.As(err, &de) || de.Reason != decode.ReasonConvert || de.Column != "amount" || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want a convert error of amount containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(row[0], tc.want) {
				t.Errorf("amount = %#v, want %#v", row[0], tc.want)
			}
		})
	}

	// Without the params a table cannot be derived, but a given decimal
	// column still takes the values.
	fd = compile(t, `syntax = "proto3";
import "confluent/type/decimal.proto";
message Order { confluent.type.Decimal amount = 1; }`, nil)
	md = fd.Messages().ByName("Order")
	if _, err := TableSchema(md); err == nil || !strings.Contains(err.Error(), `field "amount"`) {
		t.Errorf("TableSchema without params: err = %v, want one naming the field", err)
	}
	d, err = New(iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "amount", Type: iceberg.DecimalTypeOf(20, 4)}), nil, md)
	if err != nil {
		t.Fatal(err)
	}
	row, err := d.DecodeInto(nil, amount([]byte{0xff}, 0))
	if err != nil || row[0] != decimal128.FromI64(-10000) {
		t.Errorf("-1 into decimal(20,4) = %v, %v; want -10000 unscaled", row, err)
	}
}
