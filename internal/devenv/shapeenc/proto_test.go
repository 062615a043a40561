package shapeenc

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/consumer/decode/protodec"
	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
)

// Each shape's events written as Protobuf decode, by name with the
// Protobuf decoder from the schema text the bench registers, into the very
// rows its JSON events give through the shape's mapping: the formats of
// the bench carry the same data, and the table the bench creates fits the
// schema.
func TestProtoShapeCarriesTheJSONEvent(t *testing.T) {
	for _, name := range testShapes {
		t.Run(name, func(t *testing.T) {
			shape := testShape(t, name)
			p, err := NewProtoShape(shape)
			if err != nil {
				t.Fatal(err)
			}
			fd, err := protodec.Compile(context.Background(), p.Schema, nil)
			if err != nil {
				t.Fatalf("%v\n%s", err, p.Schema)
			}
			md := fd.Messages().ByName("Event")
			table, err := tables.BuildSchema(shape.Columns)
			if err != nil {
				t.Fatal(err)
			}
			ws, err := protodec.TableSchema(md)
			if err != nil {
				t.Fatal(err)
			}
			if err := tables.CheckWriterSchema(config.Dataset{Name: "bench", Table: "bench.events"}, table, ws); err != nil {
				t.Fatal(err)
			}
			pdec, err := protodec.New(table, nil, md)
			if err != nil {
				t.Fatal(err)
			}
			jdec, err := decode.New(table, shape.Mapping)
			if err != nil {
				t.Fatal(err)
			}
			at := time.Date(2026, 11, 30, 10, 0, 0, 123456000, time.UTC)
			for seq := int64(0); seq < 300; seq++ {
				id, tenant := devenv.EventID(7, seq), fmt.Sprintf("tenant-%03d", seq%5)
				b, err := p.Append(nil, id, tenant, seq, at.Add(time.Duration(seq)*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				got, err := pdec.DecodeInto(nil, b)
				if err != nil {
					t.Fatalf("event %d: %v", seq, err)
				}
				want, err := jdec.DecodeInto(nil, shape.Append(nil, id, tenant, seq, at.Add(time.Duration(seq)*time.Millisecond)))
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
						t.Fatalf("event %d column %s: Protobuf gives %v, JSON %v", seq, shape.Columns[i].Name, got[i], want[i])
					}
				}
			}
		})
	}
}
