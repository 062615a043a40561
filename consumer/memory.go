package consumer

import (
	rtmetrics "runtime/metrics"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// budgetAllocator counts the bytes that Arrow builders and Parquet writers
// of the consumer hold, so that the consumer can keep them within
// ingestion.wal.memoryBudgetBytes by flushing row groups of its largest
// open segments to disk before they close.
type budgetAllocator struct {
	mem  memory.Allocator
	cur  atomic.Int64
	peak atomic.Int64
}

func newBudgetAllocator() *budgetAllocator {
	return &budgetAllocator{mem: memory.NewGoAllocator()}
}

func (a *budgetAllocator) add(n int64) {
	c := a.cur.Add(n)
	for {
		p := a.peak.Load()
		if c <= p || a.peak.CompareAndSwap(p, c) {
			return
		}
	}
}

// Allocate implements memory.Allocator.
func (a *budgetAllocator) Allocate(size int) []byte {
	b := a.mem.Allocate(size)
	a.add(int64(cap(b)))
	return b
}

// Reallocate implements memory.Allocator.
func (a *budgetAllocator) Reallocate(size int, b []byte) []byte {
	old := int64(cap(b))
	nb := a.mem.Reallocate(size, b)
	a.add(int64(cap(nb)) - old)
	return nb
}

// Free implements memory.Allocator.
func (a *budgetAllocator) Free(b []byte) {
	a.add(-int64(cap(b)))
	a.mem.Free(b)
}

// Current returns the bytes held now.
func (a *budgetAllocator) Current() int64 { return a.cur.Load() }

// Peak returns the most bytes held at once.
func (a *budgetAllocator) Peak() int64 { return a.peak.Load() }

// liveHeap reads the heap the last garbage collection found live, and the
// number of completed collections, from runtime/metrics: a few
// microseconds, no stop of the world.
func liveHeap() (live, cycles uint64) {
	samples := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	rtmetrics.Read(samples)
	if samples[0].Value.Kind() == rtmetrics.KindUint64 {
		live = samples[0].Value.Uint64()
	}
	if samples[1].Value.Kind() == rtmetrics.KindUint64 {
		cycles = samples[1].Value.Uint64()
	}
	return live, cycles
}
