package protodec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/internal/testutil"
)

// narrowProto is the narrow shape's event as a protobuf message: the
// fields of its JSON, with the same names, so the shape's mapping paths
// address it unchanged.
const narrowProto = `syntax = "proto3";
import "google/protobuf/timestamp.proto";
message Event {
  string event_id = 1;
  string tenant = 2;
  string event_type = 3;
  google.protobuf.Timestamp occurred_at = 4;
  User user = 5;
  Device device = 6;
  Session session = 7;
  Order order = 8;
  Page page = 9;
  Flags flags = 10;
  repeated string tags = 11;
  message User { int64 id = 1; string email = 2; string country = 3; string plan = 4; }
  message Device { string os = 1; string version = 2; string model = 3; }
  message Session { string id = 1; int64 duration_ms = 2; }
  message Order { optional string amount = 1; string currency = 2; int64 items = 3; optional string coupon = 4; }
  message Page { string url = 1; string referrer = 2; }
  message Flags { bool beta = 1; bool internal = 2; }
}
`

// wideProto is the wide shape's event: a001 .. a098 at the top level and
// the other attributes in props, each `optional` so that an absent one is
// null, as in the JSON.
func wideProto(s *testutil.PathShape) string {
	var top, props strings.Builder
	for _, f := range s.Schema.Fields()[3:] {
		typ := map[string]string{"string": "string", "long": "int64", "double": "double", "boolean": "bool"}[f.Type.String()]
		var n int
		fmt.Sscanf(f.Name, "a%d", &n)
		if strings.HasPrefix(s.Mapping[f.Name], "props.") {
			fmt.Fprintf(&props, "    optional %s %s = %d;\n", typ, f.Name, n)
		} else {
			fmt.Fprintf(&top, "  optional %s %s = %d;\n", typ, f.Name, n+3)
		}
	}
	return `syntax = "proto3";
import "google/protobuf/timestamp.proto";
message Event {
  string event_id = 1;
  string tenant = 2;
  google.protobuf.Timestamp ts = 3;
` + top.String() + `  Props props = 200;
  message Props {
` + props.String() + `  }
}
`
}

// protoShape is a shape of the decode micro-benchmarks with its events
// as protobuf messages.
type protoShape struct {
	*testutil.PathShape
	md       protoreflect.MessageDescriptor
	messages [][]byte
	bytes    int64
}

// protoShapes converts the first limit JSON events (0: all) of
// testutil.PathShapes to protobuf messages of the same fields, through
// dynamicpb.
func protoShapes(tb testing.TB, limit int) []*protoShape {
	tb.Helper()
	var out []*protoShape
	for _, s := range testutil.PathShapes(tb) {
		text := narrowProto
		if s.Name == "wide" {
			text = wideProto(s)
		}
		fd, err := Compile(context.Background(), text, nil)
		if err != nil {
			tb.Fatal(err)
		}
		ps := &protoShape{PathShape: s, md: fd.Messages().ByName("Event")}
		for i, p := range s.Payloads {
			if limit > 0 && i == limit {
				break
			}
			dec := json.NewDecoder(bytes.NewReader(p))
			dec.UseNumber()
			var doc map[string]any
			if err := dec.Decode(&doc); err != nil {
				tb.Fatal(err)
			}
			m := fromJSON(tb, ps.md, doc)
			b, err := proto.Marshal(m)
			if err != nil {
				tb.Fatal(err)
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

func fromJSON(tb testing.TB, md protoreflect.MessageDescriptor, doc map[string]any) *dynamicpb.Message {
	m := dynamicpb.NewMessage(md)
	for k, v := range doc {
		fd := md.Fields().ByName(protoreflect.Name(k))
		if fd == nil {
			tb.Fatalf("%s has no field %s", md.FullName(), k)
		}
		if v == nil {
			continue
		}
		if fd.IsList() {
			l := m.Mutable(fd).List()
			for _, e := range v.([]any) {
				l.Append(jsonValue(tb, fd, e))
			}
			continue
		}
		m.Set(fd, jsonValue(tb, fd, v))
	}
	return m
}

func jsonValue(tb testing.TB, fd protoreflect.FieldDescriptor, v any) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.MessageKind:
		if fd.Message().FullName() == nameTimestamp {
			at, err := time.Parse(time.RFC3339Nano, v.(string))
			if err != nil {
				tb.Fatal(err)
			}
			ts := dynamicpb.NewMessage(fd.Message())
			ts.Set(fd.Message().Fields().ByNumber(1), protoreflect.ValueOfInt64(at.Unix()))
			ts.Set(fd.Message().Fields().ByNumber(2), protoreflect.ValueOfInt32(int32(at.Nanosecond())))
			return protoreflect.ValueOfMessage(ts)
		}
		return protoreflect.ValueOfMessage(fromJSON(tb, fd.Message(), v.(map[string]any)))
	case protoreflect.Int64Kind:
		n, err := v.(json.Number).Int64()
		if err != nil {
			tb.Fatal(err)
		}
		return protoreflect.ValueOfInt64(n)
	case protoreflect.DoubleKind:
		f, err := v.(json.Number).Float64()
		if err != nil {
			tb.Fatal(err)
		}
		return protoreflect.ValueOfFloat64(f)
	}
	return protoreflect.ValueOf(v)
}

// TestShapesDecode checks that the benchmark's protobuf events decode to
// the rows their JSON gives through the JSON decoder.
func TestShapesDecode(t *testing.T) {
	for _, s := range protoShapes(t, 200) {
		t.Run(s.Name, func(t *testing.T) {
			jd, err := decodeJSONDecoder(s)
			if err != nil {
				t.Fatal(err)
			}
			d, err := New(s.Schema, s.Mapping, s.md)
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
