package walfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/uuid"
)

// TopicRecordPrefix starts the name of a topic's id record,
// .topic-{topic}.json: the Kafka topic id the consumer reads the topic
// by, and the ready segments rotated from an earlier topic of the same
// name (deleted and created again). Kafka dropped the group's committed
// offsets with that topic, so those segments are past their offset commit
// whatever the new topic's commits say: the consumer's recovery keeps
// them and the committer adds them (see docs/wal.md, "A recreated
// topic"). List leaves these names out, as every dot file.
const TopicRecordPrefix = ".topic-"

// TopicRecord is the content of a topic's id record.
type TopicRecord struct {
	// ID is the topic id, in hex, the consumer reads the topic by.
	ID string `json:"id"`
	// Older lists the ready segments rotated under an earlier id.
	Older []uuid.UUID `json:"older,omitempty"`
}

// TopicRecordName returns the file name of topic's id record.
func TopicRecordName(topic string) string { return TopicRecordPrefix + topic + MarkerExt }

// ReadTopicRecord reads topic's id record; found is false if there is
// none (a directory written before the records existed, or a first start).
func ReadTopicRecord(dir, topic string) (rec TopicRecord, found bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, TopicRecordName(topic)))
	if errors.Is(err, os.ErrNotExist) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, fmt.Errorf("read topic id record of %s: %w", topic, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, false, fmt.Errorf("read topic id record of %s: %w", topic, err)
	}
	return rec, true, nil
}

// WriteTopicRecord writes topic's id record atomically (WriteAtomic).
func WriteTopicRecord(dir, topic string, rec TopicRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode topic id record of %s: %w", topic, err)
	}
	if err := WriteAtomic(dir, TopicRecordName(topic), b); err != nil {
		return fmt.Errorf("write topic id record of %s: %w", topic, err)
	}
	return nil
}

// OlderSegments returns the ready segments topic's id record lists as
// rotated from an earlier topic of the same name.
func OlderSegments(dir, topic string) (map[uuid.UUID]bool, error) {
	rec, _, err := ReadTopicRecord(dir, topic)
	if err != nil {
		return nil, err
	}
	return rec.OlderSet(), nil
}

// OlderSet returns the segments Older lists, as a set.
func (r TopicRecord) OlderSet() map[uuid.UUID]bool {
	older := make(map[uuid.UUID]bool, len(r.Older))
	for _, u := range r.Older {
		older[u] = true
	}
	return older
}
