package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// Recovery actions, the values of the action label.
const (
	ActionDeleteActive      = "delete_active"
	ActionDeleteUncommitted = "delete_uncommitted"
	ActionDeleteInTable     = "delete_in_table"
	ActionKeep              = "keep"
)

// OffsetInsideFileError is the state that cannot occur in correct
// operation: Kafka's committed offset falls inside a ready file's range.
// The consumer refuses to start.
type OffsetInsideFileError struct {
	File       string
	Start, End int64
	Committed  int64
}

func (e *OffsetInsideFileError) Error() string {
	return fmt.Sprintf("wal file %s holds offsets %d-%d but the committed offset is %d, inside that range: "+
		"the file and Kafka disagree, refusing to start (see docs/operations.md, \"refuses to start\")",
		e.File, e.Start, e.End, e.Committed)
}

// recoverDir applies the start-up rules of the specification to the WAL
// files of one dataset, comparing each with the offset Kafka has committed
// for its partition and with the table:
//
//	active_*                                  delete: Kafka delivers the rows again
//	ready_*, no commit or commit <= start     delete: the offset commit never landed
//	ready_*, commit > end, not in the table   keep: the uploader and committer finish it
//	ready_*, commit > end, in the table       delete the local copy only
//	ready_*, start < commit <= end            refuse to start
//
// A ready file rotated from an earlier topic of the same name (the topic
// was deleted and created again, topicgen.go) is committed data of that
// topic, whose offsets Kafka dropped with it: it is kept, or its local
// copy deleted when it is in the table, whatever the new topic's commits
// say. topicID is the topic's id as the brokers give it now, zero if they
// did not say. Once the files are handled, the topic's id record names
// topicID and the old files still waiting.
//
// If the committed offsets cannot be read, it returns an error and the
// consumer does not start.
func recoverDir(ctx context.Context, dir string, ds config.Dataset, cl *kgo.Client, tbl *table.Table, topicID [16]byte, m *metrics, log *slog.Logger) error {
	files, err := walfile.List(dir)
	if err != nil {
		return err
	}
	older, err := olderFiles(dir, ds.Topic, topicID, files)
	if err != nil {
		return fmt.Errorf("recovery of dataset %s: %w", ds.Name, err)
	}
	if slices.ContainsFunc(files, func(f walfile.File) bool { return f.Topic == ds.Topic }) {
		committed, err := fetchCommitted(ctx, ds, cl)
		if err != nil {
			return fmt.Errorf("recovery of dataset %s: %w", ds.Name, err)
		}
		if err := recoverFiles(dir, ds, files, committed, nil, older, tables.FilesInTable(tbl), m, log); err != nil {
			return err
		}
	}
	if topicID == ([16]byte{}) {
		// The brokers did not give the id: the record stays as it is. A
		// recreation while this run lasts is then not told apart by the
		// record (the watchdog still sees the id change and restarts the
		// consumer); the next start that learns the id writes it.
		return nil
	}
	// The record is written before the client joins the group: nothing of
	// the topic with this id is rotated before it names the id.
	if err := writeTopicRecord(dir, ds.Topic, topicID, older); err != nil {
		return fmt.Errorf("recovery of dataset %s: %w", ds.Name, err)
	}
	return nil
}

// fetchCommitted reads the committed offsets of the dataset's group.
func fetchCommitted(ctx context.Context, ds config.Dataset, cl *kgo.Client) (kadm.OffsetResponses, error) {
	committed, err := kadm.NewClient(cl).FetchOffsets(ctx, ds.ConsumerGroup)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("read committed offsets of group %s: %w", ds.ConsumerGroup, err)
	}
	return committed, nil
}

// recoverFiles applies recoverDir's rules to the dataset's files among
// files, or only to those of the given Kafka partitions when partitions is
// not nil. inTable names the segments known to be in the table; a file
// past its commit and not named there is kept, which is always safe: the
// committer adds it or, finding it in the table, deletes the local copy.
// older names the files of an earlier topic of the same name, which are
// past their commit whatever committed says (topicgen.go).
func recoverFiles(dir string, ds config.Dataset, files []walfile.File, committed kadm.OffsetResponses, partitions []int32, older, inTable map[uuid.UUID]bool, m *metrics, log *slog.Logger) error {
	var mine []walfile.File
	for _, f := range files {
		if f.Topic == ds.Topic && (partitions == nil || slices.Contains(partitions, f.Partition)) {
			mine = append(mine, f)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	walID, err := walfile.WALID(dir)
	if err != nil {
		return err
	}

	remove := func(f walfile.File, action string) error {
		if err := walfile.Remove(f.Path); err != nil {
			return fmt.Errorf("recovery: %w", err)
		}
		if f.State == walfile.Ready {
			failpoint.Hit(failpoint.ConsumerDuringRecovery)
			// The marker goes after its segment: a marker alone is ignored.
			if err := walfile.Remove(filepath.Join(filepath.Dir(f.Path), f.As(walfile.Uploaded).String())); err != nil {
				return fmt.Errorf("recovery: %w", err)
			}
			// The checksum record last: alone it is a stray record.
			if err := walfile.Remove(filepath.Join(filepath.Dir(f.Path), walfile.SumName(f.UUID))); err != nil {
				return fmt.Errorf("recovery: %w", err)
			}
		}
		m.recovered.WithLabelValues(ds.Name, action).Inc()
		log.Info("recovery", "action", action, "file", f.Name.String(), "topic", f.Topic, "partition", f.Partition)
		return nil
	}
	var changed bool
	for _, f := range mine {
		switch f.State {
		case walfile.Active:
			if err := remove(f, ActionDeleteActive); err != nil {
				return err
			}
			changed = true
		case walfile.Ready:
			off, ok := committed.Lookup(f.Topic, f.Partition)
			at := int64(-1)
			if ok && off.Err == nil {
				// Only this directory's own commits count: another
				// instance that read the same records again after this
				// one died may have committed past the file.
				at = walfile.CommittedFor(walID, off.At, off.Metadata)
			}
			if older[f.UUID] {
				// Rotated from the old topic: its commit landed there,
				// and the new topic's offsets say nothing about it.
				at = f.End + 1
			}
			switch {
			case at <= f.Start:
				if err := noteOrphan(dir, ds, f); err != nil {
					return err
				}
				if err := remove(f, ActionDeleteUncommitted); err != nil {
					return err
				}
				changed = true
			case at <= f.End:
				return &OffsetInsideFileError{File: f.Name.String(), Start: f.Start, End: f.End, Committed: at}
			case inTable[f.UUID]:
				if err := remove(f, ActionDeleteInTable); err != nil {
					return err
				}
				changed = true
			default:
				m.recovered.WithLabelValues(ds.Name, ActionKeep).Inc()
			}
		}
	}
	if changed {
		return walfile.SyncDir(dir)
	}
	return nil
}
