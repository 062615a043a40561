package consumer

import (
	"errors"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icewal/ingestor/consumer/decode"
)

// Without customMapping each column takes the top-level field of its own
// name, also a name with a dot, a dash or a JMESPath keyword's spelling,
// and a required column without its field drops the record as
// missing_required.
func TestByNameMapping(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 2, Name: "geo.country", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "user-agent", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "null", Type: iceberg.PrimitiveTypes.Int64},
	)
	dec, err := decode.New(schema, byNameMapping(schema, nil))
	if err != nil {
		t.Fatal(err)
	}
	row, err := dec.DecodeInto(nil, []byte(`{"id":"e1","geo.country":"FR","geo":{"country":"DE"},"user-agent":"curl","null":7,"extra":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if row[0] != "e1" || row[1] != "FR" || row[2] != "curl" || row[3] != int64(7) {
		t.Fatalf("row %v, want [e1 FR curl 7]", row)
	}
	_, err = dec.DecodeInto(nil, []byte(`{"geo.country":"FR"}`))
	var de *decode.Error
	if !errors.As(err, &de) || de.Reason != decode.ReasonMissingRequired || de.Column != "id" {
		t.Fatalf("without id: %v, want missing_required for column id", err)
	}
	custom := map[string]string{"id": "meta.id"}
	if got := byNameMapping(schema, custom); len(got) != 1 || got["id"] != "meta.id" {
		t.Fatalf("a customMapping must be used as it is, got %v", got)
	}
}
