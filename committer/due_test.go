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

// TestCommitWhenDue drives the commit schedule with an explicit clock (the
// now of each pass, and the uploaded_ markers' times): a dataset appends
// at most once per interval, a batch that arrives after a quiet spell is
// committed without waiting for a clock tick, a due batch waits a little
// for the uploads of the files that rotated with it, and for their offset
// commits up to an interval.
func TestCommitWhenDue(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal := e.walDir("wal")
	cfg := e.config(wal)
	cfg.Ingestion.CommitIntervalSeconds = 10
	c := newCommitter(t, cfg)
	connect(t, c)
	ctx := context.Background()
	settle := settleTime(c.interval)
	if settle <= 0 || settle > c.interval/2 {
		t.Fatalf("settle time %s for an interval of %s", settle, c.interval)
	}
	uploadedAt := func(s seg, at time.Time) {
		t.Helper()
		if err := os.Chtimes(filepath.Join(wal, s.name.As(walfile.Uploaded).String()), at, at); err != nil {
			t.Fatal(err)
		}
	}
	in := func(s seg) bool { return slices.Contains(walNames(t, wal), s.name.String()) }
	last := make([]time.Time, len(cfg.Datasets))
	clicks := slices.IndexFunc(cfg.Datasets, func(d config.Dataset) bool { return d.Name == "clicks" })
	orders := slices.IndexFunc(cfg.Datasets, func(d config.Dataset) bool { return d.Name == "orders" })
	now := time.Now()

	// Two files rotated together; only a's upload has finished, just now.
	a := e.writeSegment(wal, "clicks", 0, 0, clickRows(100, 5, 1), true)
	b := e.writeSegment(wal, "clicks", 1, 0, clickRows(200, 5, 1), false)
	e.commitOffset("clicks", 0, 5)
	e.commitOffset("clicks", 1, 5)
	uploadedAt(a, now)
	c.passDue(ctx, last, now)
	if !in(a) || !last[clicks].IsZero() {
		t.Fatalf("committed a batch whose other upload is still running, %s before its first upload settled", settle)
	}

	// b's upload is slow: once a's upload is older than the settle time,
	// a goes alone.
	uploadedAt(a, now.Add(-settle-time.Second))
	c.passDue(ctx, last, now)
	if in(a) || !last[clicks].Equal(now) {
		t.Fatalf("a not committed once settled: in WAL %v, last append %v", in(a), last[clicks])
	}
	if n := len(snapshots(e.table("clicks"))); n != 1 {
		t.Fatalf("%d snapshots after the first append, want 1", n)
	}

	// b is uploaded now, but the dataset appended less than an interval ago.
	e.upload(wal, e.table("clicks"), b.name)
	uploadedAt(b, now.Add(c.interval/2))
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
	// be quicker) waits for that commit, past the settle time, without
	// using up the dataset's interval.
	later := now.Add(2 * c.interval)
	cc := e.writeSegment(wal, "clicks", 0, 5, clickRows(300, 5, 1), true)
	uploadedAt(cc, later.Add(-settle-time.Second))
	c.passDue(ctx, last, later)
	if !in(cc) || !last[clicks].Equal(now.Add(c.interval)) {
		t.Fatalf("a file without its offset commit: in WAL %v, last append %v", in(cc), last[clicks])
	}
	e.commitOffset("clicks", 0, 10)
	c.passDue(ctx, last, later)
	if in(cc) || !last[clicks].Equal(later) {
		t.Fatalf("not committed once its offset commit landed: in WAL %v, last append %v", in(cc), last[clicks])
	}

	// A file whose offset commit never comes (its consumer died between
	// the rename and the commit) holds the batch up until the batch's
	// oldest upload is an interval old; then the others go without it.
	latest := now.Add(4 * c.interval)
	stuck := e.writeSegment(wal, "clicks", 1, 5, clickRows(400, 5, 1), true)
	dd := e.writeSegment(wal, "clicks", 0, 10, clickRows(500, 5, 1), true)
	e.commitOffset("clicks", 0, 15)
	uploadedAt(stuck, latest.Add(-time.Second))
	uploadedAt(dd, latest.Add(-time.Second))
	c.passDue(ctx, last, latest)
	if !in(stuck) || !in(dd) || !last[clicks].Equal(later) {
		t.Fatalf("within the interval: stuck in WAL %v, dd in WAL %v (want both), last append %v", in(stuck), in(dd), last[clicks])
	}
	uploadedAt(stuck, latest.Add(-c.interval-time.Second))
	c.passDue(ctx, last, latest)
	if !in(stuck) || in(dd) || !last[clicks].Equal(latest) {
		t.Fatalf("after an interval: stuck in WAL %v (want true), dd in WAL %v (want false), last append %v", in(stuck), in(dd), last[clicks])
	}
	if !last[orders].IsZero() {
		t.Fatalf("orders had nothing to commit but its last append is %v", last[orders])
	}
}
