package consumer

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// volumeCheckInterval is how often the WAL volume's use is measured. The
// spec's 5 s is too slow for a backlog: read at full speed, the consumer
// wrote more than two thirds of a 16 MiB volume between two checks and
// died on ENOSPC before the gate closed. A statfs costs a microsecond, so
// it is measured four times a second.
const volumeCheckInterval = 250 * time.Millisecond

// resumeGapPct is how far below the high watermark the volume must fall
// before consumption resumes, so that it does not flap at the threshold.
const resumeGapPct = 5

// volumeUsedPct returns how full the file system holding dir is, in
// percent, as df counts it: used blocks over used plus available blocks.
func volumeUsedPct(dir string) (float64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs wal dir: %w", err)
	}
	used := float64(st.Blocks - st.Bfree)
	total := used + float64(st.Bavail)
	if total == 0 {
		return 0, nil
	}
	return 100 * used / total, nil
}

// watch measures the volume every interval until ctx ends.
func (g *gate) watch(ctx context.Context, dir string, measure func(string) (float64, error), every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		pct, err := measure(dir)
		if err != nil {
			g.log.Warn("measure wal volume", "error", err)
		} else {
			g.observe(pct)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func round1(f float64) float64 { return float64(int(f*10+0.5)) / 10 }
