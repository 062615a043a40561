package protodec

import (
	"errors"
	"reflect"
	"testing"

	"github.com/icewal/ingestor/consumer/decode"
)

// TestProto2 covers proto2 presence: a required field is a required
// column, an optional field with a declared default is null when absent,
// and a group reads as a struct.
func TestProto2(t *testing.T) {
	fd := compile(t, `syntax = "proto2";
message M {
  required string id = 1;
  optional int32 level = 2 [default = 5];
  optional group Extra = 3 { optional string note = 1; }
}`, nil)
	md := fd.Messages().ByName("M")
	s, err := TableSchema(md)
	if err != nil {
		t.Fatal(err)
	}
	want := `table {
	1: id: required string
	2: level: optional int
	3: extra: optional struct<4: note: optional string>
}`
	if s.String() != want {
		t.Fatalf("schema:\n%s\nwant:\n%s", s, want)
	}
	d, err := New(s, nil, md)
	if err != nil {
		t.Fatal(err)
	}
	row, err := d.DecodeInto(nil, marshal(t, md, map[string]any{"id": "a", "extra": map[string]any{"note": "n"}}))
	if err != nil {
		t.Fatal(err)
	}
	if want := (decode.Row{"a", nil, []any{"n"}}); !reflect.DeepEqual(row, want) {
		t.Errorf("row = %#v, want %#v", row, want)
	}
	var de *decode.Error
	if _, err := d.DecodeInto(nil, nil); !errors.As(err, &de) || de.Reason != decode.ReasonMissingRequired || de.Column != "id" {
		t.Errorf("empty message: err = %v, want missing_required of id", err)
	}
}
