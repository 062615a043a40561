package consumer

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// deadLetter produces a dropped record to the dataset's dead-letter topic
// as it was: its key, its headers in their order, its timestamp and its
// value byte for byte, followed by headers saying why it was dropped and
// where it came from. The write is asynchronous; commit waits for it
// before committing the record's offset.
func (l *loop) deadLetter(partition int32, offset int64, reason string, err error, payload []byte) {
	rec := &kgo.Record{Topic: l.ds.DeadLetterTopic, Value: payload}
	if r := l.cur; r != nil && r.Partition == partition && r.Offset == offset {
		rec.Key = r.Key
		rec.Timestamp = r.Timestamp
		rec.Headers = make([]kgo.RecordHeader, 0, len(r.Headers)+5)
		rec.Headers = append(rec.Headers, r.Headers...)
	}
	rec.Headers = append(rec.Headers,
		kgo.RecordHeader{Key: "ingestor.reason", Value: []byte(reason)},
		kgo.RecordHeader{Key: "ingestor.error", Value: []byte(truncate(err.Error(), 512))},
		kgo.RecordHeader{Key: "ingestor.topic", Value: []byte(l.ds.Topic)},
		kgo.RecordHeader{Key: "ingestor.partition", Value: []byte(strconv.Itoa(int(partition)))},
		kgo.RecordHeader{Key: "ingestor.offset", Value: []byte(strconv.FormatInt(offset, 10))},
	)
	l.cl.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
		if err != nil {
			l.dlqErr.set(fmt.Errorf("dead-letter record %s/%d@%d to %s: %w", l.ds.Topic, partition, offset, l.ds.DeadLetterTopic, err))
		}
	})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
