package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icewal/ingestor/shared/failpoint"
)

// upsertDataset is an upsert dataset on topic: orders keyed by order_id,
// a delete marked by op "d" or sent as a tombstone, the table bucketed by
// its key.
func upsertDataset(topic string) dataset {
	return dataset{topic: topic, table: "shop." + topic, yaml: fmt.Sprintf(`  - name: %[1]s
    topic: %[1]s
    table: shop.%[1]s
    consumerGroup: ingestor-%[1]s
    upsert:
      keyColumns: [order_id]
      deleteWhen: {path: op, equals: [d, delete]}
    create:
      columns:
        - {name: order_id, type: long, required: true}
        - {name: version, type: long, required: true}
        - {name: status, type: string, required: true}
        - {name: op, type: string}
      partition:
        - {column: order_id, transform: "bucket[4]"}
`, topic)}
}

// orderStream produces an order stream and keeps its last-write-wins
// state: per key, the version of its last record, or no entry after a
// delete.
type orderStream struct {
	rng     *rand.Rand
	seq     int64
	nextKey int64
	live    map[int64]int64
	deletes int
	updates int
}

// records returns n more records: a new key or, half the time, one seen
// before; a tenth of those are deletes, half of them tombstones.
func (s *orderStream) records(n int) []*kgo.Record {
	var out []*kgo.Record
	for range n {
		s.seq++
		key, seen := s.nextKey, false
		if s.nextKey > 0 && s.rng.IntN(2) == 0 {
			key, seen = s.rng.Int64N(s.nextKey), true
		} else {
			s.nextKey++
		}
		r := &kgo.Record{Key: []byte(strconv.FormatInt(key, 10))}
		switch {
		case seen && s.rng.IntN(10) == 0:
			s.deletes++
			delete(s.live, key)
			if s.rng.IntN(2) == 0 {
				r.Value = nil // a tombstone
			} else {
				r.Value, _ = json.Marshal(map[string]any{"order_id": key, "op": "d"})
			}
		default:
			if _, ok := s.live[key]; ok {
				s.updates++
			}
			s.live[key] = s.seq
			r.Value, _ = json.Marshal(map[string]any{"order_id": key, "version": s.seq, "status": "s" + strconv.FormatInt(s.seq, 10), "op": "u"})
		}
		out = append(out, r)
	}
	return out
}

// tableState reads the table with its deletes applied: version by key,
// and the keys read more than once.
func (w *world) tableState(ctx context.Context, name string) (map[int64]int64, []int64, error) {
	tbl, closeCat, err := w.openTable(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	defer closeCat()
	at, err := tbl.Scan(table.WithSelectedFields("order_id", "version", "status")).ToArrowTable(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer at.Release()
	got := map[int64]int64{}
	var twice []int64
	for i, chunk := range at.Column(0).Data().Chunks() {
		ids := chunk.(*array.Int64)
		vers := at.Column(1).Data().Chunk(i).(*array.Int64)
		st := at.Column(2).Data().Chunk(i).(*array.String)
		for j := 0; j < ids.Len(); j++ {
			if _, ok := got[ids.Value(j)]; ok {
				twice = append(twice, ids.Value(j))
			}
			got[ids.Value(j)] = vers.Value(j)
			if st.Value(j) != "s"+strconv.FormatInt(vers.Value(j), 10) {
				return nil, nil, fmt.Errorf("order %d: version %d with status %q", ids.Value(j), vers.Value(j), st.Value(j))
			}
		}
	}
	return got, twice, nil
}

// diffState describes how got differs from want, "" when equal.
func diffState(want, got map[int64]int64, twice []int64) string {
	var missing, extra, stale []int64
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case g != v:
			stale = append(stale, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra)+len(stale)+len(twice) == 0 {
		return ""
	}
	slices.Sort(missing)
	slices.Sort(extra)
	slices.Sort(stale)
	first := func(s []int64) []int64 { return s[:min(len(s), 8)] }
	return fmt.Sprintf("%d keys missing %v, %d deleted or never written keys present %v, %d keys at an older version %v, %d keys read twice %v",
		len(missing), first(missing), len(extra), first(extra), len(stale), first(stale), len(twice), first(twice))
}

// TestUpserts runs an upsert dataset through `ingestor run` and checks,
// after each phase, that the table read with its deletes applied (by
// iceberg-go's scan) is the last-write-wins state of what was produced:
// each live key once, at the version of its last record, and no deleted
// key. The first phase is produced before the start, so that the first
// appends hold many segments with keys in several of them; the second
// updates and deletes keys that earlier snapshots hold. It runs plain and
// with the committer killed once right after writing a batch's delete
// files (the commit not made) and once right after the row delta's commit
// (no local file deleted): the table is the same.
func TestUpserts(t *testing.T) {
	cases := []struct{ name, point string }{
		{"plain", ""},
		{"crash after delete files", failpoint.CommitterAfterDeleteFiles},
		{"crash after the commit", failpoint.CommitterAfterAppend},
	}
	var topics []string
	for i := range cases {
		topics = append(topics, fmt.Sprintf("orders%d", i))
	}
	w := newWorld(t, worldOptions{topics: topics, partitions: 3})
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ds := upsertDataset(topics[i])
			o := instanceOptions{datasets: []dataset{ds}, maxFileSizeBytes: 16 << 10}
			marker := filepath.Join(w.dir, "fired-upsert-"+tc.name)
			if tc.point != "" {
				o.env = []string{failpoint.EnvVar + "=" + tc.point + "=1@" + marker}
			}
			in := w.newInstanceFor(t, "upsert"+strconv.Itoa(i), o)
			defer in.dumpLogs()
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(w.broker), kgo.DefaultProduceTopic(ds.topic)}, w.genOpts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			s := &orderStream{rng: rand.New(rand.NewPCG(uint64(i), 7)), live: map[int64]int64{}}
			produce := func(n int) {
				if err := cl.ProduceSync(ctx, s.records(n)...).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			wait := func(phase string) {
				t.Helper()
				w.waitState(t, ds.table, s.live, 120*time.Second)
				t.Logf("%s: %d live keys after %d records (%d updates, %d deletes)", phase, len(s.live), s.seq, s.updates, s.deletes)
			}
			produce(3000)
			in.start("run")
			wait("first phase")
			produce(3000)
			wait("second phase")
			if tc.point != "" {
				if _, err := os.Stat(marker); err != nil {
					t.Fatalf("failpoint %s did not fire: %v", tc.point, err)
				}
			}
			if got := in.scrape("consumer").Sum("ingestor_consumer_deletes_total"); tc.point == "" && got != float64(s.deletes) {
				t.Errorf("ingestor_consumer_deletes_total = %g, want the %d deletes produced", got, s.deletes)
			}
			in.stop(t, 60*time.Second)
		})
	}
}

// produceOrders produces n records of the stream s at rate records a
// second, in batches.
func (w *world) produceOrders(ctx context.Context, topic string, s *orderStream, n int64, rate int) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(w.broker), kgo.DefaultProduceTopic(topic)}, w.genOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	const batch = 500
	every := time.Duration(float64(time.Second) * batch / float64(max(rate, 1)))
	next := time.Now()
	for sent := int64(0); sent < n; sent += batch {
		if err := cl.ProduceSync(ctx, s.records(int(min(batch, n-sent)))...).FirstErr(); err != nil {
			return err
		}
		next = next.Add(every)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(next)):
		}
	}
	return nil
}

// waitState waits until the table read with its deletes applied is want,
// the last-write-wins state.
func (w *world) waitState(t *testing.T, name string, want map[int64]int64, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got, twice, err := w.tableState(context.Background(), name)
		diff := ""
		if err != nil {
			diff = err.Error()
		} else {
			diff = diffState(want, got, twice)
		}
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s the table is not the last-write-wins state: %s", limit, diff)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestUpsertsAcrossARebalance moves an upsert dataset's partitions from
// one pod to another while the first still holds segments its committer
// has not appended (the committer is down): the second pod's segments of
// the same keys wait until the first pod's are in the table, so the table
// is the last-write-wins state and nothing is counted out of order.
func TestUpsertsAcrossARebalance(t *testing.T) {
	const topic = "ordersmove"
	w := newWorld(t, worldOptions{topics: []string{topic}, partitions: 2})
	ds := upsertDataset(topic)
	o := instanceOptions{datasets: []dataset{ds}, maxFileSizeBytes: 16 << 10}
	a, b := w.newInstance("movea", o), w.newInstance("moveb", o)
	defer a.dumpLogs()
	defer b.dumpLogs()
	ctx := context.Background()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(w.broker), kgo.DefaultProduceTopic(topic)}, w.genOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	s := &orderStream{rng: rand.New(rand.NewPCG(11, 7)), live: map[int64]int64{}}
	produce := func(n int) {
		if err := cl.ProduceSync(ctx, s.records(n)...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	until := func(what string, limit time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s", what, limit)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// Pod a reads the first half, without its committer.
	produce(3000)
	a.start("consumer")
	a.start("uploader")
	until("pod a consumes the first half", 60*time.Second, func() bool {
		return a.peek("consumer").Sum("ingestor_consumer_records_total") >= 3000
	})
	// Its consumer drains (rotates, commits its offsets) and leaves.
	ac := a.proc("consumer")
	ac.signal(syscall.SIGTERM)
	ac.wait(t, 60*time.Second)
	until("pod a uploads its segments", 60*time.Second, func() bool {
		_, uploaded, ready := walHolds(t, a.walDir)
		return ready > 0 && ready == uploaded
	})

	// Pod b takes the partitions and the second half, which updates and
	// deletes keys of the first.
	b.start("run")
	produce(3000)
	until("pod b's segments wait for pod a's", 90*time.Second, func() bool {
		return b.peek("committer").Sum("ingestor_committer_upsert_segments_waiting") > 0
	})
	if n := w.tableRows(ctx, ds.table); n > 0 {
		t.Fatalf("the table holds %d rows while pod a's earlier segments are not appended", n)
	}
	a.start("committer")
	w.waitState(t, ds.table, s.live, 120*time.Second)
	t.Logf("%d live keys after %d records (%d updates, %d deletes)", len(s.live), s.seq, s.updates, s.deletes)
	if n := a.scrape("committer").Sum("ingestor_committer_upsert_out_of_order_total"); n != 0 {
		t.Errorf("pod a's appends counted %g times out of order", n)
	}
	a.stop(t, 60*time.Second)
	b.stop(t, 60*time.Second)
}
