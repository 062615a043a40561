package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
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
// and every event reaches the table exactly once.
func TestAvroThroughRegistry(t *testing.T) {
	const topic, table, n = "avro_clicks", "web.avro_clicks", 3000
	w := newWorld(t, worldOptions{topics: []string{topic}, partitions: 2})
	reg := srfake.New()
	defer reg.Close()
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
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(w.broker), kgo.DefaultProduceTopic(topic)}, w.genOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
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
