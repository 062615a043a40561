package avrodec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/avro"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/internal/testutil"
)

// narrowAvro is the narrow JSON event of devenv as an Avro record of the
// same structure, so that the shape's customMapping addresses it.
const narrowAvro = `{"type":"record","name":"Click","namespace":"bench","fields":[
 {"name":"event_id","type":"string"},
 {"name":"tenant","type":"string"},
 {"name":"event_type","type":"string"},
 {"name":"occurred_at","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"user","type":{"type":"record","name":"User","fields":[
   {"name":"id","type":"long"},{"name":"email","type":"string"},{"name":"country","type":"string"},{"name":"plan","type":"string"}]}},
 {"name":"device","type":{"type":"record","name":"Device","fields":[
   {"name":"os","type":"string"},{"name":"version","type":"string"},{"name":"model","type":"string"}]}},
 {"name":"session","type":{"type":"record","name":"Session","fields":[
   {"name":"id","type":"string"},{"name":"duration_ms","type":"long"}]}},
 {"name":"order","type":{"type":"record","name":"Order","fields":[
   {"name":"amount","type":["null",{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}]},
   {"name":"currency","type":"string"},{"name":"items","type":"int"},{"name":"coupon","type":["null","string"]}]}},
 {"name":"page","type":{"type":"record","name":"Page","fields":[
   {"name":"url","type":"string"},{"name":"referrer","type":"string"}]}},
 {"name":"flags","type":{"type":"record","name":"Flags","fields":[
   {"name":"beta","type":"boolean"},{"name":"internal","type":"boolean"}]}},
 {"name":"tags","type":{"type":"array","items":"string"}}]}`

// wideAvro is the wide JSON event of devenv as an Avro record: the
// attributes are nullable fields, a001 .. a098 at the top, the others in
// the props record.
func wideAvro() string {
	avroType := map[string]string{"string": "string", "long": "long", "double": "double", "boolean": "boolean"}
	attr := func(b *strings.Builder, from, to int, cols map[string]string) {
		for i := from; i <= to; i++ {
			name := fmt.Sprintf("a%03d", i)
			fmt.Fprintf(b, `,{"name":%q,"type":["null",%q],"default":null}`, name, avroType[cols[name]])
		}
	}
	cols := map[string]string{}
	for _, c := range devenv.WideShape().Columns {
		cols[c.Name] = c.Type
	}
	var b strings.Builder
	b.WriteString(`{"type":"record","name":"Wide","namespace":"bench","fields":[{"name":"event_id","type":"string"},{"name":"tenant","type":"string"},{"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}}`)
	attr(&b, 1, 98, cols)
	b.WriteString(`,{"name":"props","type":{"type":"record","name":"Props","fields":[{"name":"a099","type":["null",` + fmt.Sprintf("%q", avroType[cols["a099"]]) + `],"default":null}`)
	attr(&b, 100, 197, cols)
	b.WriteString(`]}}]}`)
	return b.String()
}

type avroShape struct {
	*testutil.PathShape
	schema   *Schema
	payloads [][]byte
	bytes    int64
}

var (
	avroShapesOnce sync.Once
	avroShapes     []avroShape
	avroShapesErr  error
)

// loadAvroShapes encodes the events of testutil.PathShapes as Avro with
// twmb/avro, once per test binary.
func loadAvroShapes(b *testing.B) []avroShape {
	b.Helper()
	shapes := testutil.PathShapes(b)
	avroShapesOnce.Do(func() {
		for _, ps := range shapes {
			text := narrowAvro
			if ps.Name == devenv.ShapeWide {
				text = wideAvro()
			}
			enc, err := avro.Parse(text)
			if err != nil {
				avroShapesErr = err
				return
			}
			s, err := Parse(text)
			if err != nil {
				avroShapesErr = err
				return
			}
			as := avroShape{PathShape: ps, schema: s}
			for _, p := range ps.Payloads {
				dec := json.NewDecoder(bytes.NewReader(p))
				dec.UseNumber()
				var doc map[string]any
				if err := dec.Decode(&doc); err != nil {
					avroShapesErr = err
					return
				}
				if ps.Name == devenv.ShapeWide {
					if doc["props"] == nil {
						doc["props"] = map[string]any{}
					}
				}
				v, err := enc.Encode(doc)
				if err != nil {
					avroShapesErr = fmt.Errorf("encode %s event as Avro: %w", ps.Name, err)
					return
				}
				as.payloads = append(as.payloads, v)
				as.bytes += int64(len(v))
			}
			avroShapes = append(avroShapes, as)
		}
	})
	if avroShapesErr != nil {
		b.Fatal(avroShapesErr)
	}
	return avroShapes
}

// BenchmarkAvroDecode measures DecodeInto alone on the events of the
// JSON path benchmark (consumer's BenchmarkPath) encoded as Avro, with
// the same table and mapping, and reports rows per CPU-second:
//
//	go test -run '^$' -bench AvroDecode -cpu 1 -count 3 ./consumer/decode/avrodec/
//
// parse_skip maps no column, so every field is read past: the cost of
// walking the bytes alone.
func BenchmarkAvroDecode(b *testing.B) {
	for _, s := range loadAvroShapes(b) {
		b.Run(s.Name, func(b *testing.B) {
			d, err := New(s.Schema, s.Mapping, s.schema)
			if err != nil {
				b.Fatal(err)
			}
			run := func(b *testing.B, d *Decoder) {
				n := len(s.payloads)
				b.SetBytes(s.bytes / int64(n))
				b.ReportAllocs()
				runtime.GC() // the garbage of making the events is not decode's
				m := testutil.StartRows()
				var row decode.Row
				for i := 0; b.Loop(); i++ {
					if row, err = d.DecodeInto(row, s.payloads[i%n]); err != nil {
						b.Fatal(err)
					}
					m.Rows++
				}
				m.Report(b)
			}
			b.Run("decode", func(b *testing.B) { run(b, d) })
			b.Run("parse_skip", func(b *testing.B) {
				// Only the optional columns, mapped to nothing: every field
				// of the payload is skipped.
				mapping := map[string]string{}
				table := s.Schema
				for _, f := range table.Fields() {
					if f.Required {
						mapping[f.Name] = "zz_absent"
					}
				}
				dn, err := New(table, mapping, s.schema)
				if err != nil {
					b.Fatal(err)
				}
				// The required columns stay null: decode without the check.
				dn.required = nil
				run(b, dn)
			})
		})
	}
}
