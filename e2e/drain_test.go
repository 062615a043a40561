package e2e

import (
	"context"
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
