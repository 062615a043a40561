package tables

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/shared/config"
)

func TestTablesParseType(t *testing.T) {
	good := []struct {
		in   string
		want iceberg.Type
	}{
		{"string", iceberg.PrimitiveTypes.String},
		{"int", iceberg.PrimitiveTypes.Int32},
		{"long", iceberg.PrimitiveTypes.Int64},
		{"float", iceberg.PrimitiveTypes.Float32},
		{"double", iceberg.PrimitiveTypes.Float64},
		{"boolean", iceberg.PrimitiveTypes.Bool},
		{"date", iceberg.PrimitiveTypes.Date},
		{"time", iceberg.PrimitiveTypes.Time},
		{"timestamp", iceberg.PrimitiveTypes.Timestamp},
		{"timestamptz", iceberg.PrimitiveTypes.TimestampTz},
		{"binary", iceberg.PrimitiveTypes.Binary},
		{"uuid", iceberg.PrimitiveTypes.UUID},
		{" TimestampTZ ", iceberg.PrimitiveTypes.TimestampTz},
		{"decimal(10,2)", iceberg.DecimalTypeOf(10, 2)},
		{"decimal( 38 , 0 )", iceberg.DecimalTypeOf(38, 0)},
		{"fixed[16]", iceberg.FixedTypeOf(16)},
		{"list<string>", &iceberg.ListType{ElementID: 1, Element: iceberg.PrimitiveTypes.String}},
		{"map<string, long>", &iceberg.MapType{KeyID: 1, KeyType: iceberg.PrimitiveTypes.String, ValueID: 2, ValueType: iceberg.PrimitiveTypes.Int64}},
		{"struct<a:int, b:string>", &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int32},
			{ID: 2, Name: "b", Type: iceberg.PrimitiveTypes.String},
		}}},
		{"map<string,list<struct<x:decimal(5,1),y:map<int,fixed[2]>>>>", &iceberg.MapType{
			KeyID: 1, KeyType: iceberg.PrimitiveTypes.String, ValueID: 2,
			ValueType: &iceberg.ListType{ElementID: 3, Element: &iceberg.StructType{FieldList: []iceberg.NestedField{
				{ID: 4, Name: "x", Type: iceberg.DecimalTypeOf(5, 1)},
				{ID: 5, Name: "y", Type: &iceberg.MapType{KeyID: 6, KeyType: iceberg.PrimitiveTypes.Int32, ValueID: 7, ValueType: iceberg.FixedTypeOf(2)}},
			}}},
		}},
	}
	for _, tc := range good {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseType(tc.in)
			if err != nil {
				t.Fatalf("ParseType(%q): %v", tc.in, err)
			}
			if !got.Equals(tc.want) {
				t.Fatalf("ParseType(%q) = %s, want %s", tc.in, got, tc.want)
			}
			if got.String() != tc.want.String() {
				t.Fatalf("ParseType(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}

	bad := []struct {
		in, wantErr string
	}{
		{"", "missing type"},
		{"varchar", `unknown type "varchar"`},
		{"int64", `unknown type "int64"`},
		{"decimal", `decimal: missing '('`},
		{"decimal(10)", `decimal: want ',' at position 10, got ')'`},
		{"decimal(39,2)", "precision must be 1 to 38, got 39"},
		{"decimal(5,6)", "scale 6 is larger than precision 5"},
		{"decimal(a,2)", "decimal precision: want a number"},
		{"fixed[0]", "fixed length must be positive"},
		{"fixed[", "fixed length: want a number"},
		{"list<>", "list element: want a type name"},
		{"list<string", `list: missing '>'`},
		{"map<string>", `map: want ','`},
		{"struct<a int>", `struct field a: want ':'`},
		{"struct<a:int,a:long>", `field "a" appears twice`},
		{"struct<>", "struct: want a field name"},
		{"string extra", `unexpected "extra"`},
		{"list<string>>", `unexpected ">"`},
	}
	for _, tc := range bad {
		t.Run("bad "+tc.in, func(t *testing.T) {
			got, err := ParseType(tc.in)
			if err == nil {
				t.Fatalf("ParseType(%q) = %s, want an error", tc.in, got)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "parse type") {
				t.Fatalf("ParseType(%q) error %q, want it to contain %q", tc.in, err, tc.wantErr)
			}
		})
	}
}

func TestTablesBuildSpecErrors(t *testing.T) {
	schema, err := BuildSchema(nil)
	if err == nil {
		t.Fatalf("BuildSchema(nil) = %v, want an error", schema)
	}
	schema, err = BuildSchema([]config.Column{
		{Name: "ts", Type: "timestamptz"}, {Name: "s", Type: "string"}, {Name: "d", Type: "decimal(9,2)"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ col, tr, wantErr string }{
		{"nope", "day", `no column "nope"`},
		{"s", "day", "transform day cannot apply to column s"},
		{"ts", "weekly", `unknown transform "weekly"`},
		{"s", "bucket[x]", `transform "bucket[x]"`},
		{"s", "bucket[0]", `transform "bucket[0]"`},
	} {
		_, err := BuildSpec(schema, []config.PartitionField{{Column: tc.col, Transform: tc.tr}})
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("BuildSpec(%s %s) error %v, want %q", tc.col, tc.tr, err, tc.wantErr)
		}
	}
	_, err = BuildSpec(schema, []config.PartitionField{{Column: "d"}, {Column: "d", Transform: "truncate[10]"}})
	if err == nil || !strings.Contains(err.Error(), "d and d_trunc both hold decimals") {
		t.Errorf("BuildSpec with two decimal fields: %v, want an error naming both", err)
	}
	if _, err := BuildSpec(schema, []config.PartitionField{{Column: "d"}, {Column: "d", Transform: "bucket[4]"}}); err != nil {
		t.Errorf("BuildSpec with a decimal and its bucket: %v", err)
	}
}
