package maintainer

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
)

// waitFor polls cond for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Two pods' maintainers on one table, meeting in a real Kafka group
// (kfake): exactly one holds the lease and upkeeps; the small files are
// compacted once, by it, and the other commits nothing. When the owner
// leaves, the other takes the table over.
func TestTwoMaintainersOneLease(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), nil)
	cfg.Kafka.Brokers = kc.ListenAddrs()
	cfg.Maintenance.CompactionFanIn = 4
	for i := range int64(8) {
		appendNotes(t, cfg, []int64{i})
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ms := make([]*Maintainer, 2)
	ls := make([]*leases, 2)
	for i := range ms {
		ms[i], _ = newMaintainer(t, cfg)
		if ls[i], err = newLeases(cfg, log); err != nil {
			t.Fatal(err)
		}
		ms[i].lease = ls[i]
	}
	defer func() {
		for _, l := range ls {
			l.close()
		}
	}()
	owners := func() (n, who int) {
		for i, l := range ls {
			if l.owns("events") {
				n, who = n+1, i
			}
		}
		return n, who
	}
	waitFor(t, 30*time.Second, "one maintainer to hold the lease", func() bool { n, _ := owners(); return n == 1 })
	_, owner := owners()
	other := 1 - owner

	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() { m.pass(context.Background()) })
	}
	wg.Wait()
	if n, _ := owners(); n != 1 {
		t.Fatalf("%d maintainers hold the lease after the pass, want 1", n)
	}
	if got := testutil.ToFloat64(ms[owner].metrics.rewrittenFiles.WithLabelValues("events")); got != 8 {
		t.Errorf("the owner compacted %v files, want 8", got)
	}
	if got := testutil.ToFloat64(ms[other].metrics.rewrittenFiles.WithLabelValues("events")); got != 0 {
		t.Errorf("the other maintainer compacted %v files, want 0", got)
	}
	if got := testutil.ToFloat64(ms[other].metrics.leaseHeld.WithLabelValues("events")); got != 0 {
		t.Errorf("the other maintainer's lease gauge %v, want 0", got)
	}
	for i, m := range ms {
		if got := testutil.ToFloat64(m.metrics.failures.WithLabelValues("events", stepCompact)); got != 0 {
			t.Errorf("maintainer %d: %v compaction failures", i, got)
		}
	}
	tbl := loadTable(t, cfg)
	if got := len(compactedObjects(t, tbl)); got != 1 {
		t.Errorf("%d compacted objects, want 1: both maintainers compacted", got)
	}

	// The owner's pod stops: the other takes over.
	ls[owner].close()
	waitFor(t, 60*time.Second, "the other maintainer to take the lease over", func() bool { return ls[other].owns("events") })
}
