package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// child returns the pid of the role child of the instance's `ingestor run`.
func (in *instance) child(t *testing.T, role string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, c := range childPIDs(in.proc("run").cmd.Process.Pid) {
			if roleOf(c) == role {
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s child within 30 s", in.name, role)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freeze stops a process with SIGSTOP for d, then continues it with
// SIGCONT: to the Kafka group, a long garbage-collection pause or a
// throttled container looks the same.
func freeze(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %d: %v", pid, err)
	}
	time.Sleep(d)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT %d: %v", pid, err)
	}
}

// frozenFor is longer than the consumer's session timeout (6 s): the
// group expels the frozen member.
const frozenFor = 9 * time.Second

// freezeUntil freezes the consumer child of `ingestor run` again and again
// until done reports true, at most four times; the consumer must have
// records in open segments when it wakes up, for its next commit to meet
// the lost generation (its heartbeat may find out first, and then nothing
// needs mending). It reports how many freezes it took.
func (in *instance) freezeUntil(t *testing.T, done func() bool) int {
	t.Helper()
	for n := 1; n <= 4; n++ {
		time.Sleep(time.Second)
		freeze(t, in.child(t, "consumer"), frozenFor)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if done() {
				return n
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Fatal("four freezes of the consumer and the lost generation was never met")
	return 0
}

// TestFrozenConsumerRejoinsInPlace freezes the consumer child of `ingestor
// run` (SIGSTOP, then SIGCONT after longer than its session timeout) while
// events arrive. Its offset commit then fails with ILLEGAL_GENERATION; the
// consumer handles its partitions as recovery would and rejoins the group
// in the same process: the supervisor restarts nothing, and every event
// lands in the table exactly once.
func TestFrozenConsumerRejoinsInPlace(t *testing.T) {
	const topic = "frozen"
	w := newWorld(t, worldOptions{topics: []string{topic}, partitions: 4})
	d := datasetOf(topic)
	in := w.newInstance("frozen", instanceOptions{datasets: []dataset{d}})
	defer in.dumpLogs()
	ctx := context.Background()
	at := func(seq int64) time.Time { return baseTime.Add(time.Duration(seq) * 20 * time.Second) }
	const before, during = 2000, 6000
	if err := w.produce(ctx, topic, 0, before, 0, at); err != nil {
		t.Fatal(err)
	}
	in.start("run")
	in.waitReady(t, 60*time.Second)
	pid := in.child(t, "consumer")
	// Events arrive over 40 s, before, while and after it is frozen.
	produced := make(chan error, 1)
	go func() { produced <- w.produce(ctx, topic, before, during, during/40, at) }()
	lost := func() bool { return strings.Contains(in.log("run"), "consumer group generation lost") }
	freezes := in.freezeUntil(t, lost)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	w.waitRows(t, map[string]int64{d.table: before + during}, 120*time.Second)
	if got := in.child(t, "consumer"); got != pid {
		t.Errorf("the consumer runs as pid %d, was %d: it was restarted instead of rejoining", got, pid)
	}
	in.stop(t, 90*time.Second)
	log := in.log("run")
	if strings.Contains(log, `"msg":"role exited","child":"consumer"`) {
		t.Error("the supervisor saw the consumer exit")
	}
	missing, dup, unexpected, rows := w.exactlyOnce(t, d.table, 0, before+during)
	if missing+dup+unexpected > 0 {
		t.Errorf("%s after a frozen consumer: %d rows, %d events missing, %d duplicated, %d unexpected", d.table, rows, missing, dup, unexpected)
	}
	if left := walLeft(t, in.walDir); len(left) > 0 {
		t.Errorf("WAL not empty after the orderly stop: %v", left)
	}
	t.Logf("consumer frozen %d time(s) for %s: lost its generation, rejoined in pid %d; %d events exactly once", freezes, frozenFor, pid, rows)
}
