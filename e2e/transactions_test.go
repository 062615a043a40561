package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icewal/ingestor/internal/devenv"
)

// TestTransactionsReachTheTableOnlyCommitted writes a topic the way
// Kafka Streams, Flink or Debezium do, in transactions, mixed with plain
// records: committed transactions, aborted ones (one of them the last
// records of the topic) and one whose producer died inside it, which the
// broker aborts at its timeout. The table holds exactly the plain and
// committed events, and the committed offsets reach the end of every
// partition, past the markers that end the transactions.
func TestTransactionsReachTheTableOnlyCommitted(t *testing.T) {
	w := newWorld(t, worldOptions{topics: []string{"txn"}, partitions: 3})
	in := w.newInstance("a", instanceOptions{datasets: []dataset{datasetOf("txn")}})
	defer in.dumpLogs()
	in.start("run")
	ctx := context.Background()

	txnClient := func(id string, timeout time.Duration) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(w.broker), kgo.DefaultProduceTopic("txn"),
			kgo.TransactionalID(id), kgo.TransactionTimeout(timeout))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	// inTxn produces events first..last-1 in one transaction, ended as
	// end says, or left open when end is nil.
	inTxn := func(cl *kgo.Client, first, last int64, end *kgo.TransactionEndTry) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for seq := first; seq < last; seq++ {
			payload, _ := json.Marshal(devenv.NewEvent(seq, eventTime(seq)))
			cl.Produce(ctx, &kgo.Record{Value: payload}, nil)
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
	commit, abort := kgo.TryCommit, kgo.TryAbort
	plain := func(first, count int64) {
		t.Helper()
		if err := w.produce(ctx, "txn", first, count, 0, eventTime); err != nil {
			t.Fatal(err)
		}
	}

	// Events 0-499 are to reach the table; those numbered 10,000 and up
	// are not.
	streams := txnClient("streams-app", time.Minute)
	plain(0, 100)
	inTxn(streams, 100, 300, &commit)
	inTxn(streams, 10_000, 10_100, &abort)
	plain(300, 100)
	dead := txnClient("killed-app", 2*time.Second)
	inTxn(dead, 20_000, 20_050, nil)
	dead.Close() // killed inside its transaction
	inTxn(streams, 400, 500, &commit)
	inTxn(streams, 30_000, 30_010, &abort)

	w.waitRows(t, map[string]int64{"crash.txn": 500}, 3*time.Minute)
	adm := kadm.NewClient(streams)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ends, err := adm.ListEndOffsets(ctx, "txn")
		if err != nil {
			t.Fatal(err)
		}
		offs, err := adm.FetchOffsets(ctx, "ingestor-txn")
		if err != nil {
			t.Fatal(err)
		}
		short := 0
		ends.Each(func(e kadm.ListedOffset) {
			if o, ok := offs.Lookup("txn", e.Partition); !ok || o.At != e.Offset {
				short++
			}
		})
		if short == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offsets %v do not reach the end offsets %v", offs, ends)
		}
		time.Sleep(200 * time.Millisecond)
	}
	in.stop(t, 60*time.Second)
	missing, dup, unexpected, rows := w.exactlyOnce(t, "crash.txn", 0, 500)
	if missing > 0 || dup > 0 || unexpected > 0 || rows != 500 {
		t.Fatalf("table holds %d rows: %d events lost, %d duplicated, %d from aborted transactions or unexpected", rows, missing, dup, unexpected)
	}
}
