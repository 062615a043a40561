package consumer

import (
	"context"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/icewal/ingestor/shared/walfile"
)

// Closing a segment (segment.finish) replays its buffered and spilled
// rows (a flat table's into column slices, a nested table's into Arrow
// builders), writes them as its last row group with the footer, and
// fsyncs the file. A flat table's segment buffers its rows
// encoded until rotation, so at rotation each segment's whole build is
// left to do: about 17 s of CPU in the wide benchmark's rotation of 64
// segments, which every row of the window waits for before it is ready.
//
// A rotation therefore closes the segments of all its partitions side by
// side: finishParallel at a time, the largest first (so that the longest
// build does not start last), while their builds fit the room: each takes
// about closeFactor times its buffered JSON bytes in Arrow, and all the
// builds in flight of one dataset take at most an eighth of the memory
// budget: with the buffered rows (at most flushMark, a quarter) they stay
// under the live heap's shedMark (a half). The room is per dataset: the
// datasets of a process that rotate at the same moment (a shutdown, a
// revoke) each have their own. A segment larger than the room closes
// alone. The room is held until the segment's file is renamed, fsync
// included, so with a small budget medium segments close one at a time.
// Before, each segment of more than 4 MiB of JSON closed alone, one
// after the other, and one partition's segments closed before the next
// partition's: with 64 wide segments the rotation kept one core busy,
// and the rows' freshness p95 was 52-58 s, against 42-43 s side by side
// (docs/benchmarks.md).
//
// A closed segment drops its Parquet writer at once (segment.finish):
// kept until the end of a rotation of 1,600 wide segments, their footers'
// metadata took the consumer to 950 MB and 130-195 CPU seconds, against
// 396 MB and 56 with the writers dropped.
const (
	// finishParallel is how many segments close at once: enough to keep
	// the cores busy and to overlap the fsyncs of small files (a revoke
	// has the rebalance timeout, 5 s, for hundreds of them).
	finishParallel = 4
	// closeFactor is a closing segment's Arrow build per byte of its
	// buffered JSON.
	closeFactor = 3
)

// closing is an open segment a rotation closes, with its partition's
// state and the trigger its rotation is counted under.
type closing struct {
	st      *partState
	key     string
	seg     *segment
	trigger string
	ready   walfile.Name
	size    int64
}

// closeRoom is the Arrow memory the segments closing at once may take.
func (w *writer) closeRoom() int64 {
	if w.budget <= 0 {
		return 1 << 62 // no budget: only finishParallel bounds them
	}
	return max(w.budget/8, 1)
}

// finishAll closes the segments and renames each ready, several at once,
// and returns how many it renamed. A segment that could not be closed
// stays in its partition's state; the error is fatal (the consumer
// exits) and the next start's recovery deletes what is left.
func (w *writer) finishAll(segs []closing) (int, error) {
	sort.SliceStable(segs, func(i, j int) bool { return segs[i].seg.pendingB > segs[j].seg.pendingB })
	room := w.closeRoom()
	sem := semaphore.NewWeighted(room)
	// After a failure ctx is cancelled and the loop starts no further
	// segment; one already past its Acquire may still close, and the
	// fatal exit that follows leaves its file to recovery like the rest.
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(finishParallel)
	var (
		mu       sync.Mutex
		finished []closing
	)
	for _, c := range segs {
		weight := min(closeFactor*c.seg.pendingB, room)
		if err := sem.Acquire(ctx, weight); err != nil {
			break
		}
		g.Go(func() error {
			defer sem.Release(weight)
			if w.closingHook != nil {
				w.closingHook(c.seg)
			}
			ready, err := c.seg.finish()
			if err != nil {
				return err
			}
			c.ready, c.size = ready, c.seg.cw.n // the whole file: most segments have none before
			mu.Lock()
			finished = append(finished, c)
			mu.Unlock()
			return nil
		})
	}
	err := g.Wait()
	for _, c := range finished {
		w.order.wrote(c.ready)
		delete(c.st.segs, c.key)
		w.m.segmentsOpen.WithLabelValues(w.ds.Name).Dec()
		w.m.rotated.WithLabelValues(w.ds.Name, c.trigger).Inc()
		w.m.bytesRotated.WithLabelValues(w.ds.Name).Add(float64(c.size))
		w.log.Debug("segment rotated", "dataset", w.ds.Name, "file", c.ready.String(), "trigger", c.trigger)
	}
	return len(finished), err
}
