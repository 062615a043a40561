package consumer

import (
	"context"
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// PauseSchemaRegistry: partitions of the dataset wait for the schema
// registry (the value of ingestor_consumer_paused's reason label while
// any does, and of the status's paused reasons).
const PauseSchemaRegistry = "schema_registry"

// registryDeps is what a registry client takes from the consumer.
type registryDeps struct {
	log *slog.Logger
	m   *metrics
}

// schemaWaits are the partitions of one dataset whose next record names a
// schema id the registry has not answered for: each is paused in the
// Kafka client and its position moved back to that record, so the record
// and those after it are read again once the schema is there. Nothing of
// the partition past the record was processed, so its committed offset
// stays before the record: a crash while it waits reads it again from
// there. The other partitions go on. A registry outage thus holds records
// in Kafka, as a full WAL volume does, and never drops one.
type schemaWaits struct {
	mu      sync.Mutex
	waiting map[int32]int // partition -> the schema id it waits for
	wg      sync.WaitGroup
}

// wait pauses partition p at offset until schema id is fetched. It runs
// in the poll loop, while the rebalance block is held, as SetOffsets asks.
func (l *loop) waitForSchema(ctx context.Context, p int32, offset int64, id int) {
	topic := l.ds.Topic
	sw := &l.schemaWaits
	sw.mu.Lock()
	if _, already := sw.waiting[p]; already {
		sw.mu.Unlock()
		return
	}
	l.cl.PauseFetchPartitions(map[string][]int32{topic: {p}})
	// The records of p after this one in the fetch at hand are skipped by
	// the caller, and those of later fetches while p waits; SetOffsets
	// drops what the client buffered past it.
	l.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: {p: {Epoch: -1, Offset: offset}}})
	if sw.waiting == nil {
		sw.waiting = map[int32]int{}
	}
	sw.waiting[p] = id
	n := len(sw.waiting)
	sw.mu.Unlock()
	l.setWaiting(n)
	l.c.log.Warn("partition waits for its schema: the registry has not answered for the schema id of its next record",
		"dataset", l.ds.Name, "topic", topic, "partition", p, "offset", offset, "schema_id", id)
	reg := l.format.reg
	sw.wg.Go(func() {
		if reg.wait(ctx, id) != nil {
			return // the consumer stops; the record is read again at the next start
		}
		sw.mu.Lock()
		delete(sw.waiting, p)
		n := len(sw.waiting)
		// Resumed under the lock: the watchdog's resume of paused
		// partitions (watchdog.go) reads the set under it too.
		l.cl.ResumeFetchPartitions(map[string][]int32{topic: {p}})
		sw.mu.Unlock()
		l.setWaiting(n)
		l.c.log.Info("partition resumes: its schema is fetched", "dataset", l.ds.Name, "topic", topic, "partition", p, "schema_id", id)
	})
}

// isWaiting reports whether partition p waits for a schema.
func (sw *schemaWaits) isWaiting(p int32) bool {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	_, ok := sw.waiting[p]
	return ok
}

// resumeAllBut resumes every paused partition of the client but those
// waiting for a schema (the watchdog's mend).
func (sw *schemaWaits) resumeAllBut(cl *kgo.Client, topic string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	paused := cl.PauseFetchPartitions(nil)
	var keep []int32
	for _, p := range paused[topic] {
		if _, ok := sw.waiting[p]; !ok {
			keep = append(keep, p)
		}
	}
	paused[topic] = keep
	cl.ResumeFetchPartitions(paused)
}

// setWaiting exports how many partitions wait for the registry.
func (l *loop) setWaiting(n int) {
	l.c.m.schemaWaiting.WithLabelValues(l.ds.Name).Set(float64(n))
	l.c.m.paused.WithLabelValues(l.ds.Name, PauseSchemaRegistry).Set(b2f(n > 0))
}
