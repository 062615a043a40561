package consumer

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// backlog returns n records whose mapped id is 64 random hex digits, so
// that their Parquet does not compress to nothing.
func backlog(n int) [][]byte {
	out := make([][]byte, n)
	b := make([]byte, 32)
	for i := range out {
		rand.Read(b)
		out[i] = fmt.Appendf(nil, `{"id":"%s","meta":{"tenant":"a","ts":"2026-11-30T10:00:00Z"}}`, hex.EncodeToString(b))
	}
	return out
}

// dirBytes is the size of the files in dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// TestBacklogCannotOverrunTheWatermark is the probe "a backlog fills an
// 8 MiB volume within 3.4 s, before the 5 s check", on a real 8 MiB tmpfs:
// with the timer's measurement out of the way (an hour apart), the byte
// budget alone pauses the consumer before the volume is full, and it
// never dies of ENOSPC.
func TestBacklogCannotOverrunTheWatermark(t *testing.T) {
	e := startConsumer(t, func(c *Consumer) {
		dir := c.cfg.Ingestion.WAL.Dir
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", dir).CombinedOutput(); err != nil {
			t.Skipf("cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN): %v: %s; TestBacklogPausesOnTheByteBudget runs everywhere", err, out)
		}
		// After the consumer stopped (cleanups run last in, first out).
		t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
		c.volumeEvery = time.Hour
	})
	e.producePayloads(t, backlog(300_000)...) // about 32 MB of JSON, 10 MB as Parquet
	paused := func() bool { return testutil.ToFloat64(e.c.m.paused.WithLabelValues("clicks", "disk")) == 1 }
	deadline := time.Now().Add(60 * time.Second)
	for !paused() {
		select {
		case err := <-e.done:
			t.Fatalf("the consumer stopped before it paused: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not paused after 60 s with the volume %.1f %% full", must1(volumeUsedPct(e.cfg.Ingestion.WAL.Dir)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second) // what was fetched before the pause is written
	select {
	case err := <-e.done:
		t.Fatalf("the consumer stopped after it paused: %v", err)
	default:
	}
	if pct := must1(volumeUsedPct(e.cfg.Ingestion.WAL.Dir)); pct >= 95 {
		t.Errorf("volume %.1f %% full after the pause, want it held near the 80 %% watermark", pct)
	}
	if got := e.consumed(); got >= 300_000 {
		t.Errorf("consumed the whole backlog (%v records) although the volume passed its watermark", got)
	}
}

func must1(v float64, err error) float64 {
	if err != nil {
		return -1
	}
	return v
}

// TestBacklogPausesOnTheByteBudget runs everywhere: the volume is the
// files in the WAL directory against a capacity of 8 MiB. With the timer
// an hour apart, the byte budget's measurements pause the consumer before
// the files pass the capacity.
func TestBacklogPausesOnTheByteBudget(t *testing.T) {
	const capacity = 8 << 20
	var walDir string
	e := startConsumer(t, func(c *Consumer) {
		walDir = c.cfg.Ingestion.WAL.Dir
		c.volumeEvery = time.Hour
		c.volumeBytes = 64 << 10
		c.measure = func(dir string) (float64, error) { return 100 * float64(dirBytes(dir)) / capacity, nil }
	})
	e.producePayloads(t, backlog(300_000)...) // about 32 MB of JSON, 10 MB as Parquet
	waitFor(t, "paused", 60*time.Second, func() bool {
		return testutil.ToFloat64(e.c.m.paused.WithLabelValues("clicks", "disk")) == 1
	})
	time.Sleep(time.Second)
	if used := dirBytes(walDir); used >= capacity {
		t.Errorf("the WAL directory holds %d bytes, past the volume's %d", used, capacity)
	}
	if got := e.consumed(); got >= 300_000 {
		t.Errorf("consumed the whole backlog (%v records) although the volume passed its watermark", got)
	}
}
