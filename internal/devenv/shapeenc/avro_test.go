package shapeenc

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/consumer/decode/avrodec"
	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/tables"
)

// Each shape's events written as Avro decode, by name with the Avro
// decoder, into the very rows its JSON events give through the shape's
// mapping: the formats of the bench carry the same data.
func TestAvroShapeCarriesTheJSONEvent(t *testing.T) {
	for _, name := range testShapes {
		t.Run(name, func(t *testing.T) {
			shape := testShape(t, name)
			a, err := NewAvroShape(shape)
			if err != nil {
				t.Fatal(err)
			}
			ws, err := avrodec.Parse(a.Schema)
			if err != nil {
				t.Fatal(err)
			}
			table, err := tables.BuildSchema(shape.Columns)
			if err != nil {
				t.Fatal(err)
			}
			adec, err := avrodec.New(table, nil, ws)
			if err != nil {
				t.Fatal(err)
			}
			jdec, err := decode.New(table, shape.Mapping)
			if err != nil {
				t.Fatal(err)
			}
			at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
			for seq := int64(0); seq < 300; seq++ {
				id, tenant := devenv.EventID(7, seq), fmt.Sprintf("tenant-%03d", seq%5)
				b, err := a.Append(nil, id, tenant, seq, at)
				if err != nil {
					t.Fatal(err)
				}
				got, err := adec.DecodeInto(nil, b)
				if err != nil {
					t.Fatalf("event %d: %v", seq, err)
				}
				want, err := jdec.DecodeInto(nil, shape.Append(nil, id, tenant, seq, at))
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if !reflect.DeepEqual(fmt.Sprint(got[i]), fmt.Sprint(want[i])) {
						t.Fatalf("event %d column %s: Avro gives %v, JSON %v", seq, shape.Columns[i].Name, got[i], want[i])
					}
				}
			}
		})
	}
}
