package committer

// The batch of a pass: which ready segments of a dataset an append may
// take. A segment goes into it only once it is uploaded (collect), its
// offsets are committed in Kafka (offsetsCommitted) and the table does
// not hold it yet (dropInTable); its object is checked last, right
// before the append (objects.go).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// collect returns the dataset's ready segments that have their uploaded_
// marker, in offset order, and the number of its ready files still
// waiting for their upload; it deletes markers whose ready file is gone
// (left by a crash between the two deletions after a commit).
func (c *Committer) collect(d config.Dataset) ([]*segment, int, error) {
	files, err := walfile.List(c.dir)
	if err != nil {
		return nil, 0, err
	}
	ready := map[uuid.UUID]walfile.File{}
	markers := map[uuid.UUID]walfile.File{}
	for _, f := range files {
		if f.Topic != d.Topic {
			continue
		}
		switch f.State {
		case walfile.Ready:
			ready[f.UUID] = f
		case walfile.Uploaded:
			markers[f.UUID] = f
		}
	}
	var pending []*segment
	orphans := false
	for id, m := range markers {
		r, ok := ready[id]
		if !ok {
			if err := walfile.Remove(m.Path); err != nil {
				return nil, 0, err
			}
			orphans = true
			continue
		}
		obj, err := walfile.ReadMarker(c.dir, r.Name)
		if errors.Is(err, walfile.ErrBadMarker) {
			c.quarantineMarker(d, m, err)
			continue
		}
		if err != nil {
			c.log.Warn("unreadable marker; the uploader writes it again", "dataset", d.Name, "file", m.Path, "err", err)
			continue
		}
		pending = append(pending, &segment{ready: r, marker: m, object: obj})
	}
	if orphans {
		if err := walfile.SyncDir(c.dir); err != nil {
			return nil, 0, err
		}
	}
	sort.Slice(pending, func(i, j int) bool {
		a, b := pending[i].ready, pending[j].ready
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		return a.Start < b.Start
	})
	return pending, len(ready) - len(pending), nil
}

// uploadedBefore reports whether the marker of any of segs was written
// before t: the oldest upload of a batch has waited long enough.
func uploadedBefore(segs []*segment, t time.Time) bool {
	for _, s := range segs {
		if fi, err := os.Stat(s.marker.Path); err != nil || fi.ModTime().Before(t) {
			return true // a marker that cannot be read does not hold the batch up
		}
	}
	return false
}

// dropInTable deletes the local files of segments the table already
// holds (their append landed, but the files outlived it) and returns the
// others. The check is tables.LocalSegmentsInTable: exact, and reading
// only table metadata (the snapshot summaries and this directory's
// ledger) once the directory has appended with a ledger. When it cannot
// tell, nothing is deleted or appended. A segment the table holds whose
// object is missing keeps its local copy (keepMissing).
func (c *Committer) dropInTable(ctx context.Context, log *slog.Logger, d config.Dataset, tbl *table.Table, pending []*segment) ([]*segment, error) {
	segs := make([]tables.Segment, 0, len(pending))
	for _, s := range pending {
		seg := tables.Segment{UUID: s.ready.UUID}
		// An unreadable time counts as "long ago", which only makes the
		// check take its exact path.
		if info, err := os.Stat(s.ready.Path); err == nil {
			seg.Written = info.ModTime()
		}
		segs = append(segs, seg)
	}
	walID, err := walfile.WALID(c.dir)
	if err != nil {
		return nil, err
	}
	in, err := tables.LocalSegmentsInTable(ctx, tbl, walID, segs)
	if err != nil {
		return nil, err
	}
	var keep, done []*segment
	for _, s := range pending {
		if in[s.ready.UUID] {
			done = append(done, s)
		} else {
			keep = append(keep, s)
		}
	}
	// A local copy goes only while its object is there to read: one the
	// table names but the store lost is kept (keepMissing).
	if done, err = c.keepMissing(ctx, log, d, done); err != nil {
		return nil, err
	}
	if len(done) > 0 {
		log.Info("segments already in the table; deleting the local copies", "files", len(done))
		c.removeLocal(log, done)
	}
	return keep, nil
}

// offsetsCommitted keeps the segments whose partition has a committed
// offset of the dataset's group past the segment's last offset. The others
// wait: their offset commit may never have landed, in which case Kafka
// delivers their rows again and the consumer's recovery deletes them.
func (c *Committer) offsetsCommitted(ctx context.Context, d config.Dataset, pending []*segment) (keep, waiting []*segment, err error) {
	if len(pending) == 0 {
		c.metrics.waiting.WithLabelValues(d.Name).Set(0)
		return nil, nil, nil
	}
	offsets, err := c.adm.FetchOffsets(ctx, d.ConsumerGroup)
	if errors.Is(err, kerr.GroupIDNotFound) {
		// A group that never committed: no segment may go in.
		offsets, err = kadm.OffsetResponses{}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("group %s: %w", d.ConsumerGroup, err)
	}
	walID, err := walfile.WALID(c.dir)
	if err != nil {
		return nil, nil, err
	}
	// Segments of an earlier topic of the same name, which Kafka dropped
	// with its commits: the consumer's recovery judged them past their
	// commit (walfile.TopicRecord).
	older, err := walfile.OlderSegments(c.dir, d.Topic)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range pending {
		o, ok := offsets.Lookup(d.Topic, s.ready.Partition)
		committed := int64(-1)
		if ok && o.Err == nil {
			// Only this WAL directory's own commits count (see
			// walfile.Ledger): another instance that read the same
			// records again may have committed past the file.
			committed = walfile.CommittedFor(walID, o.At, o.Metadata)
		}
		if older[s.ready.UUID] {
			committed = s.ready.End + 1
		}
		if committed > s.ready.End {
			keep = append(keep, s)
			continue
		}
		s.committed = committed
		waiting = append(waiting, s)
	}
	c.metrics.waiting.WithLabelValues(d.Name).Set(float64(len(waiting)))
	return keep, waiting, nil
}
