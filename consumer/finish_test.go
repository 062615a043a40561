package consumer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icewal/ingestor/shared/config"
)

// closingWatch records how many segments close at once. Each segment that
// starts to close waits, up to hold, for another to close beside it, so
// that segments allowed to close side by side are seen doing so.
type closingWatch struct {
	hold     time.Duration
	mu       sync.Mutex
	inFlight int
	most     int
}

func (c *closingWatch) start(*segment) {
	c.mu.Lock()
	c.inFlight++
	c.most = max(c.most, c.inFlight)
	c.mu.Unlock()
	for deadline := time.Now().Add(c.hold); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		c.mu.Lock()
		most := c.most
		c.mu.Unlock()
		if most >= 2 {
			break
		}
	}
	c.mu.Lock()
	c.inFlight--
	c.mu.Unlock()
}

// wideSegments fills one segment in each of partitions Kafka partitions
// with rows of about 2 KB, perPartition JSON bytes each.
func wideSegments(t *testing.T, w *writer, partitions int, perPartition int) int {
	t.Helper()
	ctx := context.Background()
	pad := strings.Repeat("x", 2000)
	rows := 0
	for p := range partitions {
		for i := 0; i*2050 < perPartition; i++ {
			payload := fmt.Sprintf(`{"id":"e%d-%d-%s","meta":{"tenant":"a","ts":"2026-11-30T10:00:00Z"}}`, p, i, pad)
			must(t, w.record(ctx, int32(p), int64(i), []byte(payload)))
			rows++
		}
	}
	return rows
}

// TestRotationClosesLargeSegmentsSideBySide: the segments a rotation
// closes build their files at once while their builds fit an eighth of
// the memory budget, and one at a time when they do not. Before, every
// segment of more than 4 MiB of JSON closed alone, one after the other,
// and a rotation of 64 wide segments kept one core busy for the whole
// build while every row of the window waited for it.
func TestRotationClosesLargeSegmentsSideBySide(t *testing.T) {
	for _, tc := range []struct {
		name     string
		budget   int64
		wantMost int
	}{
		// Room 64 MiB: two builds of 3 x 5 MiB fit side by side.
		{"room for two", 512 << 20, 2},
		// Room 8 MiB: each build takes the whole room.
		{"room for one", 64 << 20, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, cl, _ := newTestWriter(t, config.WAL{MemoryBudgetBytes: tc.budget})
			w.heap = func() (uint64, uint64) { return 0, 0 } // only the rows count here
			rows := wideSegments(t, w, 2, 5<<20)
			watch := &closingWatch{hold: time.Second}
			w.closingHook = watch.start
			must(t, w.rotate(context.Background(), nil, TriggerAge))
			if watch.most != tc.wantMost {
				t.Fatalf("at most %d segments closed at once, want %d", watch.most, tc.wantMost)
			}
			if n := rowsInFiles(t, w.dir); n != int64(rows) {
				t.Fatalf("files hold %d rows, want %d", n, rows)
			}
			if len(cl.calls) != 1 || len(cl.calls[0]) != 2 {
				t.Fatalf("commits = %v, want one of both partitions", cl.calls)
			}
			if cur := w.mem.Current(); cur != 0 {
				t.Fatalf("%d bytes still held after every segment closed", cur)
			}
		})
	}
}
