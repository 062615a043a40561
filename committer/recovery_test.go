package committer

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icewal/ingestor/shared/walfile"
)

// The append lands but the process dies before deleting the local files:
// the next pass must find the segments in the table and add nothing twice.
func TestCommitterCommitLandedBeforeCrash(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal := e.walDir("wal")
	a := e.writeSegment(wal, "clicks", 0, 0, clickRows(1, 5, 1), true)
	b := e.writeSegment(wal, "clicks", 1, 0, clickRows(10, 7, 2), true)
	e.commitOffset("clicks", 0, 5)
	e.commitOffset("clicks", 1, 7)

	// Keep copies of the local files as they were before the commit.
	saved, restore := keepWAL(t, wal)

	runPass(t, newCommitter(t, e.config(wal)))
	if got := walNames(t, wal); len(got) != 0 {
		t.Fatalf("WAL holds %v after the commit", got)
	}
	checkSnapshot(t, e.table("clicks"), "clicks", a, b)

	// The crash: every local file is back, as if never deleted.
	restore()
	cm := newCommitter(t, e.config(wal))
	runPass(t, cm)
	if got := walNames(t, wal); len(got) != 0 {
		t.Fatalf("WAL holds %v after the second pass", got)
	}
	clicks := e.table("clicks")
	checkSnapshot(t, clicks, "clicks", a, b)
	if got, want := scanColumn(t, clicks, "id"), wantColumn("id", a, b); !slices.Equal(got, want) {
		t.Errorf("clicks ids %v, want %v", got, want)
	}
	if got := testutil.ToFloat64(cm.metrics.commits.WithLabelValues("clicks")); got != 0 {
		t.Errorf("second committer made %v commits, want 0", got)
	}

	// A crash between deleting a ready file and its marker leaves the
	// marker alone: the next pass deletes it.
	marker := a.name.As(walfile.Uploaded).String()
	copyFile(t, filepath.Join(saved, marker), filepath.Join(wal, marker))
	runPass(t, newCommitter(t, e.config(wal)))
	if got := walNames(t, wal); len(got) != 0 {
		t.Fatalf("WAL holds %v, want the orphan marker deleted", got)
	}
	if n := len(snapshots(e.table("clicks"))); n != 1 {
		t.Errorf("clicks has %d snapshots, want 1", n)
	}
}

// A segment whose partition has no committed offset at all (the group never
// committed) never reaches the table.
func TestCommitterNoCommittedOffset(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal := e.walDir("wal")
	s := e.writeSegment(wal, "orders", 0, 0, orderRows("x", 3, "eu"), true)
	cm := newCommitter(t, e.config(wal))
	runPass(t, cm)
	if n := len(snapshots(e.table("orders"))); n != 0 {
		t.Fatalf("orders has %d snapshots, want none", n)
	}
	want := []string{s.name.String(), s.name.As(walfile.Uploaded).String()}
	if got := walNames(t, wal); !slices.Equal(got, want) {
		t.Errorf("WAL holds %v, want %v", got, want)
	}
	if got := testutil.ToFloat64(cm.metrics.waiting.WithLabelValues("orders")); got != 1 {
		t.Errorf("orders files waiting = %v, want 1", got)
	}
}

// Two committers on two WAL directories append to one table. The second
// commits while the first is about to: the first's commit conflicts, and it
// reloads the table and lands on the retry.
func TestCommitterConflictingCommitters(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	walA, walB := e.walDir("wal-a"), e.walDir("wal-b")
	a1 := e.writeSegment(walA, "clicks", 0, 0, clickRows(1, 5, 1), true)
	a2 := e.writeSegment(walA, "clicks", 0, 0, clickRows(100, 5, 2), true)
	b1 := e.writeSegment(walB, "clicks", 1, 0, clickRows(1000, 8, 1), true)
	e.commitOffset("clicks", 0, 5)
	e.commitOffset("clicks", 1, 8)

	ca := newCommitter(t, e.config(walA))
	cb := newCommitter(t, e.config(walB))
	ca.beforeCommit = func(ctx context.Context, dataset string, attempt int) {
		if dataset == "clicks" && attempt == 1 {
			runPass(t, cb)
		}
	}
	runPass(t, ca)

	for _, w := range []string{walA, walB} {
		if got := walNames(t, w); len(got) != 0 {
			t.Errorf("%s holds %v", filepath.Base(w), got)
		}
	}
	clicks := e.table("clicks")
	if n := len(snapshots(clicks)); n != 2 {
		t.Fatalf("clicks has %d snapshots, want 2", n)
	}
	if got, want := scanColumn(t, clicks, "id"), wantColumn("id", a1, a2, b1); !slices.Equal(got, want) {
		t.Errorf("clicks ids %v, want %v", got, want)
	}
	if got := testutil.ToFloat64(ca.metrics.failures.WithLabelValues("clicks", reasonConflict)); got != 1 {
		t.Errorf("first committer saw %v conflicts, want 1", got)
	}
	if got := testutil.ToFloat64(ca.metrics.commits.WithLabelValues("clicks")); got != 1 {
		t.Errorf("first committer made %v commits, want 1", got)
	}
	if got := testutil.ToFloat64(cb.metrics.commits.WithLabelValues("clicks")); got != 1 {
		t.Errorf("second committer made %v commits, want 1", got)
	}
}

// Two committers running side by side at short intervals while segments
// keep arriving: every segment lands exactly once.
func TestCommitterConcurrentRuns(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	walA, walB := e.walDir("wal-a"), e.walDir("wal-b")
	cfgA, cfgB := e.config(walA), e.config(walB)
	cfgA.Ingestion.CommitIntervalSeconds, cfgB.Ingestion.CommitIntervalSeconds = 0.05, 0.05
	ca, cb := newCommitter(t, cfgA), newCommitter(t, cfgB)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- ca.Run(ctx) }()
	go func() { done <- cb.Run(ctx) }()

	var all []seg
	for round := int64(0); round < 6; round++ {
		all = append(all,
			e.writeSegment(walA, "clicks", 0, round*10, clickRows(round*100, 3, 1), true),
			e.writeSegment(walB, "clicks", 1, round*10, clickRows(round*100+50, 3, 2), true))
		e.commitOffset("clicks", 0, round*10+3)
		e.commitOffset("clicks", 1, round*10+3)
		time.Sleep(30 * time.Millisecond)
	}
	waitFor(t, 30*time.Second, "both WAL directories to empty", func() bool {
		return len(walNames(t, walA)) == 0 && len(walNames(t, walB)) == 0
	})
	cancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
	clicks := e.table("clicks")
	if got, want := scanColumn(t, clicks, "id"), wantColumn("id", all...); !slices.Equal(got, want) {
		t.Errorf("clicks ids %v, want %v", got, want)
	}
	t.Logf("conflicts: %v %v", testutil.ToFloat64(ca.metrics.failures.WithLabelValues("clicks", reasonConflict)), testutil.ToFloat64(cb.metrics.failures.WithLabelValues("clicks", reasonConflict)))
	commits := testutil.ToFloat64(ca.metrics.commits.WithLabelValues("clicks")) + testutil.ToFloat64(cb.metrics.commits.WithLabelValues("clicks"))
	if n := len(snapshots(clicks)); float64(n) != commits {
		t.Errorf("clicks has %d snapshots, the committers counted %v commits", n, commits)
	}
}

// The drain waits for the uploader (and consumer) to release their locks,
// then commits what they left, and returns within the drain timeout.
func TestCommitterDrain(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal := e.walDir("wal")
	cfg := e.config(wal)
	cfg.Ingestion.CommitIntervalSeconds = 3600 // only the drain commits
	cm := newCommitter(t, cfg)

	uploader, err := walfile.AcquireLock(wal, "uploader")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cm.Run(ctx) }()
	waitFor(t, 5*time.Second, "the committer lock", func() bool { return walfile.Held(wal, "committer") })
	cancel()

	// The uploader is still at work: the committer waits.
	s := e.writeSegment(wal, "clicks", 0, 0, clickRows(1, 4, 1), true)
	e.commitOffset("clicks", 0, 4)
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while the uploader held its lock", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := uploader.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the uploader finished")
	}
	if got := walNames(t, wal); len(got) != 0 {
		t.Errorf("WAL holds %v after the drain", got)
	}
	checkSnapshot(t, e.table("clicks"), "clicks", s)
}

// A consumer that never finishes cannot hold the committer past the drain
// timeout; its files stay for the next start.
func TestCommitterDrainTimeout(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal := e.walDir("wal")
	cfg := e.config(wal)
	cfg.Ingestion.CommitIntervalSeconds = 3600
	cfg.Ingestion.DrainTimeoutSeconds = 0.3
	cm := newCommitter(t, cfg)
	consumer, err := walfile.AcquireLock(wal, "consumer")
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Release()
	s := e.writeSegment(wal, "clicks", 0, 0, clickRows(1, 4, 1), true)
	e.commitOffset("clicks", 0, 4)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cm.Run(ctx) }()
	waitFor(t, 5*time.Second, "the committer lock", func() bool { return walfile.Held(wal, "committer") })
	start := time.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("drain took %s with a 0.3 s timeout", d)
	}
	want := []string{s.name.String(), s.name.As(walfile.Uploaded).String()}
	if got := walNames(t, wal); !slices.Equal(got, want) {
		t.Errorf("WAL holds %v, want %v", got, want)
	}
}

// A second committer on the same WAL directory refuses to run.
func TestCommitterLock(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal := e.walDir("wal")
	l, err := walfile.AcquireLock(wal, "committer")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := newCommitter(t, e.config(wal)).Run(context.Background()); err == nil {
		t.Fatal("Run succeeded while another committer held the lock")
	}
}

// A ready file that is not valid Parquet is left out of the append; the
// other segments go ahead.
func TestCommitterBadSegment(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal := e.walDir("wal")
	good := e.writeSegment(wal, "clicks", 0, 0, clickRows(1, 4, 1), true)
	bad := e.writeSegment(wal, "clicks", 0, 4, clickRows(10, 4, 1), true)
	if err := os.WriteFile(filepath.Join(wal, bad.name.String()), []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.commitOffset("clicks", 0, 8)
	cm := newCommitter(t, e.config(wal))
	runPass(t, cm)
	checkSnapshot(t, e.table("clicks"), "clicks", good)
	want := []string{bad.name.String(), bad.name.As(walfile.Uploaded).String()}
	if got := walNames(t, wal); !slices.Equal(got, want) {
		t.Errorf("WAL holds %v, want %v", got, want)
	}
	if got := testutil.ToFloat64(cm.metrics.failures.WithLabelValues("clicks", reasonError)); got != 1 {
		t.Errorf("error failures = %v, want 1", got)
	}
}

func TestCommitterJitter(t *testing.T) {
	base := 20 * time.Second
	seen := map[time.Duration]bool{}
	for i := range 50 {
		d := jittered(base, "host/"+string(rune('a'+i)))
		if d < base*95/100 || d > base*105/100 {
			t.Fatalf("jittered(%s) = %s, outside ±5 %%", base, d)
		}
		if jittered(base, "host/"+string(rune('a'+i))) != d {
			t.Fatal("jitter differs for one process")
		}
		seen[d] = true
	}
	if len(seen) < 40 {
		t.Errorf("only %d distinct intervals for 50 processes", len(seen))
	}
}
