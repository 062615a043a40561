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
