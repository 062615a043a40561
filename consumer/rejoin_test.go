package consumer

import (
	"fmt"
	itest "github.com/icewal/ingestor/internal/testutil"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// freezeGroup holds every heartbeat and offset commit the broker receives
// until the returned thaw is called: to the group, the consumer looks
// frozen (a SIGSTOP, a long GC pause, a throttled container), while it
// goes on fetching and writing. Past the session timeout the group
// expels it; the held requests are then answered as the group is by
// then, as they would be for a process that wakes up.
func (e *runEnv) freezeGroup(t *testing.T) (thaw func()) {
	t.Helper()
	var frozen atomic.Bool
	frozen.Store(true)
	wake := make(chan struct{})
	hold := func(kmsg.Request) (kmsg.Response, error, bool) {
		e.cluster.KeepControl()
		if frozen.Load() {
			e.cluster.SleepControl(func() { <-wake })
		}
		return nil, nil, false
	}
	e.cluster.ControlKey(kmsg.Heartbeat.Int16(), hold)
	e.cluster.ControlKey(kmsg.OffsetCommit.Int16(), hold)
	return func() {
		if frozen.Swap(false) {
			close(wake)
		}
	}
}

// TestConsumerRejoinsAfterItsGenerationWentStale freezes the consumer's
// group traffic past its session timeout while records keep arriving, as
// a paused process sees it: its offset commit then fails with
// ILLEGAL_GENERATION. The consumer does not exit: it handles its
// partitions as recovery would (the open segments and the ready files the
// failed commit should have covered are deleted), rejoins the group and
// reads the records again from the committed offsets; the WAL holds every
// record exactly once.
func TestConsumerRejoinsAfterItsGenerationWentStale(t *testing.T) {
	var logs itest.SyncBuffer
	e := startConsumer(t, func(c *Consumer) {
		c.log = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	e.produce(t, 0, 200)
	waitFor(t, "200 records consumed", 20*time.Second, func() bool { return e.consumed() == 200 })
	waitFor(t, "200 records committed", 20*time.Second, func() bool { return e.committed(t) == 200 })

	thaw := e.freezeGroup(t)
	defer thaw()
	e.produce(t, 200, 200)
	waitFor(t, "the records written while frozen", 20*time.Second, func() bool { return e.consumed() == 400 })
	time.Sleep(sessionTimeout + 2*time.Second) // the group expels the silent member
	thaw()

	deadline := time.Now().Add(40 * time.Second)
	for e.committed(t) != 400 {
		select {
		case err := <-e.done:
			e.done <- err
			t.Fatalf("consumer ended with %v after its generation went stale, want it to rejoin", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records committed 40 s after the thaw, want 400:\n%s", e.committed(t), logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var want []string
	for i := range 400 {
		want = append(want, fmt.Sprintf("e%d", i))
	}
	slices.Sort(want)
	if got := idsInFiles(t, e.cfg.Ingestion.WAL.Dir); !slices.Equal(got, want) {
		t.Fatalf("WAL holds %d rows, want the 400 records once each", len(got))
	}
	if !strings.Contains(logs.String(), "consumer group generation lost") {
		t.Errorf("no line says the generation was lost:\n%s", logs.String())
	}
	if n := testutil.ToFloat64(e.c.m.rejoins.WithLabelValues("clicks")); n < 1 {
		t.Errorf("ingestor_consumer_rejoins_total = %v, want at least 1", n)
	}
	t.Logf("recovery lines:\n%s", grepLines(logs.String(), `"msg":"recovery"`, `generation lost`, `partitions lost`, `partitions assigned`))
	if e.consumed() <= 400 {
		t.Errorf("consumed %v records: the ones written while frozen were not read again", e.consumed())
	}
}

// grepLines returns the lines of s holding any of the words.
func grepLines(s string, words ...string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// failCommits answers the next n offset commits the broker receives with
// code for every partition, as a broker whose group refuses them does;
// the group itself is untouched. It returns the number answered so far.
func (e *runEnv) failCommits(n int32, code int16) (answered func() int32) {
	var count atomic.Int32
	e.cluster.ControlKey(kmsg.OffsetCommit.Int16(), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		if count.Load() >= n {
			return nil, nil, false
		}
		e.cluster.KeepControl()
		req := kr.(*kmsg.OffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.SetVersion(req.Version)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		count.Add(1)
		return resp, nil, true
	})
	return count.Load
}

// checkRereadOnce waits until all n records are committed while the
// consumer runs on, and checks the WAL holds each once and that the
// records of the refused commit were read again.
func (e *runEnv) checkRereadOnce(t *testing.T, n int, logs *itest.SyncBuffer) {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for e.committed(t) != int64(n) {
		select {
		case err := <-e.done:
			e.done <- err
			t.Fatalf("consumer ended with %v after a refused offset commit, want it to carry on", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records committed 40 s after the refused commit, want %d:\n%s", e.committed(t), n, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("e%d", i))
	}
	slices.Sort(want)
	if got := idsInFiles(t, e.cfg.Ingestion.WAL.Dir); !slices.Equal(got, want) {
		t.Fatalf("WAL holds %d rows, want the %d records once each", len(got), n)
	}
	if e.consumed() <= float64(n) {
		t.Errorf("consumed %v records: the ones of the refused commit were not read again", e.consumed())
	}
}

// TestConsumerRepositionsAfterALostGeneration refuses one offset commit
// with ILLEGAL_GENERATION while the group itself goes on unchanged: no
// partition is lost or assigned again, so nothing but the consumer's own
// reposition moves the client back to the committed offsets. Without it
// the client fetches on past the records of the files dropGeneration
// deleted, and those records are never read again.
func TestConsumerRepositionsAfterALostGeneration(t *testing.T) {
	var logs itest.SyncBuffer
	e := startConsumer(t, func(c *Consumer) {
		c.log = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	e.produce(t, 0, 200)
	waitFor(t, "200 records consumed", 20*time.Second, func() bool { return e.consumed() == 200 })
	waitFor(t, "200 records committed", 20*time.Second, func() bool { return e.committed(t) == 200 })
	answered := e.failCommits(1, kerr.IllegalGeneration.Code)
	e.produce(t, 200, 200)
	waitFor(t, "the refused commit", 20*time.Second, func() bool { return answered() == 1 })
	e.checkRereadOnce(t, 400, &logs)
	if n := testutil.ToFloat64(e.c.m.rejoins.WithLabelValues("clicks")); n != 1 {
		t.Errorf("ingestor_consumer_generations_lost_total = %v, want 1", n)
	}
}

// TestConsumerCarriesOnAfterACommitRefusedForARebalance refuses offset
// commits with REBALANCE_IN_PROGRESS more often than the commit retries
// them. The consumer does not exit: it handles the files the commits
// would have covered as after a lost generation, reads their records
// again from the committed offsets, and commits once the group takes
// commits again; each record is in the WAL once, and the refusals are
// logged and counted.
func TestConsumerCarriesOnAfterACommitRefusedForARebalance(t *testing.T) {
	var logs itest.SyncBuffer
	e := startConsumer(t, func(c *Consumer) {
		c.log = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	e.produce(t, 0, 200)
	waitFor(t, "200 records consumed", 20*time.Second, func() bool { return e.consumed() == 200 })
	waitFor(t, "200 records committed", 20*time.Second, func() bool { return e.committed(t) == 200 })
	const refusals = 6
	answered := e.failCommits(refusals, kerr.RebalanceInProgress.Code)
	e.produce(t, 200, 200)
	waitFor(t, "the refused commits", 30*time.Second, func() bool { return answered() == refusals })
	e.checkRereadOnce(t, 400, &logs)
	if !strings.Contains(logs.String(), "offset commit refused while the consumer group rebalances") {
		t.Errorf("no line says the commit was refused for a rebalance:\n%s", logs.String())
	}
	if n := testutil.ToFloat64(e.c.m.commitsRebalancing.WithLabelValues("clicks")); n < 1 {
		t.Errorf("ingestor_consumer_commits_rebalancing_total = %v, want at least 1", n)
	}
}
