package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDrainHandsOffToTheOtherInstance stops one of two instances of a
// consumer group in the middle of a stream: it exits 0 within the drain
// budget, the other instance owns all partitions at once (not after a
// session timeout), and the table has every event exactly once.
func TestDrainHandsOffToTheOtherInstance(t *testing.T) {
	w, a := newClicks(t, worldOptions{})
	b := w.newInstance("b", clicksOptions())
	defer a.dumpLogs()
	defer b.dumpLogs()
	nParts := w.kopts.Partitions
	pa := a.start("run")
	pb := b.start("run")

	assigned := func(in *instance) float64 {
		return in.peek("consumer").Sum("ingestor_consumer_partitions_assigned")
	}
	deadline := time.Now().Add(60 * time.Second)
	for !(assigned(a) > 0 && assigned(b) > 0 && assigned(a)+assigned(b) == float64(nParts)) {
		if time.Now().After(deadline) {
			t.Fatalf("partitions not shared: a=%v b=%v", assigned(a), assigned(b))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// A steady stream, during which a gets SIGTERM.
	g, err := w.generator(clicksTopic)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.Rate = 5000
	g.Time = eventTime
	const events = 40000
	genDone := make(chan error, 1)
	go func() { genDone <- g.Run(context.Background(), 0, events) }()
	time.Sleep(3 * time.Second)

	pa.signal(syscall.SIGTERM)
	sent := time.Now()
	var handOff time.Duration
	for {
		if assigned(b) == float64(nParts) {
			handOff = time.Since(sent)
			break
		}
		if time.Since(sent) > 30*time.Second {
			t.Fatalf("b owns %v of %d partitions 30 s after a's SIGTERM", assigned(b), nParts)
		}
		time.Sleep(20 * time.Millisecond)
	}
	drain := pa.wait(t, 96*time.Second)
	drain += handOff
	if left := walLeft(t, a.walDir); len(left) > 0 {
		t.Errorf("a's WAL not empty after its drain: %v", left)
	}
	if err := <-genDone; err != nil {
		t.Fatal(err)
	}
	var good []int64
	for seq := int64(0); seq < events; seq++ {
		good = append(good, seq)
	}
	w.waitRows(t, map[string]int64{clicksTable: events}, 2*time.Minute)
	pb.signal(syscall.SIGTERM)
	pb.wait(t, 96*time.Second)
	if left := walLeft(t, b.walDir); len(left) > 0 {
		t.Errorf("b's WAL not empty after its drain: %v", left)
	}
	w.checkTable(t, clicksTable, good)
	t.Logf("e2e: two instances, %d events: hand-off to the other instance %s after SIGTERM, drain of the stopped instance %s",
		events, handOff.Round(time.Millisecond), drain.Round(time.Millisecond))
}

// TestDrainRightAfterMaintainerRestart SIGKILLs the maintainer child of
// `run`, lets the supervisor restart it and SIGTERMs the supervisor right
// away. The restarted maintainer's group join is held at the broker until
// the killed member's session times out (30 s here, as on a broker that
// needs long sessions); the drain must not wait for it: the whole
// shutdown ends within a few seconds, not at the drain budget with the
// maintainer killed.
func TestDrainRightAfterMaintainerRestart(t *testing.T) {
	w := newWorld(t, worldOptions{topics: []string{clicksTopic}, partitions: 4})
	o := clicksOptions()
	o.upkeep = true
	o.leaseSessionTimeoutSeconds = 30
	a := w.newInstance("a", o)
	defer a.dumpLogs()
	p := a.start("run")
	a.waitReady(t, 60*time.Second)

	maintainerPID := func() int {
		for _, c := range childPIDs(p.cmd.Process.Pid) {
			if roleOf(c) == "maintainer" {
				return c
			}
		}
		return 0
	}
	held := func() bool { return a.peek("maintainer").Sum("ingestor_maintainer_lease_held") == 1 }
	deadline := time.Now().Add(60 * time.Second)
	for !held() {
		if time.Now().After(deadline) {
			t.Fatal("the maintainer does not hold the lease after 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	first := maintainerPID()
	if first == 0 {
		t.Fatal("no maintainer child")
	}
	syscall.Kill(first, syscall.SIGKILL)

	// The supervisor restarts it after a second; it serves its metrics
	// and joins the group, where the killed member still counts.
	deadline = time.Now().Add(30 * time.Second)
	for {
		if pid := maintainerPID(); pid != 0 && pid != first && len(a.peek("maintainer")) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the supervisor did not restart the maintainer within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	if held() {
		t.Fatal("the restarted maintainer holds the lease already: its join was not held, the test proves nothing")
	}

	p.signal(syscall.SIGTERM)
	took := p.wait(t, 5*time.Second)
	if strings.Contains(a.log("run"), "drain budget spent") {
		t.Errorf("the supervisor killed a role at the drain:\n%s", a.log("run"))
	}
	t.Logf("e2e: SIGTERM right after a maintainer restart: shutdown took %s (drain budget 60 s)", took.Round(time.Millisecond))
}
