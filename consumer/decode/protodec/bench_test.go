package protodec

import (
	"testing"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/internal/testutil"
)

func decodeJSONDecoder(s *protoShape) (*decode.Decoder, error) {
	return decode.New(s.Schema, s.Mapping)
}

// BenchmarkProtoDecode measures DecodeInto on the events of the decode
// -> Parquet benchmarks (narrow: 15 columns; wide: 200 sparse columns),
// written as the protobuf messages of `ingestor bench --format protobuf`
// (one field per column, read by name), beside the JSON decoder on the
// same events through the shapes' mapping. Run it with
//
//	go test -run '^$' -bench ProtoDecode -cpu 1 -count 3 ./consumer/decode/protodec/
func BenchmarkProtoDecode(b *testing.B) {
	for _, s := range allProtoShapes(b) {
		b.Run(s.Name, func(b *testing.B) {
			n := len(s.messages)
			b.Run("protobuf", func(b *testing.B) {
				d, err := New(s.Schema, nil, s.md)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(s.bytes / int64(n))
				b.ReportAllocs()
				var row decode.Row
				m := testutil.StartRows()
				for i := 0; b.Loop(); i++ {
					if row, err = d.DecodeInto(row, s.messages[i%n]); err != nil {
						b.Fatal(err)
					}
					m.Rows++
				}
				m.Report(b)
			})
			b.Run("json", func(b *testing.B) {
				d, err := decodeJSONDecoder(s)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(s.Bytes / int64(n))
				b.ReportAllocs()
				var row decode.Row
				m := testutil.StartRows()
				for i := 0; b.Loop(); i++ {
					if row, err = d.DecodeInto(row, s.Payloads[i%n]); err != nil {
						b.Fatal(err)
					}
					m.Rows++
				}
				m.Report(b)
			})
		})
	}
}
