package consumer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/consumer/decode/protodec"
	"github.com/icewal/ingestor/shared/tables"
)

// clickAvro is the writer schema of the Avro test records: the table's
// mapping (event_id: id, tenant: meta.tenant, ts: meta.ts) reaches into
// the nested record by path.
const clickAvro = `{"type":"record","name":"Click","fields":[
 {"name":"id","type":"string"},
 {"name":"meta","type":{"type":"record","name":"Meta","fields":[
   {"name":"tenant","type":["null","string"]},
   {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}}]}},
 {"name":"ignored","type":{"type":"array","items":"string"}}]}`

// clickProto holds three messages, so that the records' message indexes
// ([2]) are read: the first message is not the one written.
const clickProto = `syntax = "proto3";
package clicks;
import "google/protobuf/timestamp.proto";
message Other { int64 n = 1; }
message Meta { optional string tenant = 1; google.protobuf.Timestamp ts = 2; }
message Click { string id = 1; Meta meta = 2; repeated string ignored = 3; }
`

// checkFormatRun checks, once the consumer has read total records of
// which the n valid ones are produced with ids e0..e<n-1>, that every
// event is in the WAL once, every offset committed, and that each drop
// reason in drops reached the dead-letter topic with the record as it was.
func checkFormatRun(t *testing.T, e *runEnv, n int, total int64, drops map[string][]byte) {
	t.Helper()
	waitFor(t, "every record consumed", 30*time.Second, func() bool { return e.consumed() == float64(total) })
	waitFor(t, "every offset committed", 30*time.Second, func() bool { return e.committed(t) == total })
	ids := map[string]int{}
	for _, f := range readyFiles(t, e.cfg.Ingestion.WAL.Dir) {
		for _, v := range readStrings(t, f.Path, "event_id") {
			ids[v]++
		}
	}
	for i := range n {
		if c := ids[fmt.Sprintf("e%d", i)]; c != 1 {
			t.Fatalf("event e%d is in the WAL %d times, want once", i, c)
		}
	}
	if len(ids) != n {
		t.Fatalf("the WAL holds %d events, want %d", len(ids), n)
	}
	for reason := range drops {
		if got := testutil.ToFloat64(e.c.m.dropped.WithLabelValues("clicks", reason)); got != 1 {
			t.Errorf("dropped{reason=%s} = %v, want 1", reason, got)
		}
	}
	dl := readDeadLetters(t, e, len(drops))
	for reason, v := range drops {
		if string(dl[reason]) != string(v) {
			t.Errorf("dead letter %s: %q, want the record as produced %q", reason, dl[reason], v)
		}
	}
}

// Avro values with the Confluent header, written by franz-go's sr.Serde
// with an Avro encoder independent of the decoder (twmb/avro), land
// exactly once; a wrong magic byte, bytes that are not a datum of the
// writer schema and an id the registry lacks go to the dead-letter topic
// with their reasons. srfake stands in for the registry (none can be
// installed here); it does not check compatibility, which nothing here
// needs.
func TestConsumerReadsAvroThroughTheRegistry(t *testing.T) {
	reg, _ := startRegistry(t)
	id, _, err := reg.RegisterSchema("clicks_v1-value", sr.Schema{Type: sr.TypeAvro, Schema: clickAvro})
	if err != nil {
		t.Fatal(err)
	}
	e := startConsumerWith(t, fmt.Sprintf("    format: avro\n    deadLetterTopic: clicks_dlq\n    schemaRegistry: {url: %q}\n", reg.URL()), nil)
	as, err := avro.Parse(clickAvro)
	if err != nil {
		t.Fatal(err)
	}
	var serde sr.Serde
	serde.Register(id, map[string]any{}, sr.EncodeFn(func(v any) ([]byte, error) { return as.Encode(v) }))
	const n = 200
	var values [][]byte
	for i := range n {
		var tenant any = map[string]any{"string": []string{"a", "b"}[i%2]}
		if i%7 == 0 {
			tenant = nil
		}
		v, err := serde.Encode(map[string]any{
			"id":      fmt.Sprintf("e%d", i),
			"meta":    map[string]any{"tenant": tenant, "ts": time.Date(2026, 11, 30, 10, 0, i%60, 0, time.UTC).UnixMicro()},
			"ignored": []any{"x", "y"},
		})
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, v)
	}
	drops := map[string][]byte{
		decode.ReasonNotAvro:       append([]byte{1}, values[0][1:]...),
		decode.ReasonUnknownSchema: confluent(id+1000, values[0][5:]),
	}
	e.produceValues(t, 0, values[:n/2]...)
	e.produceValues(t, 1, values[n/2:]...)
	for _, v := range drops {
		e.produceValues(t, 1, v)
	}
	checkFormatRun(t, e, n, int64(n+len(drops)), drops)
	if got := testutil.ToFloat64(e.c.m.schemasFetched); got != 1 {
		t.Fatalf("schemas fetched %v, want 1", got)
	}
}

// Protobuf values with the Confluent header (schema id and message
// indexes [2]), built with dynamicpb from the schema the registry serves
// and framed by sr.Serde, land exactly once; a wrong magic byte and bytes
// that are not a message of the indexed type go to the dead-letter topic
// as not_protobuf, an unknown id as unknown_schema.
func TestConsumerReadsProtobufThroughTheRegistry(t *testing.T) {
	reg, _ := startRegistry(t)
	id, _, err := reg.RegisterSchema("clicks_v1-value", sr.Schema{Type: sr.TypeProtobuf, Schema: clickProto})
	if err != nil {
		t.Fatal(err)
	}
	e := startConsumerWith(t, fmt.Sprintf("    format: protobuf\n    deadLetterTopic: clicks_dlq\n    schemaRegistry: {url: %q}\n", reg.URL()), nil)
	fd, err := protodec.Compile(context.Background(), clickProto, nil)
	if err != nil {
		t.Fatal(err)
	}
	click := fd.Messages().ByName("Click")
	meta := fd.Messages().ByName("Meta")
	var serde sr.Serde
	serde.Register(id, &dynamicpb.Message{}, sr.EncodeFn(func(v any) ([]byte, error) { return proto.Marshal(v.(*dynamicpb.Message)) }), sr.Index(2))
	const n = 200
	var values [][]byte
	for i := range n {
		m := dynamicpb.NewMessage(click)
		m.Set(click.Fields().ByName("id"), protoreflect.ValueOfString(fmt.Sprintf("e%d", i)))
		mm := dynamicpb.NewMessage(meta)
		if i%7 != 0 {
			mm.Set(meta.Fields().ByName("tenant"), protoreflect.ValueOfString([]string{"a", "b"}[i%2]))
		}
		tsField := meta.Fields().ByName("ts")
		ts := dynamicpb.NewMessage(tsField.Message())
		ts.Set(tsField.Message().Fields().ByName("seconds"), protoreflect.ValueOfInt64(time.Date(2026, 11, 30, 10, 0, i%60, 0, time.UTC).Unix()))
		mm.Set(tsField, protoreflect.ValueOfMessage(ts))
		m.Set(click.Fields().ByName("meta"), protoreflect.ValueOfMessage(mm))
		m.Set(click.Fields().ByName("ignored"), protoreflect.ValueOfList(listOf(m, click.Fields().ByName("ignored"), "x", "y")))
		v, err := serde.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, v)
	}
	drops := map[string][]byte{
		decode.ReasonNotProtobuf:   append([]byte{1}, values[0][1:]...),
		decode.ReasonUnknownSchema: confluent(id+1000, values[0][5:]),
	}
	e.produceValues(t, 0, values[:n/2]...)
	e.produceValues(t, 1, values[n/2:]...)
	for _, v := range drops {
		e.produceValues(t, 1, v)
	}
	checkFormatRun(t, e, n, int64(n+len(drops)), drops)
}

// listOf builds the list value of a repeated string field of m.
func listOf(m *dynamicpb.Message, f protoreflect.FieldDescriptor, items ...string) protoreflect.List {
	l := m.NewField(f).List()
	for _, it := range items {
		l.Append(protoreflect.ValueOfString(it))
	}
	return l
}

// flatAvro is a writer schema whose fields are the table's columns by name.
const flatAvro = `{"type":"record","name":"Click","fields":[
 {"name":"event_id","type":"string"},
 {"name":"tenant","type":["null","string"]},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"n","type":"int"}]}`

// A dataset whose create block gives a partition spec and no columns gets
// its table from the subject's latest schema, field ids assigned and
// required where the schema has no null; without customMapping every
// column then takes its field by name.
func TestConsumerCreatesTheTableFromTheRegistrySchema(t *testing.T) {
	reg, _ := startRegistry(t)
	id, _, err := reg.RegisterSchema("clicks_v1-value", sr.Schema{Type: sr.TypeAvro, Schema: flatAvro})
	if err != nil {
		t.Fatal(err)
	}
	e := startConsumerOf(t, fmt.Sprintf(`    table: web.clicks
    format: avro
    schemaRegistry: {url: %q}
    create:
      partition: [{column: tenant}]
`, reg.URL()), nil)
	as, err := avro.Parse(flatAvro)
	if err != nil {
		t.Fatal(err)
	}
	var values [][]byte
	const n = 50
	for i := range n {
		v, err := as.Encode(map[string]any{"event_id": fmt.Sprintf("e%d", i), "tenant": map[string]any{"string": "a"},
			"ts": time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).UnixMicro(), "n": int32(i)})
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, confluent(id, v))
	}
	e.produceValues(t, 0, values...)
	checkFormatRun(t, e, n, n, nil)

	cat, err := tables.OpenCatalog(context.Background(), e.cfg.Catalog)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"web", "clicks"})
	if err != nil {
		t.Fatal(err)
	}
	want := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "event_id", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 2, Name: "tenant", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 4, Name: "n", Type: iceberg.PrimitiveTypes.Int32, Required: true},
	)
	if !tbl.Schema().Equals(want) {
		t.Fatalf("table schema %s, want %s", tbl.Schema(), want)
	}
}

// At start, a table whose column is narrower than the writer's field of
// its name stops the consumer with an error naming the column, before a
// record is read.
func TestConsumerRefusesATableNarrowerThanTheSchema(t *testing.T) {
	reg, _ := startRegistry(t)
	wide := strings.Replace(flatAvro, `{"name":"n","type":"int"}`, `{"name":"n","type":"long"}`, 1)
	if _, _, err := reg.RegisterSchema("clicks_v1-value", sr.Schema{Type: sr.TypeAvro, Schema: wide}); err != nil {
		t.Fatal(err)
	}
	e := startConsumerOf(t, fmt.Sprintf(`    table: web.clicks
    format: avro
    schemaRegistry: {url: %q}
    create:
      columns:
        - {name: event_id, type: string, required: true}
        - {name: tenant, type: string}
        - {name: ts, type: timestamptz}
        - {name: n, type: int}
`, reg.URL()), nil)
	var err error
	select {
	case err = <-e.done:
		e.done <- err // for the cleanup, which waits for the consumer's end
	case <-time.After(30 * time.Second):
		t.Fatal("the consumer started with a table narrower than the writer schema")
	}
	if err == nil || !strings.Contains(err.Error(), "column n") && !strings.Contains(err.Error(), `"n"`) {
		t.Fatalf("start error %v, want one naming column n", err)
	}
}

// Raw Avro values, without any header, against the schema of
// avroSchemaFile (the ingest-bench case): the table is built from the
// file and every event lands once; a value that is not a datum of the
// schema goes to the dead-letter topic as not_avro.
func TestConsumerReadsRawAvroWithASchemaFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schema.avsc")
	if err := os.WriteFile(path, []byte(flatAvro), 0o644); err != nil {
		t.Fatal(err)
	}
	e := startConsumerOf(t, fmt.Sprintf(`    table: web.clicks
    format: avro
    avroSchemaFile: %q
    deadLetterTopic: clicks_dlq
    create:
      partition: [{column: tenant}]
`, path), nil)
	as, err := avro.Parse(flatAvro)
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	var values [][]byte
	for i := range n {
		v, err := as.Encode(map[string]any{"event_id": fmt.Sprintf("e%d", i), "tenant": nil,
			"ts": time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).UnixMicro(), "n": int32(i)})
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, v)
	}
	bad := values[0][:3] // a string length with its bytes cut off
	drops := map[string][]byte{decode.ReasonNotAvro: bad}
	e.produceValues(t, 0, values...)
	e.produceValues(t, 1, bad)
	checkFormatRun(t, e, n, n+1, drops)
}
