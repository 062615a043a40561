package tables

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/shared/config"
)

// A table is compared with the writers' schema by name: a required column
// without a field, or a column narrower than its field, is an error
// naming the column; an optional column without a field, a wider column
// and a field without a column are fine.
func TestCheckWriterSchema(t *testing.T) {
	d := config.Dataset{Name: "clicks", Table: "web.clicks"}
	writer := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 2, Name: "n", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 3, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 4, Name: "extra", Type: iceberg.PrimitiveTypes.String},
	)
	col := func(name string, t iceberg.Type, req bool) iceberg.NestedField {
		return iceberg.NestedField{Name: name, Type: t, Required: req}
	}
	tests := []struct {
		name string
		cols []iceberg.NestedField
		want string
	}{
		{"fits", []iceberg.NestedField{col("id", iceberg.PrimitiveTypes.String, true), col("n", iceberg.PrimitiveTypes.Int64, false), col("f", iceberg.PrimitiveTypes.Float64, false), col("gone", iceberg.PrimitiveTypes.String, false)}, ""},
		{"required column without a field", []iceberg.NestedField{col("id", iceberg.PrimitiveTypes.String, true), col("gone", iceberg.PrimitiveTypes.String, true)}, "column gone of table web.clicks is required"},
		{"narrower column", []iceberg.NestedField{col("id", iceberg.PrimitiveTypes.String, true), col("n", iceberg.PrimitiveTypes.Int32, false)}, "column n of table web.clicks is int, narrower than the writers' field n (long)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.cols {
				tc.cols[i].ID = i + 1
			}
			err := CheckWriterSchema(d, iceberg.NewSchema(0, tc.cols...), writer)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
