package consumer

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// idsInFiles returns the event_id of every row of the ready files in dir.
func idsInFiles(t *testing.T, dir string) []string {
	t.Helper()
	var ids []string
	for _, f := range readyFiles(t, dir) {
		r, err := file.OpenParquetFile(f.Path, false)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		col := tbl.Column(tbl.Schema().FieldIndices("event_id")[0])
		for _, c := range col.Data().Chunks() {
			s := c.(*array.String)
			for i := 0; i < s.Len(); i++ {
				ids = append(ids, s.Value(i))
			}
		}
		tbl.Release()
		r.Close()
	}
	slices.Sort(ids)
	return ids
}

// txnProducer is a transactional producer of the test topic.
func (e *runEnv) txnProducer(t *testing.T, id string, timeout time.Duration) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.cluster.ListenAddrs()...), kgo.DefaultProduceTopic("clicks_v1"),
		kgo.TransactionalID(id), kgo.TransactionTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// inTxn produces the events numbered from..to-1 in one transaction, which
// ends as end says; a nil end leaves it open.
func inTxn(t *testing.T, cl *kgo.Client, from, to int, end *kgo.TransactionEndTry) {
	t.Helper()
	ctx := context.Background()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := from; i < to; i++ {
		cl.Produce(ctx, &kgo.Record{Value: event(i, []string{"a", "b"}[i%2])}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce in transaction: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if end != nil {
		if err := cl.EndTransaction(ctx, *end); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConsumerReadsOnlyCommittedTransactions mixes plain records with
// committed and aborted transactions and with a transaction whose
// producer died inside it (the broker aborts it when its timeout runs
// out): the WAL holds exactly the plain and committed records, the
// committed offsets reach the end of every partition, past the markers
// that end the transactions, and no lag is left.
func TestConsumerReadsOnlyCommittedTransactions(t *testing.T) {
	e := startConsumer(t, nil)
	commit, abort := kgo.TryCommit, kgo.TryAbort
	var want []string
	expect := func(from, to int) {
		for i := from; i < to; i++ {
			want = append(want, fmt.Sprintf("e%d", i))
		}
	}

	e.produce(t, 0, 10)
	expect(0, 10)
	p := e.txnProducer(t, "orders", time.Minute)
	inTxn(t, p, 10, 30, &commit)
	expect(10, 30)
	inTxn(t, p, 1000, 1020, &abort)
	e.produce(t, 30, 10)
	expect(30, 40)
	// A producer killed inside a transaction: it never ends it.
	dead := e.txnProducer(t, "payments", 2*time.Second)
	inTxn(t, dead, 2000, 2020, nil)
	dead.Close()
	inTxn(t, p, 40, 60, &commit)
	expect(40, 60)
	e.produce(t, 60, 5)
	expect(60, 65)
	inTxn(t, p, 3000, 3010, &abort) // the last records of the topic are aborted
	slices.Sort(want)

	cl, err := kgo.NewClient(kgo.SeedBrokers(e.cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// The end moves until the broker has written the marker aborting
	// the dead producer's transaction, after its timeout.
	end := func() int64 {
		ends, err := adm.ListEndOffsets(context.Background(), "clicks_v1")
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}
	// The records after the dead producer's are read once the broker
	// aborted its transaction.
	waitFor(t, "the plain and committed records consumed", 30*time.Second, func() bool { return e.consumed() >= float64(len(want)) })
	deadline := time.Now().Add(30 * time.Second)
	for e.committed(t) != end() {
		if time.Now().After(deadline) {
			t.Fatalf("committed offsets add up to %d, want the end of the topic, %d; WAL holds %v", e.committed(t), end(), idsInFiles(t, e.cfg.Ingestion.WAL.Dir))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := idsInFiles(t, e.cfg.Ingestion.WAL.Dir); !slices.Equal(got, want) {
		t.Fatalf("WAL holds %d rows, want the %d plain and committed ones:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	if got := e.consumed(); got != float64(len(want)) {
		t.Errorf("records consumed = %v, want %d (markers are not records)", got, len(want))
	}
	for p := range 2 {
		if lag := testutil.ToFloat64(e.c.m.lag.WithLabelValues("clicks", strconv.Itoa(p))); lag != 0 {
			t.Errorf("lag of partition %d = %v, want 0", p, lag)
		}
	}
}
