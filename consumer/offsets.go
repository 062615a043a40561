package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/icewal/ingestor/shared/walfile"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// loadLedgers reads the committed offsets' metadata of newly assigned
// partitions.
func (l *loop) loadLedgers(ctx context.Context, cl *kgo.Client, partitions []int32) error {
	if len(partitions) == 0 {
		return nil
	}
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, l.ds.ConsumerGroup)
	if err != nil {
		return err
	}
	l.ledgerMu.Lock()
	defer l.ledgerMu.Unlock()
	if l.ledgers == nil {
		l.ledgers = map[int32]walfile.Ledger{}
	}
	for _, p := range partitions {
		led := walfile.Ledger{}
		if o, ok := offs.Lookup(l.ds.Topic, p); ok && o.Err == nil {
			if parsed, ok := walfile.ParseLedger(o.Metadata); ok {
				led = parsed
			}
		}
		l.ledgers[p] = led
		l.w.order.assigned(p, led, l.c.walID)
	}
	return nil
}

// withLedger makes the offset commit carry, for each partition, the
// ledger with this WAL directory's entry set to the committed offset.
func (l *loop) withLedger(ctx context.Context) context.Context {
	return kgo.PreCommitFnContext(ctx, func(req *kmsg.OffsetCommitRequest) error {
		l.ledgerMu.Lock()
		defer l.ledgerMu.Unlock()
		for ti := range req.Topics {
			for pi := range req.Topics[ti].Partitions {
				p := &req.Topics[ti].Partitions[pi]
				led, ok := l.ledgers[p.Partition]
				if !ok {
					return fmt.Errorf("no commit ledger for partition %d", p.Partition)
				}
				if l.w.up != nil {
					// The rows this directory wrote of the partition: the
					// next owner's appends wait for them (upsertorder.go).
					if end, ok := l.w.order.lastOf(p.Partition); ok {
						led[l.c.walID+walfile.RowsSuffix] = end
					}
				}
				meta := led.With(l.c.walID, p.Offset)
				p.Metadata = &meta
				led[l.c.walID] = p.Offset
			}
		}
		return nil
	})
}

// commit commits offsets synchronously, retrying transient errors. Errors
// that mean the partitions are no longer ours are returned at once. With a
// dead-letter topic, every dropped record up to the offsets must have been
// acknowledged first: a failed dead-letter write fails the commit, which is
// fatal, so Kafka delivers the records again after the restart.
func (l *loop) commit(ctx context.Context, topic string, offsets map[int32]int64) error {
	if l.ds.DeadLetterTopic != "" {
		if err := l.cl.Flush(ctx); err != nil {
			// A dead-letter write that failed is the error to tell,
			// not only the flush that then ran out of time.
			return fmt.Errorf("flush dead-letter records: %w", errors.Join(l.dlqErr.get(), err))
		}
		if err := l.dlqErr.get(); err != nil {
			return err
		}
	}
	req := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for p, o := range offsets {
		req[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var last error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			l.c.m.commitFails.WithLabelValues(l.ds.Name).Inc()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		var cerr error
		l.cl.CommitOffsetsSync(l.withLedger(ctx), req, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				cerr = err
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if e := kerr.ErrorForCode(p.ErrorCode); e != nil && cerr == nil {
						cerr = fmt.Errorf("partition %d: %w", p.Partition, e)
					}
				}
			}
		})
		if cerr == nil {
			return nil
		}
		last = cerr
		var ke *kerr.Error
		if errors.As(cerr, &ke) && !ke.Retriable || rebalancing(cerr) {
			// A rebalance cannot complete while this commit holds the
			// poll loop: the caller hands the partitions to
			// dropGeneration instead (rejoin.go).
			break
		}
	}
	return last
}
