package consumer

import (
	"sync/atomic"
	"syscall"
)

// Bounds of the volume byte budget: the JSON bytes the consumer takes in
// between two measurements of the WAL volume besides the timer's
// (volumeCheckInterval). A backlog read at full speed writes megabytes in
// a quarter second, which fills a small volume between two ticks; a
// measurement every 1 % of the volume's size (a statfs, a microsecond)
// keeps the watermark from being passed by more than that and the records
// the Kafka client had already fetched when the consumers paused (at most
// the fetch size, a sixteenth of the memory budget).
const (
	minVolumeBudget = 256 << 10
	maxVolumeBudget = 8 << 20
)

// volumeBudget measures the WAL volume whenever the consumer has taken in
// its budget of bytes since the last measurement, and hands the
// measurement to the gate, which pauses consumption at the high watermark.
type volumeBudget struct {
	g       *gate
	dir     string
	measure func(dir string) (float64, error)
	every   int64
	spent   atomic.Int64
}

// volumeBudgetBytes is 1 % of the size of the file system holding dir,
// within the bounds above; the upper bound when statfs fails.
func volumeBudgetBytes(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return maxVolumeBudget
	}
	return min(max(int64(st.Blocks)*int64(st.Bsize)/100, minVolumeBudget), maxVolumeBudget)
}

// spend counts n bytes taken in, and measures once they reach the budget.
// Writers of every dataset call it after each record.
func (b *volumeBudget) spend(n int) {
	if b.spent.Add(int64(n)) < b.every {
		return
	}
	b.spent.Store(0)
	if pct, err := b.measure(b.dir); err == nil {
		b.g.observe(pct)
	}
}
