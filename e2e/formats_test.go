package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/icewal/ingestor/consumer/decode/protodec"
)

// avroClicks is the writer schema of TestAvroThroughRegistry: the table
// is built from it, one column per field, and read by name.
const avroClicks = `{"type":"record","name":"Click","namespace":"e2e","fields":[
 {"name":"event_id","type":"string"},
 {"name":"tenant","type":["null","string"]},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"amount","type":"double"},
 {"name":"tags","type":{"type":"array","items":"string"}}]}`

// TestAvroThroughRegistry runs the built binary on an Avro topic whose
// values carry the Confluent header, with the schema in a registry:
// srfake, franz-go's in-process server of the registry's HTTP API (no
// real registry server can be installed here; srfake does not check
// compatibility, which this test does not need). The table does not
// exist and its create block gives only a partition spec: the ingestor
// builds it from the subject's latest schema, maps every column by name,
// and every event reaches the table exactly once. In the middle of the
// run the registry is down for 30 s (srfake answers 503) while the
// second half of the events names a schema version registered during the
// outage: those records wait in Kafka, nothing is dropped, and once the
// registry answers again they reach the table too.
func TestAvroThroughRegistry(t *testing.T) {
	const topic, table, n = "avro_clicks", "web.avro_clicks", 3000
	w := newWorld(t, worldOptions{topics: []string{topic}, partitions: 2})
	reg := srfake.New()
	defer reg.Close()
	var down atomic.Bool
	reg.Intercept(func(rw http.ResponseWriter, _ *http.Request) bool {
		if down.Load() {
			http.Error(rw, `{"error_code":50301,"message":"registry in maintenance"}`, http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	id, _, err := reg.RegisterSchema(topic+"-value", sr.Schema{Type: sr.TypeAvro, Schema: avroClicks})
	if err != nil {
		t.Fatal(err)
	}
	in := w.newInstance("avro", instanceOptions{datasets: []dataset{{topic: topic, table: table, yaml: fmt.Sprintf(`  - name: %s
    topic: %s
    table: %s
    format: avro
    schemaRegistry: {url: %q}
    create:
      partition: [{column: tenant}]
`, topic, topic, table, reg.URL())}}})
	defer in.dumpLogs()

	s, err := avro.Parse(avroClicks)
	if err != nil {
		t.Fatal(err)
	}
	produce := func(id int, from, to int) {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(w.broker), kgo.DefaultProduceTopic(topic)}, w.genOpts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for i := from; i < to; i++ {
			v, err := s.Encode(map[string]any{
				"event_id": fmt.Sprintf("evt-%d", i), "tenant": map[string]any{"string": fmt.Sprintf("t%d", i%3)},
				"ts": eventTime(int64(i)).UnixMicro(), "amount": float64(i) / 4, "tags": []any{"a", "b"},
			})
			if err != nil {
				t.Fatal(err)
			}
			hdr := []byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}
			cl.Produce(context.Background(), &kgo.Record{Value: append(hdr, v...)}, nil)
		}
		if err := cl.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	produce(id, 0, n/2)
	sup := in.start("run")
	w.waitRows(t, map[string]int64{table: n / 2}, 3*time.Minute)

	// The outage: a new version of the subject (the same fields, a doc
	// added, so a new id the ingestor has not fetched) and the registry
	// answering 503 for 30 s while the rest of the events name it.
	down.Store(true)
	id2, _, err := reg.RegisterSchema(topic+"-value", sr.Schema{Type: sr.TypeAvro, Schema: strings.Replace(avroClicks, `"name":"Click"`, `"name":"Click","doc":"v2"`, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if id2 == id {
		t.Fatalf("the second version got the first's id %d", id)
	}
	produce(id2, n/2, n)
	time.Sleep(30 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	during := w.tableRows(ctx, table)
	cancel()
	if during != n/2 {
		t.Fatalf("during the outage the table holds %d rows, want the %d written before it", during, n/2)
	}
	down.Store(false)
	w.waitRows(t, map[string]int64{table: n}, 3*time.Minute)
	sup.signal(syscall.SIGTERM)
	sup.wait(t, 90*time.Second)
	missing, dup, unexpected, rows := w.exactlyOnce(t, table, 0, n)
	if missing+dup+unexpected > 0 || rows != n {
		t.Fatalf("table holds %d rows: %d events missing, %d twice, %d unexpected", rows, missing, dup, unexpected)
	}
}

// protoClicks is the schema of TestProtobufThroughRegistry; the record's
// message is the second, so the header's message indexes are read.
const protoClicks = `syntax = "proto3";
package e2e;
import "google/protobuf/timestamp.proto";
message Other { int64 n = 1; }
message Click {
  string event_id = 1;
  optional string tenant = 2;
  google.protobuf.Timestamp ts = 3;
  double amount = 4;
  repeated string tags = 5;
}
`

// TestProtobufThroughRegistry is TestAvroThroughRegistry for Protobuf:
// the values written with dynamicpb from the schema the registry serves,
// framed by franz-go's sr.Serde (schema id and message indexes [1]) and
// read by the built binary into the columns its create block lists, by
// name; every event in the table once. The registry is srfake, as there; it does not check
// compatibility.
func TestProtobufThroughRegistry(t *testing.T) {
	const topic, table, n = "proto_clicks", "web.proto_clicks", 3000
	w := newWorld(t, worldOptions{topics: []string{topic}, partitions: 2})
	reg := srfake.New()
	defer reg.Close()
	id, _, err := reg.RegisterSchema(topic+"-value", sr.Schema{Type: sr.TypeProtobuf, Schema: protoClicks})
	if err != nil {
		t.Fatal(err)
	}
	// A table built from the schema would take its first message,
	// Other: this one lists the Click message's columns.
	in := w.newInstance("proto", instanceOptions{datasets: []dataset{{topic: topic, table: table, yaml: fmt.Sprintf(`  - name: %s
    topic: %s
    table: %s
    format: protobuf
    schemaRegistry: {url: %q}
    create:
      columns:
        - {name: event_id, type: string, required: true}
        - {name: tenant, type: string}
        - {name: ts, type: timestamptz}
        - {name: amount, type: double}
      partition: [{column: tenant}]
`, topic, topic, table, reg.URL())}}})
	defer in.dumpLogs()

	fd, err := protodec.Compile(context.Background(), protoClicks, nil)
	if err != nil {
		t.Fatal(err)
	}
	click := fd.Messages().ByName("Click")
	f := click.Fields()
	tsType := f.ByName("ts").Message()
	var serde sr.Serde
	serde.Register(id, &dynamicpb.Message{}, sr.EncodeFn(func(v any) ([]byte, error) { return proto.Marshal(v.(*dynamicpb.Message)) }), sr.Index(1))
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(w.broker), kgo.DefaultProduceTopic(topic)}, w.genOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		m := dynamicpb.NewMessage(click)
		m.Set(f.ByName("event_id"), protoreflect.ValueOfString(fmt.Sprintf("evt-%d", i)))
		m.Set(f.ByName("tenant"), protoreflect.ValueOfString(fmt.Sprintf("t%d", i%3)))
		ts := dynamicpb.NewMessage(tsType)
		ts.Set(tsType.Fields().ByName("seconds"), protoreflect.ValueOfInt64(eventTime(int64(i)).Unix()))
		m.Set(f.ByName("ts"), protoreflect.ValueOfMessage(ts))
		m.Set(f.ByName("amount"), protoreflect.ValueOfFloat64(float64(i)/4))
		v, err := serde.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		cl.Produce(context.Background(), &kgo.Record{Value: v}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	sup := in.start("run")
	w.waitRows(t, map[string]int64{table: n}, 3*time.Minute)
	sup.signal(syscall.SIGTERM)
	sup.wait(t, 90*time.Second)
	missing, dup, unexpected, rows := w.exactlyOnce(t, table, 0, n)
	if missing+dup+unexpected > 0 || rows != n {
		t.Fatalf("table holds %d rows: %d events missing, %d twice, %d unexpected", rows, missing, dup, unexpected)
	}
}
