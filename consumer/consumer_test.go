package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	itest "github.com/icewal/ingestor/internal/testutil"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/pause"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/walfile"
)

// runEnv runs a whole Consumer against a kfake broker and a SQLite catalog.
type runEnv struct {
	cfg     *config.Config
	cluster *kfake.Cluster
	reg     *prometheus.Registry
	c       *Consumer
	cancel  context.CancelFunc
	done    chan error
}

func startConsumer(t *testing.T, setup func(*Consumer)) *runEnv {
	return startConsumerWith(t, "", setup)
}

// clicksDataset is the dataset of the consumer tests but its name and
// topic: a table of three columns mapped from nested JSON.
const clicksDataset = `    table: web.clicks
    customMapping: {event_id: id, tenant: meta.tenant, ts: meta.ts}
    create:
      columns:
        - {name: event_id, type: string, required: true}
        - {name: tenant, type: string}
        - {name: ts, type: timestamptz, required: true}
      partition: [{column: tenant, transform: identity}]
`

// startConsumerWith adds extra YAML lines to the dataset's config (indented
// like its keys) and seeds a dead-letter topic "clicks_dlq".
func startConsumerWith(t *testing.T, extra string, setup func(*Consumer)) *runEnv {
	t.Helper()
	return startConsumerOf(t, clicksDataset+extra, setup)
}

// startConsumerOf runs a consumer whose one dataset, clicks on topic
// clicks_v1, has the YAML lines of block (indented like its keys).
func startConsumerOf(t *testing.T, block string, setup func(*Consumer)) *runEnv {
	t.Helper()
	const topic = "clicks_v1"
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topic), kfake.SeedTopics(1, "clicks_dlq"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	dir := t.TempDir()
	doc := fmt.Sprintf(`
ingestion:
  wal: {dir: %q, maxFileAgeMinutes: 0.01}
  drainTimeoutSeconds: 20
  maxRecordBytes: 2000
  maxJSONDepth: 8
kafka: {brokers: [%q]}
catalog: {name: t, type: sql, uri: "file:%s", sql.driver: sqlite, sql.dialect: sqlite, warehouse: "file://%s"}
datasets:
  - name: clicks
    topic: %s
%s`, filepath.Join(dir, "wal"), cluster.ListenAddrs()[0], filepath.Join(dir, "cat.db"), filepath.Join(dir, "wh"), topic, block)
	cfg, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	c, err := New(cfg, role.Options{Registerer: reg, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &runEnv{cfg: cfg, cluster: cluster, reg: reg, c: c, cancel: cancel, done: make(chan error, 1)}
	go func() { e.done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-e.done:
		case <-time.After(30 * time.Second):
			t.Error("consumer did not stop")
		}
	})
	return e
}

func (e *runEnv) produce(t *testing.T, from, n int) {
	t.Helper()
	var payloads [][]byte
	for i := from; i < from+n; i++ {
		payloads = append(payloads, event(i, []string{"a", "b", "c"}[i%3]))
	}
	e.producePayloads(t, payloads...)
}

func (e *runEnv) producePayloads(t *testing.T, payloads ...[]byte) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.cluster.ListenAddrs()...), kgo.DefaultProduceTopic("clicks_v1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, p := range payloads {
		cl.Produce(context.Background(), &kgo.Record{Value: p}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (e *runEnv) consumed() float64 {
	return testutil.ToFloat64(e.c.m.records.WithLabelValues("clicks"))
}

func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// committed reads the group's committed offsets through the Kafka protocol.
func (e *runEnv) committed(t *testing.T) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(context.Background(), "ingestor-clicks")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offs.Each(func(o kadm.OffsetResponse) { total += o.At })
	return total
}

func TestConsumerWritesReadyFilesAndCommitsOffsets(t *testing.T) {
	e := startConsumer(t, nil)
	e.produce(t, 0, 300)
	waitFor(t, "300 records consumed", 20*time.Second, func() bool { return e.consumed() == 300 })
	// Age rotation (0.6 s here) makes every segment ready and commits the
	// offsets of both partitions: 300 records in all.
	waitFor(t, "offsets committed", 20*time.Second, func() bool { return e.committed(t) == 300 })
	// Each commit carries the ledger naming this WAL directory.
	id, err := walfile.WALID(e.cfg.Ingestion.WAL.Dir)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	offs, err := kadm.NewClient(cl).FetchOffsets(context.Background(), "ingestor-clicks")
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if got := walfile.CommittedFor(id, o.At, o.Metadata); got != o.At {
			t.Errorf("partition %d: committed %d with metadata %q, covering %d for this directory", o.Partition, o.At, o.Metadata, got)
		}
	})
	var rows int64
	for _, f := range readyFiles(t, e.cfg.Ingestion.WAL.Dir) {
		checkSegmentFile(t, f)
		r, err := file.OpenParquetFile(f.Path, false)
		if err != nil {
			t.Fatal(err)
		}
		rows += r.NumRows()
		r.Close()
	}
	if rows != 300 {
		t.Fatalf("ready files hold %d rows, want the 300 produced", rows)
	}
}

func TestConsumerPausesAboveHighWatermark(t *testing.T) {
	var mu sync.Mutex
	used := 10.0
	e := startConsumer(t, func(c *Consumer) {
		c.volumeEvery = 20 * time.Millisecond
		c.measure = func(string) (float64, error) {
			mu.Lock()
			defer mu.Unlock()
			return used, nil
		}
	})
	setUsed := func(v float64) {
		mu.Lock()
		used = v
		mu.Unlock()
	}
	paused := func() float64 { return testutil.ToFloat64(e.c.m.paused.WithLabelValues("clicks", PauseDisk)) }
	operatorPaused := func() float64 { return testutil.ToFloat64(e.c.m.paused.WithLabelValues("clicks", PauseOperator)) }

	e.produce(t, 0, 100)
	waitFor(t, "first records consumed", 20*time.Second, func() bool { return e.consumed() == 100 })

	setUsed(80) // at the watermark (the default, 80 %): pause
	waitFor(t, "paused", 5*time.Second, func() bool { return paused() == 1 })
	time.Sleep(700 * time.Millisecond) // a fetch in flight may still land
	before := e.consumed()
	e.produce(t, 100, 100)
	time.Sleep(2 * time.Second)
	if got := e.consumed(); got != before {
		t.Fatalf("consumed %v records while paused (had %v)", got-before, before)
	}

	setUsed(76) // under the watermark but not 5 points under: stay paused
	time.Sleep(300 * time.Millisecond)
	if paused() != 1 {
		t.Fatal("resumed less than 5 points under the watermark")
	}
	setUsed(74.9)
	waitFor(t, "resumed", 5*time.Second, func() bool { return paused() == 0 })
	waitFor(t, "records held in Kafka consumed after resume", 20*time.Second, func() bool { return e.consumed() == 200 })
	if v := testutil.ToFloat64(e.c.m.volumeUsed); v < 0.74 || v > 0.75 {
		t.Fatalf("wal volume gauge = %v, want 0.749", v)
	}

	// An operator's pause holds with room on the volume, and through a
	// disk pause that starts and ends while it holds.
	if err := e.c.Pause(context.Background(), "clicks", pause.Entry{By: "test"}); err != nil {
		t.Fatal(err)
	}
	if paused() != 0 || operatorPaused() != 1 {
		t.Fatalf("after Pause: disk %v operator %v, want 0 and 1", paused(), operatorPaused())
	}
	setUsed(90)
	waitFor(t, "disk pause under the operator's", 5*time.Second, func() bool { return paused() == 1 })
	setUsed(10)
	waitFor(t, "disk pause lifted", 5*time.Second, func() bool { return paused() == 0 })
	time.Sleep(700 * time.Millisecond)
	e.produce(t, 200, 50)
	time.Sleep(2 * time.Second)
	if got := e.consumed(); got != 200 {
		t.Fatalf("the end of a disk pause lifted the operator's: consumed %v records, want 200", got)
	}
	if err := e.c.Resume(context.Background(), "clicks"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "records consumed after the operator's resume", 20*time.Second, func() bool { return e.consumed() == 250 })
}

func TestReleaseTimeout(t *testing.T) {
	for _, tc := range []struct{ drain, want time.Duration }{
		{96 * time.Second, 10 * time.Second},
		{20 * time.Second, 5 * time.Second},
		{2 * time.Second, 500 * time.Millisecond},
	} {
		if got := releaseTimeout(tc.drain); got != tc.want {
			t.Errorf("releaseTimeout(%s) = %s, want %s", tc.drain, got, tc.want)
		}
	}
}

func TestConsumerDropsHostileRecordsToDeadLetterTopic(t *testing.T) {
	e := startConsumerWith(t, "    deadLetterTopic: clicks_dlq\n", nil)
	deep := []byte(`{"id":"d","meta":{"tenant":"a","ts":"2026-11-30T10:00:00Z"},"x":` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}`)
	huge := []byte(`{"id":"h","meta":{"tenant":"a","ts":"2026-11-30T10:00:00Z"},"pad":"` + strings.Repeat("x", 3000) + `"}`)
	bad := map[string][]byte{
		decode.ReasonNotJSON:         []byte(`{"id":`),
		decode.ReasonTooLarge:        huge,
		decode.ReasonTooDeep:         deep,
		decode.ReasonConvert:         []byte(`{"id":"c","meta":{"tenant":"a","ts":"not a time"}}`),
		decode.ReasonMissingRequired: []byte(`{"meta":{"tenant":"a","ts":"2026-11-30T10:00:00Z"}}`),
	}
	var payloads [][]byte
	for i := 0; i < 10; i++ {
		payloads = append(payloads, event(i, "a"))
	}
	for _, p := range bad {
		payloads = append(payloads, p)
	}
	// Invalid UTF-8 and duplicate keys are converted by documented rules,
	// not dropped.
	payloads = append(payloads, []byte("{\"id\":\"u\xff\",\"id\":\"dup\",\"meta\":{\"tenant\":\"a\",\"ts\":\"2026-11-30T10:00:00Z\"}}"))
	// Each record carries a key, headers (one name twice, one without a
	// value) and a timestamp of its own, which its dead letter keeps.
	pcl, err := kgo.NewClient(kgo.SeedBrokers(e.cluster.ListenAddrs()...), kgo.DefaultProduceTopic("clicks_v1"))
	if err != nil {
		t.Fatal(err)
	}
	stamp := func(i int) time.Time { return time.UnixMilli(1_600_000_000_000 + int64(i)*1000) }
	for i, p := range payloads {
		pcl.Produce(context.Background(), &kgo.Record{
			Key: []byte(fmt.Sprintf("key-%d", i)), Value: p, Timestamp: stamp(i),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte(fmt.Sprint(i))}, {Key: "hop", Value: []byte("1")}, {Key: "hop", Value: []byte("2")}, {Key: "empty"}},
		}, nil)
	}
	if err := pcl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	pcl.Close()
	total := float64(len(payloads))
	waitFor(t, "all records consumed", 20*time.Second, func() bool { return e.consumed() == total })
	waitFor(t, "offsets committed past every record", 20*time.Second, func() bool { return e.committed(t) == int64(total) })
	for reason := range bad {
		if got := testutil.ToFloat64(e.c.m.dropped.WithLabelValues("clicks", reason)); got != 1 {
			t.Errorf("dropped{reason=%s} = %v, want 1", reason, got)
		}
	}

	// The dead-letter topic holds each dropped record as it was, with its
	// reason and origin.
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.cluster.ListenAddrs()...), kgo.ConsumeTopics("clicks_dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string][]byte{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(got) < len(bad) && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			h := map[string]string{}
			var names []string
			for _, kv := range r.Headers {
				h[kv.Key] = string(kv.Value)
				names = append(names, kv.Key)
			}
			if h["ingestor.topic"] != "clicks_v1" || h["ingestor.offset"] == "" || h["ingestor.partition"] == "" || h["ingestor.error"] == "" {
				t.Errorf("dead letter headers %v", h)
			}
			// The original headers first, in order, then the ingestor's.
			wantNames := []string{"trace", "hop", "hop", "empty", "ingestor.reason", "ingestor.error", "ingestor.topic", "ingestor.partition", "ingestor.offset"}
			if !slices.Equal(names, wantNames) || string(r.Headers[1].Value) != "1" || string(r.Headers[2].Value) != "2" || len(r.Headers[3].Value) != 0 {
				t.Errorf("dead letter headers %v, want the original ones in order, then the ingestor's: %v", r.Headers, wantNames)
			}
			i, _ := strconv.Atoi(h["trace"])
			if string(r.Key) != fmt.Sprintf("key-%d", i) || !r.Timestamp.Equal(stamp(i)) {
				t.Errorf("dead letter of record %d: key %q, timestamp %s; want key-%d and %s", i, r.Key, r.Timestamp, i, stamp(i))
			}
			got[h["ingestor.reason"]] = r.Value
		})
	}
	for reason, payload := range bad {
		if string(got[reason]) != string(payload) {
			t.Errorf("dead letter for %s: got %q, want the original payload", reason, truncate(string(got[reason]), 60))
		}
	}
}

func TestConsumerWarnsWhenItGetsNoPartition(t *testing.T) {
	var logs itest.SyncBuffer
	e := startConsumerWith(t, "", func(c *Consumer) {
		c.idleWarnAfter = 500 * time.Millisecond
		c.log = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	// A second group member on a topic of two partitions is fine; the
	// broker going away leaves the consumer without partitions.
	waitFor(t, "partitions assigned", 20*time.Second, func() bool {
		return testutil.ToFloat64(e.c.m.assigned.WithLabelValues("clicks")) == 2
	})
	if strings.Contains(logs.String(), "no partitions assigned yet") {
		t.Fatal("warned while owning partitions")
	}
	e.cluster.Close()
	waitFor(t, "the warning", 60*time.Second, func() bool {
		return strings.Contains(logs.String(), "no partitions assigned yet")
	})
}

func TestAgeCheckInterval(t *testing.T) {
	for _, tc := range []struct{ age, want time.Duration }{
		{5 * time.Minute, 30 * time.Second},
		{30 * time.Second, 3 * time.Second},
		{3 * time.Second, 300 * time.Millisecond},
		{100 * time.Millisecond, 100 * time.Millisecond},
	} {
		if got := ageCheckInterval(tc.age); got != tc.want {
			t.Errorf("ageCheckInterval(%s) = %s, want %s", tc.age, got, tc.want)
		}
	}
}
