package consumer

import (
	"encoding/hex"
	"slices"

	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/walfile"
)

// A topic that is deleted and created again under the ingestor keeps its
// name but gets a new topic id, and Kafka drops the group's committed
// offsets with the old topic. The ready files rotated from the old topic
// are committed data of it: their offset commit landed (a rotation whose
// commit fails ends the loop or is judged at once by dropGeneration), and
// Kafka will never deliver those records again. Judged by recovery's table
// against the new topic's committed offsets, which know nothing of them,
// they would look uncommitted and be deleted: rows lost.
//
// So the consumer records, per topic, the topic id it reads in the WAL
// directory (walfile.TopicRecord), before it joins the group and rotates
// anything under that id. At start-up, when the brokers give the topic
// another id than the record, every ready file of the topic predates the
// recreation; the record then lists them under older, and recovery and
// dropGeneration hand them on to the uploader and the committer (the
// "commit after the file's last offset" rows of the table: kept, or the
// local copy deleted when already in the table) instead of comparing them
// with the new topic's offsets. The list shrinks as the committer deletes
// the files, and the committer adds the listed files although the new
// topic's offsets are not past them.

// olderFiles returns the ready segments of topic in dir that were rotated
// under an earlier topic id than id (zero when the brokers did not say):
// those the record lists, and, when the record names another id than id,
// every ready segment of the topic.
func olderFiles(dir, topic string, id [16]byte, files []walfile.File) (map[uuid.UUID]bool, error) {
	rec, found, err := walfile.ReadTopicRecord(dir, topic)
	if err != nil || !found {
		return nil, err
	}
	older := rec.OlderSet()
	if id != ([16]byte{}) && rec.ID != hex.EncodeToString(id[:]) {
		for _, f := range files {
			if f.Topic == topic && f.State == walfile.Ready {
				older[f.UUID] = true
			}
		}
	}
	return older, nil
}

// writeTopicRecord records id as the topic's id, with those of older that
// are still ready segments in dir. A crash before the rename leaves the
// previous record, and the next start decides as this one did.
func writeTopicRecord(dir, topic string, id [16]byte, older map[uuid.UUID]bool) error {
	files, err := walfile.List(dir)
	if err != nil {
		return err
	}
	rec := walfile.TopicRecord{ID: hex.EncodeToString(id[:])}
	for _, f := range files {
		if f.Topic == topic && f.State == walfile.Ready && older[f.UUID] && !slices.Contains(rec.Older, f.UUID) {
			rec.Older = append(rec.Older, f.UUID)
		}
	}
	// A crash right here, after recovery and before the record: the old
	// record still names the old id, so the next start takes every ready
	// file of the topic for an old one again, which it is (nothing has
	// been rotated under the new id yet: the client has not joined).
	failpoint.Hit(failpoint.ConsumerBeforeTopicRecord)
	return walfile.WriteTopicRecord(dir, topic, rec)
}
