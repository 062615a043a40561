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
	if n := strings.Count(logs.String(), `"level":"ERROR","msg":"consumer watchdog:`); n != 1 {
		t.Errorf("%d watchdog error lines, want one for the episode:\n%s", n, logs.String())
	}
	if got := e.c.Status()["datasets"].(map[string]any)["clicks"].(map[string]any)["stalled"]; len(got.([]string)) != 0 {
		t.Errorf("status shows stalled %v after the stall ended", got)
	}
}

// TestWatchdogStopsWhenTheTopicIsRecreated deletes the topic and creates
// it again under the running consumer: the watchdog says so once and ends
// the consumer with an error, so that it is restarted and reads the new
// topic from its start, instead of fetching the old one without end.
func TestWatchdogStopsWhenTheTopicIsRecreated(t *testing.T) {
	var logs itest.SyncBuffer
	e := startConsumer(t, func(c *Consumer) {
		c.stallAfter = time.Second
		c.log = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	e.produce(t, 0, 50)
	waitFor(t, "50 records consumed", 20*time.Second, func() bool { return e.consumed() == 50 })
	waitFor(t, "offsets committed", 20*time.Second, func() bool { return e.committed(t) == 50 })
	time.Sleep(500 * time.Millisecond) // the watchdog has seen the first topic id
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
