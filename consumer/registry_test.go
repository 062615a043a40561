package consumer

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/shared/config"
)

// confluent prefixes value with the Confluent wire format's header: the
// magic byte 0 and the schema id.
func confluent(id int, value []byte) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	return append(b, value...)
}

// startRegistry starts srfake, franz-go's in-process server of the schema
// registry's HTTP API. No real registry server can be installed here;
// srfake serves schemas by id, subjects and versions as one does, but
// accepts every schema as compatible, so nothing here relies on a
// compatibility check. down, while true, makes it answer every request
// with 503, as a registry in an outage would.
func startRegistry(t *testing.T) (*srfake.Registry, *atomic.Bool) {
	t.Helper()
	reg := srfake.New()
	t.Cleanup(reg.Close)
	down := &atomic.Bool{}
	reg.Intercept(func(w http.ResponseWriter, _ *http.Request) bool {
		if down.Load() {
			http.Error(w, `{"error_code":50301,"message":"registry in maintenance"}`, http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	return reg, down
}

// produceValues writes values to one partition of the dataset's topic.
func (e *runEnv) produceValues(t *testing.T, partition int32, values ...[]byte) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.cluster.ListenAddrs()...), kgo.DefaultProduceTopic("clicks_v1"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range values {
		cl.Produce(context.Background(), &kgo.Record{Value: v, Partition: partition}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A JSON dataset with a registry reads values with the Confluent header
// (JSON Schema subjects) and without; a schema id the registry does not
// have goes to the dead-letter topic as unknown_schema, a zero byte
// without a whole header as not_json. A registry outage in the middle of
// the run drops nothing: the partition whose next record names a schema
// id not fetched yet waits, shown by the metric and the status, while the
// other partition goes on, and once the registry answers again every
// record is in the WAL exactly once and every offset committed.
func TestConsumerWaitsForTheRegistryAndDropsUnknownSchemas(t *testing.T) {
	reg, down := startRegistry(t)
	id1, _, err := reg.RegisterSchema("clicks_v1-value", sr.Schema{Type: sr.TypeJSON, Schema: `{"type":"object","properties":{"id":{"type":"string"}}}`})
	if err != nil {
		t.Fatal(err)
	}
	e := startConsumerWith(t, fmt.Sprintf("    deadLetterTopic: clicks_dlq\n    schemaRegistry: {url: %q}\n", reg.URL()), nil)

	// Before the outage: plain and framed values on both partitions.
	n := 0
	batch := func(framedID int, count int) [][]byte {
		var out [][]byte
		for range count {
			v := event(n, "a")
			if framedID != 0 {
				v = confluent(framedID, v)
			}
			out = append(out, v)
			n++
		}
		return out
	}
	e.produceValues(t, 0, batch(id1, 20)...)
	e.produceValues(t, 1, batch(0, 20)...)
	unknown := confluent(999_999, event(10_000, "a"))
	short := []byte{0, 0, 1}
	e.produceValues(t, 1, unknown, short)
	waitFor(t, "the first records consumed", 20*time.Second, func() bool { return e.consumed() == 42 })
	if got := testutil.ToFloat64(e.c.m.schemasFetched); got != 1 {
		t.Fatalf("schemas fetched %v, want 1: the id is fetched once, whatever its records", got)
	}

	// The outage: a new schema version is registered (its id is not
	// cached) and the registry stops answering.
	down.Store(true)
	id2, _, err := reg.RegisterSchema("clicks_v1-value", sr.Schema{Type: sr.TypeJSON, Schema: `{"type":"object"}`})
	if err != nil {
		t.Fatal(err)
	}
	e.produceValues(t, 0, batch(id2, 30)...)
	waitFor(t, "partition 0 waiting for its schema", 20*time.Second, func() bool {
		return testutil.ToFloat64(e.c.m.schemaWaiting.WithLabelValues("clicks")) == 1
	})
	e.produceValues(t, 1, batch(id1, 25)...)
	waitFor(t, "partition 1 going on during the outage", 20*time.Second, func() bool { return e.consumed() == 42+25 })
	waitFor(t, "registry errors counted", 20*time.Second, func() bool { return testutil.ToFloat64(e.c.m.registryErrors) >= 2 })
	st := e.c.Status().Datasets["clicks"]
	if !st.Paused || len(st.PausedReasons) != 1 || st.PausedReasons[0] != PauseSchemaRegistry {
		t.Fatalf("status while waiting: paused %v, reasons %v; want paused for %s", st.Paused, st.PausedReasons, PauseSchemaRegistry)
	}
	if got := testutil.ToFloat64(e.c.m.dropped.WithLabelValues("clicks", decode.ReasonUnknownSchema)); got != 1 {
		t.Fatalf("unknown_schema drops %v during the outage, want only the 1 record of an id the registry does not have", got)
	}

	// The registry is back: the waiting partition resumes from the record
	// that waited.
	down.Store(false)
	total := int64(n + 2)
	waitFor(t, "every record consumed", 30*time.Second, func() bool { return e.consumed() == float64(total) })
	waitFor(t, "every offset committed", 30*time.Second, func() bool { return e.committed(t) == total })
	waitFor(t, "no partition waiting", 10*time.Second, func() bool {
		return testutil.ToFloat64(e.c.m.schemaWaiting.WithLabelValues("clicks")) == 0
	})
	if st := e.c.Status().Datasets["clicks"]; st.Paused {
		t.Fatalf("status after the outage: still paused for %v", st.PausedReasons)
	}
	for reason, want := range map[string]float64{decode.ReasonUnknownSchema: 1, decode.ReasonNotJSON: 1} {
		if got := testutil.ToFloat64(e.c.m.dropped.WithLabelValues("clicks", reason)); got != want {
			t.Errorf("dropped{reason=%s} = %v, want %v", reason, got, want)
		}
	}
	// Exactly once: the WAL holds each event once, none lost, none twice.
	ids := map[string]int{}
	for _, f := range readyFiles(t, e.cfg.Ingestion.WAL.Dir) {
		for _, v := range readStrings(t, f.Path, "event_id") {
			ids[v]++
		}
	}
	if len(ids) != n {
		t.Fatalf("the WAL holds %d distinct events, want the %d produced", len(ids), n)
	}
	for id, c := range ids {
		if c != 1 {
			t.Fatalf("event %s written %d times", id, c)
		}
	}
	dl := readDeadLetters(t, e, 2)
	if string(dl[decode.ReasonUnknownSchema]) != string(unknown) || string(dl[decode.ReasonNotJSON]) != string(short) {
		t.Fatalf("dead letters %q, want the unknown_schema and not_json records as produced", dl)
	}
}

// readDeadLetters reads n records of the dead-letter topic, by reason.
func readDeadLetters(t *testing.T, e *runEnv, n int) map[string][]byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.cluster.ListenAddrs()...), kgo.ConsumeTopics("clicks_dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string][]byte{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(got) < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == "ingestor.reason" {
					got[string(h.Value)] = r.Value
				}
			}
		})
	}
	return got
}

// lagging makes srfake answer "schema not found" (404, error code 40403)
// to schema-by-id requests while it is true, as a registry replica that
// has not yet read a registration does.
func lagging(reg *srfake.Registry) *atomic.Bool {
	lag := &atomic.Bool{}
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if lag.Load() && strings.HasPrefix(r.URL.Path, "/schemas/ids/") {
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error_code":40403,"message":"Schema not found"}`)
			return true
		}
		return false
	})
	return lag
}

// lookupUntil asks r for id until the answer is not pending.
func lookupUntil(t *testing.T, r *schemaRegistry, id int) schemaState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.wait(ctx, id); err != nil {
		t.Fatalf("schema id %d: no settled answer: %v", id, err)
	}
	_, st := r.lookup(id)
	return st
}

// A registry that answers "not found" for a schema registered a moment
// ago (a replica behind the one the producer registered with) does not
// send the records naming it to the dead-letter topic: the answer must
// hold for missingAfter before the id counts as missing, and the records
// wait until then. A settled "not found" is asked again after
// missingTTL, so a schema put back in the registry is found without a
// restart.
func TestRegistryConfirmsAMissingSchema(t *testing.T) {
	reg := srfake.New()
	t.Cleanup(reg.Close)
	id, _, err := reg.RegisterSchema("clicks_v1-value", sr.Schema{Type: sr.TypeJSON, Schema: `{"type":"object"}`})
	if err != nil {
		t.Fatal(err)
	}
	lag := lagging(reg)
	newRegistry := func(after, ttl time.Duration) *schemaRegistry {
		r, err := newSchemaRegistry(&config.SchemaRegistry{URL: reg.URL()}, "schemaRegistry", discardLogger(), newMetrics(prometheus.NewRegistry()))
		if err != nil {
			t.Fatal(err)
		}
		r.missingAfter, r.missingTTL = after, ttl
		t.Cleanup(r.close)
		return r
	}

	t.Run("a short not found waits", func(t *testing.T) {
		lag.Store(true)
		r := newRegistry(5*time.Second, time.Hour)
		if _, st := r.lookup(id); st != schemaPending {
			t.Fatalf("first lookup: state %v, want pending", st)
		}
		time.Sleep(500 * time.Millisecond)
		if _, st := r.lookup(id); st != schemaPending {
			t.Fatalf("after 0.5 s of not found: state %v, want pending (records wait, none dropped)", st)
		}
		lag.Store(false)
		if st := lookupUntil(t, r, id); st != schemaReady {
			t.Fatalf("once the replica caught up: state %v, want ready", st)
		}
	})

	t.Run("a settled not found is asked again", func(t *testing.T) {
		lag.Store(true)
		r := newRegistry(0, 500*time.Millisecond)
		if st := lookupUntil(t, r, id); st != schemaMissing {
			t.Fatalf("state %v, want missing", st)
		}
		lag.Store(false)
		if _, st := r.lookup(id); st != schemaMissing {
			t.Fatalf("within the TTL: state %v, want missing still", st)
		}
		time.Sleep(600 * time.Millisecond)
		if st := lookupUntil(t, r, id); st != schemaReady {
			t.Fatalf("after the TTL: state %v, want ready: the id is asked again", st)
		}
	})
}
