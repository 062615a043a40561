package consumer

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	itest "github.com/icewal/ingestor/internal/testutil"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func (e *runEnv) loop(t *testing.T) *loop {
	t.Helper()
	var l *loop
	waitFor(t, "the dataset's loop", 20*time.Second, func() bool {
		e.c.loopsMu.Lock()
		defer e.c.loopsMu.Unlock()
		if len(e.c.loops) > 0 {
			l = e.c.loops[0]
		}
		return l != nil
	})
	return l
}

func (e *runEnv) stalled(reason string) float64 {
	return testutil.ToFloat64(e.c.m.stalled.WithLabelValues("clicks", reason))
}

// TestWatchdogResumesPartitionsLeftPaused leaves the consumer's partitions
// paused in its Kafka client, as a rebalance that kept a pause would:
// records wait and nothing is read. The watchdog reports the stall once,
// resumes the partitions, and the records are read.
func TestWatchdogResumesPartitionsLeftPaused(t *testing.T) {
	var logs itest.SyncBuffer
	e := startConsumer(t, func(c *Consumer) {
		c.stallAfter = time.Second
		c.log = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	e.produce(t, 0, 100)
	waitFor(t, "100 records consumed", 20*time.Second, func() bool { return e.consumed() == 100 })
	l := e.loop(t)
	l.cl.PauseFetchPartitions(map[string][]int32{"clicks_v1": {0, 1}})
	time.Sleep(700 * time.Millisecond) // a fetch in flight may still land
	e.produce(t, 100, 100)
	waitFor(t, "the stall reported", 20*time.Second, func() bool { return e.stalled(StallNoProgress) == 1 })
	waitFor(t, "the waiting records consumed", 20*time.Second, func() bool { return e.consumed() == 200 })
	waitFor(t, "the stall over", 20*time.Second, func() bool { return e.stalled(StallNoProgress) == 0 })
	if err := e.c.Healthy(); err != nil {
		t.Errorf("unhealthy after the stall ended: %v", err)
	}
	if n := strings.Count(logs.String(), `"level":"ERROR","msg":"consumer watchdog:`); n != 1 {
		t.Errorf("%d watchdog error lines, want one for the episode:\n%s", n, logs.String())
	}
	if got := e.c.Status().Datasets["clicks"].Stalled; len(got) != 0 {
		t.Errorf("status shows stalled %v after the stall ended", got)
	}
}

// TestWatchdogStopsWhenTheTopicIsRecreated deletes the topic and creates
// it again under the running consumer, before the watchdog's first look
// (every 5 s with the default stall timeout): the watchdog says so once
// and ends the consumer with an error, so that it is restarted and reads
// the new topic from its start, instead of fetching the old one without
// end.
func TestWatchdogStopsWhenTheTopicIsRecreated(t *testing.T) {
	var logs itest.SyncBuffer
	e := startConsumer(t, func(c *Consumer) {
		c.log = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	e.produce(t, 0, 50)
	waitFor(t, "50 records consumed", 20*time.Second, func() bool { return e.consumed() == 50 })
	waitFor(t, "offsets committed", 20*time.Second, func() bool { return e.committed(t) == 50 })
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.DeleteTopics(ctx, "clicks_v1"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopics(ctx, 2, 1, nil, "clicks_v1"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-e.done:
		e.done <- err // for the cleanup
		if err == nil || !strings.Contains(err.Error(), "recreated") {
			t.Fatalf("consumer ended with %v, want an error saying the topic was recreated", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("consumer still running 30 s after its topic was recreated")
	}
	if e.stalled(StallTopicRecreated) != 1 {
		t.Error("ingestor_consumer_stalled{reason=topic_recreated} is not 1")
	}
	if n := strings.Count(logs.String(), `"reason":"topic_recreated"`); n != 1 {
		t.Errorf("%d lines about the recreated topic, want 1", n)
	}
}

// produceTo writes n events to one partition of the test topic.
func (e *runEnv) produceTo(t *testing.T, partition int32, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.cluster.ListenAddrs()...), kgo.DefaultProduceTopic("clicks_v1"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := from; i < from+n; i++ {
		cl.Produce(context.Background(), &kgo.Record{Partition: partition, Value: event(i, "a")}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestWatchdogCountsAPartitionWhoseOwnerReadsNothing puts a second member
// in the consumer's group that stays in it (its client heartbeats) and
// takes one partition of two, but never reads or commits: a member whose
// process hangs, or one the broker forgot to expel. The group calls the
// partition owned; records wait in it. The watchdog counts it as
// unassigned once its committed offset has not moved for a file's age
// plus the stall timeout, reports the episode, and, as the rejoin it
// forces does not free the partition, ends the consumer with an error.
func TestWatchdogCountsAPartitionWhoseOwnerReadsNothing(t *testing.T) {
	var logs itest.SyncBuffer
	e := startConsumer(t, func(c *Consumer) {
		c.stallAfter = time.Second
		c.unassignedAfter = time.Second
		c.log = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	assigned := func() float64 { return testutil.ToFloat64(e.c.m.assigned.WithLabelValues("clicks")) }
	waitFor(t, "both partitions assigned", 20*time.Second, func() bool { return assigned() == 2 })

	idle, err := kgo.NewClient(kgo.SeedBrokers(e.cluster.ListenAddrs()...),
		kgo.ConsumerGroup("ingestor-clicks"), kgo.ConsumeTopics("clicks_v1"), kgo.DisableAutoCommit(),
		kgo.HeartbeatInterval(500*time.Millisecond), kgo.SessionTimeout(sessionTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	waitFor(t, "one partition moved to the idle member", 30*time.Second, func() bool { return assigned() == 1 })
	e.produceTo(t, 0, 0, 50)
	e.produceTo(t, 1, 50, 50)

	unassigned := func() float64 { return testutil.ToFloat64(e.c.m.unassigned.WithLabelValues("clicks")) }
	waitFor(t, "the idle member's partition counted as unassigned", 20*time.Second, func() bool { return unassigned() == 1 })
	if err := e.c.Healthy(); err != nil {
		t.Errorf("unhealthy before the episode: %v", err)
	}
	waitFor(t, "the episode reported", 10*time.Second, func() bool { return e.stalled(StallUnassigned) == 1 })
	// While it lasts, /healthz fails, for a liveness probe to restart it.
	if err := e.c.Healthy(); err == nil || !strings.Contains(err.Error(), "stalled (unassigned)") {
		t.Errorf("Healthy() = %v during the episode, want an error naming it", err)
	}
	select {
	case err := <-e.done:
		e.done <- err // for the cleanup
		if err == nil || !strings.Contains(err.Error(), StallUnassigned) {
			t.Fatalf("consumer ended with %v, want the watchdog's error about unassigned partitions", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("consumer still running 30 s after the episode began:\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), `"level":"ERROR","msg":"consumer watchdog: partitions of the topic have no owner`); n != 1 {
		t.Errorf("%d error lines about unowned partitions, want one for the episode", n)
	}
}
