package protodec

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/internal/devenv/shapeenc"
	"github.com/icewal/ingestor/internal/testutil"
)

// protoShape is a shape of the decode micro-benchmarks with its events
// as protobuf messages.
type protoShape struct {
	*testutil.PathShape
	md       protoreflect.MessageDescriptor
	messages [][]byte
	bytes    int64
}

// protoShapes converts the first limit JSON events (0: all) of
// testutil.PathShapes to the Protobuf messages `ingestor bench --format
// protobuf` produces (shapeenc.ProtoShape: one field per column, named as
// the column), with the schema text it registers compiled by Compile.
func protoShapes(tb testing.TB, limit int) []*protoShape {
	tb.Helper()
	var out []*protoShape
	for _, s := range testutil.PathShapes(tb) {
		shape, err := devenv.ShapeByName(s.Name)
		if err != nil {
			tb.Fatal(err)
		}
		w, err := shapeenc.NewProtoShape(shape)
		if err != nil {
			tb.Fatal(err)
		}
		fd, err := Compile(context.Background(), w.Schema, nil)
		if err != nil {
			tb.Fatal(err)
		}
		ps := &protoShape{PathShape: s, md: fd.Messages().ByName("Event")}
		for i, p := range s.Payloads {
			if limit > 0 && i == limit {
				break
			}
			b, err := w.AppendJSON(nil, p)
			if err != nil {
				tb.Fatalf("%s event %d: %v", s.Name, i, err)
			}
			ps.messages = append(ps.messages, b)
			ps.bytes += int64(len(b))
		}
		out = append(out, ps)
	}
	return out
}

var (
	benchShapesOnce sync.Once
	benchShapes     []*protoShape
)

// allProtoShapes is protoShapes of every event, made once per test
// binary.
func allProtoShapes(tb testing.TB) []*protoShape {
	benchShapesOnce.Do(func() { benchShapes = protoShapes(tb, 0) })
	if benchShapes == nil {
		tb.Fatal("the shapes did not convert")
	}
	return benchShapes
}

// TestShapesDecode checks that the benchmark's protobuf events, read by
// name, decode to the rows their JSON gives through the JSON decoder and
// the shape's mapping.
func TestShapesDecode(t *testing.T) {
	for _, s := range protoShapes(t, 200) {
		t.Run(s.Name, func(t *testing.T) {
			jd, err := decodeJSONDecoder(s)
			if err != nil {
				t.Fatal(err)
			}
			d, err := New(s.Schema, nil, s.md)
			if err != nil {
				t.Fatal(err)
			}
			// All rows are decoded before any is checked: the values of a
			// row stay as they were when the next rows are decoded.
			rows := make([]decode.Row, len(s.messages))
			for i, m := range s.messages {
				if rows[i], err = d.DecodeInto(nil, m); err != nil {
					t.Fatal(err)
				}
			}
			for i, got := range rows {
				want, err := jd.DecodeInto(nil, s.Payloads[i])
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("event %d:\nprotobuf %v\njson     %v", i, got, want)
				}
			}
		})
	}
}
