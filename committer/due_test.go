package committer

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/walfile"
)

// TestCommitWhenDue drives the commit schedule: a dataset appends at most
// once per interval, a batch that arrives after a quiet spell is
// committed without waiting for a clock tick, and a due batch waits a
// little for the uploads of the files that rotated with it.
func TestCommitWhenDue(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal := e.walDir("wal")
	cfg := e.config(wal)
	cfg.Ingestion.CommitIntervalSeconds = 10
	c := newCommitter(t, cfg)
	closeKafka, err := c.connect()
	if err != nil {
		t.Fatal(err)
	}
	defer closeKafka()
	defer c.closeCatalog()
	ctx := context.Background()
	settle := settleTime(c.interval)
	if settle <= 0 || settle > c.interval/2 {
		t.Fatalf("settle time %s for an interval of %s", settle, c.interval)
	}

	// Two files rotated together; only a's upload has finished.
	a := e.writeSegment(wal, "clicks", 0, 0, clickRows(100, 5, 1), true)
	b := e.writeSegment(wal, "clicks", 1, 0, clickRows(200, 5, 1), false)
	e.commitOffset("clicks", 0, 5)
	e.commitOffset("clicks", 1, 5)
	in := func(s seg) bool { return slices.Contains(walNames(t, wal), s.name.String()) }
	last := make([]time.Time, len(cfg.Datasets))
	clicks := slices.IndexFunc(cfg.Datasets, func(d config.Dataset) bool { return d.Name == "clicks" })

	now := time.Now()
	c.passDue(ctx, last, now)
	if !in(a) || !last[clicks].IsZero() {
		t.Fatalf("committed a batch whose other upload is still running, %s before its first upload settled", settle)
	}

	// b's upload is slow: once a's marker is older than the settle time,
	// a goes alone.
	old := now.Add(-settle - time.Second)
	if err := os.Chtimes(filepath.Join(wal, a.name.As(walfile.Uploaded).String()), old, old); err != nil {
		t.Fatal(err)
	}
	c.passDue(ctx, last, now)
	if in(a) || !last[clicks].Equal(now) {
		t.Fatalf("a not committed once settled: in WAL %v, last append %v", in(a), last[clicks])
	}
	if n := len(snapshots(e.table("clicks"))); n != 1 {
		t.Fatalf("%d snapshots after the first append, want 1", n)
	}

	// b is uploaded now, but the dataset appended less than an interval ago.
	e.upload(wal, e.table("clicks"), b.name)
	c.passDue(ctx, last, now.Add(c.interval/2))
	if !in(b) {
		t.Fatal("a second append within one interval")
	}
	// An interval after the last append, b goes at once: nothing else waits
	// for an upload, so there is no settling.
	c.passDue(ctx, last, now.Add(c.interval))
	if in(b) {
		t.Fatal("b not committed an interval after the last append")
	}
	if n := len(snapshots(e.table("clicks"))); n != 2 {
		t.Fatalf("%d snapshots, want 2", n)
	}
	if got, want := scanColumn(t, e.table("clicks"), "id"), wantColumn("id", a, b); !slices.Equal(got, want) {
		t.Errorf("clicks ids %v, want %v", got, want)
	}

	// A file uploaded before its offset commit landed (the consumer
	// commits once every file of the rotation is closed; the upload can
	// be quicker) waits for that commit, even past the settle time,
	// without using up the dataset's interval.
	cc := e.writeSegment(wal, "clicks", 0, 5, clickRows(300, 5, 1), true)
	if err := os.Chtimes(filepath.Join(wal, cc.name.As(walfile.Uploaded).String()), old, old); err != nil {
		t.Fatal(err)
	}
	later := now.Add(2 * c.interval)
	c.passDue(ctx, last, later)
	if !in(cc) || !last[clicks].Equal(now.Add(c.interval)) {
		t.Fatalf("a file without its offset commit: in WAL %v, last append %v", in(cc), last[clicks])
	}
	e.commitOffset("clicks", 0, 10)
	c.passDue(ctx, last, later)
	if in(cc) || !last[clicks].Equal(later) {
		t.Fatalf("not committed once its offset commit landed: in WAL %v, last append %v", in(cc), last[clicks])
	}

	// A file whose offset commit never lands (its consumer died between
	// the rename and the commit) holds the others up for one interval,
	// then stays behind, and the dataset's interval counts again.
	stuck := e.writeSegment(wal, "clicks", 1, 5, clickRows(400, 5, 1), true)
	dd := e.writeSegment(wal, "clicks", 0, 10, clickRows(500, 5, 1), true)
	e.commitOffset("clicks", 0, 15)
	long := now.Add(-c.interval - time.Second)
	if err := os.Chtimes(filepath.Join(wal, stuck.name.As(walfile.Uploaded).String()), long, long); err != nil {
		t.Fatal(err)
	}
	latest := now.Add(4 * c.interval)
	c.passDue(ctx, last, latest)
	if !in(stuck) || in(dd) || !last[clicks].Equal(latest) {
		t.Fatalf("after an interval: stuck in WAL %v (want true), dd in WAL %v (want false), last append %v", in(stuck), in(dd), last[clicks])
	}
	if !last[1-clicks].IsZero() {
		t.Fatalf("orders had nothing to commit but its last append is %v", last[1-clicks])
	}
}
