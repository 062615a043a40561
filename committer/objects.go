package committer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/role"
	"github.com/icewal/ingestor/shared/storage"
	"github.com/icewal/ingestor/shared/walfile"
)

// statParallel bounds the object checks in flight: a batch of thousands
// of segments is checked in a few rounds without opening thousands of
// connections to the store at once.
const statParallel = 16

// Reasons of a hand-back, the values of the reason label of
// ingestor_committer_segments_handed_back_total.
const (
	handBackMissing = "missing" // the object is not in the store
	handBackSize    = "size"    // the object's size is not the marker's
	handBackAged    = "aged"    // the object is older than half the orphan margin
)

// objectCheck is what checkObjects found of one segment's object.
type objectCheck struct {
	reason string // "" when the object is fit for the append
	info   storage.Info
}

// statObjects checks the object of each segment in the store, statParallel
// at a time. An answer other than "not found" is an error: the check could
// not be made, and nothing is appended or handed back on a guess.
func (c *Committer) statObjects(ctx context.Context, segs []*segment, now time.Time) ([]objectCheck, error) {
	out := make([]objectCheck, len(segs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(statParallel)
	for i, s := range segs {
		g.Go(func() error {
			info, err := c.store.Stat(gctx, s.object.Object)
			switch {
			case errors.Is(err, storage.ErrNotFound):
				out[i].reason = handBackMissing
				return nil
			case err != nil:
				return fmt.Errorf("check object of %s: %w", s.ready.Name, err)
			}
			out[i].info = info
			switch {
			case info.Size != s.object.Size:
				out[i].reason = handBackSize
			case c.orphanAge > 0 && now.Sub(info.ModTime) > c.orphanAge/2:
				out[i].reason = handBackAged
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// checkObjects checks, right before the append, that the object of each
// segment is in the store, of the size its marker records, and younger
// than half of maintenance.orphanAgeHours, and returns the segments that
// are. Each other segment is handed back to the uploader (handBack): until
// the append no table metadata names the object, so the orphan cleanup may
// have deleted it (an outage longer than the margin), or may delete it
// before the append lands (an object close to the margin). The local
// ready file is the only copy then, and it is uploaded again.
//
// The segments that pass are younger than half the margin at now, so none
// of them is old enough for the cleanup before now plus half the margin:
// appendBound is that deadline, which the append must not run past.
func (c *Committer) checkObjects(ctx context.Context, log *slog.Logger, d config.Dataset, pending []*segment, now time.Time) ([]*segment, error) {
	if len(pending) == 0 {
		return nil, nil
	}
	checks, err := c.statObjects(ctx, pending, now)
	if err != nil {
		return nil, err
	}
	var keep, back []*segment
	var reasons []string
	count := map[string]int{}
	for i, s := range pending {
		r := checks[i].reason
		if r == "" {
			keep = append(keep, s)
			continue
		}
		back = append(back, s)
		reasons = append(reasons, r)
		count[r]++
		// After an outage thousands of segments come back at once: one
		// line each only at debug level, one line per pass below.
		log.Debug("uploaded object unfit for the append", "reason", r, "file", s.ready.Name.String(),
			"partition", s.ready.Partition, "object", s.object.Object, "size", s.object.Size,
			"object_size", checks[i].info.Size, "object_time", checks[i].info.ModTime)
	}
	if len(back) == 0 {
		return keep, nil
	}
	log.Warn("uploaded objects unfit for the append; handing the segments back to the uploader, which uploads them again",
		"files", len(back), handBackMissing, count[handBackMissing], handBackSize, count[handBackSize], handBackAged, count[handBackAged],
		"first_file", back[0].ready.Name.String(), "first_reason", reasons[0], "first_object", back[0].object.Object)
	if err := c.handBack(d, back, reasons); err != nil {
		return nil, err
	}
	return keep, nil
}

// appendBound is the latest time an append whose objects checkObjects
// passed at now may run to: before it, none of those objects is older
// than the orphan margin, so the cleanup cannot take one of them while
// the append is in flight. Zero when the orphan cleanup is off.
func (c *Committer) appendBound(now time.Time) time.Time {
	if c.orphanAge <= 0 {
		return time.Time{}
	}
	return now.Add(c.orphanAge / 2)
}

// handBack returns segments to the uploader: it deletes their uploaded_
// markers, which leaves each ready file in the state a fresh one has (ready,
// not uploaded), then fsyncs the directory. The uploader's watch sees the
// marker go and uploads the ready file again at once, to the same object
// name, which writes the object anew and a new marker; the next pass
// appends it. The ready file and its checksum record are not touched.
//
// Crash ordering. Dying before a marker's deletion leaves the segment as
// it was: the next pass checks its object again and hands it back again.
// Dying after it (committer.after-hand-back) leaves a ready file without a
// marker, whose offset is committed past it: the uploader uploads it, and
// the consumer's recovery keeps it (its rule for a ready file past its
// commit that the table does not hold). Nothing was appended, so nothing
// can be doubled; nothing local was deleted, so nothing can be lost.
func (c *Committer) handBack(d config.Dataset, segs []*segment, reasons []string) error {
	for i, s := range segs {
		if err := walfile.Remove(s.marker.Path); err != nil {
			return fmt.Errorf("hand back %s: %w", s.ready.Name, err)
		}
		c.metrics.handedBack.WithLabelValues(d.Name, reasons[i]).Inc()
	}
	if err := walfile.SyncDir(c.dir); err != nil {
		return fmt.Errorf("hand back: %w", err)
	}
	failpoint.Hit(failpoint.CommitterAfterHandBack)
	return nil
}

// keepMissing is for the segments the table already holds, whose local
// copies dropInTable is about to delete: it returns those whose object is
// in the store, whose copies may go. A segment whose object is gone (deleted by hand, or
// by a cleanup that did not know the table named it) is the only copy of
// rows the table names but can no longer read: its ready file, marker and
// checksum record are moved to the quarantine with reason object_missing
// instead, where no role acts on them and the consumer's recovery does
// not delete them, and the move is logged as an error and counted in
// ingestor_committer_files_quarantined_total. docs/operations.md tells how
// to put the object back from it.
//
// A crash before the move leaves the files where they were, and the next
// pass finds the same; a crash during it is the quarantine's own
// (walfile.Quarantine).
func (c *Committer) keepMissing(ctx context.Context, log *slog.Logger, d config.Dataset, done []*segment) (deletable []*segment, err error) {
	if len(done) == 0 {
		return nil, nil
	}
	// Only "missing" matters here: the object is named by the table, so
	// the cleanup keeps it whatever its age.
	checks, err := c.statObjects(ctx, done, time.Now())
	if err != nil {
		return nil, err
	}
	for i, s := range done {
		if checks[i].reason == handBackMissing {
			c.quarantineMissing(log, d, s)
			continue
		}
		deletable = append(deletable, s)
	}
	return deletable, nil
}

// quarantineMissing moves a segment that the table holds but whose object
// is missing into the quarantine, marker and checksum record with it.
func (c *Committer) quarantineMissing(log *slog.Logger, d config.Dataset, s *segment) {
	base := filepath.Base(s.ready.Path)
	why := fmt.Sprintf("the table names object %s, which is not in the store; this file is the only copy of its rows", s.object.Object)
	note := walfile.QuarantineNote{Reason: walfile.ReasonObjectMissing, Error: why, Role: role.Committer, At: time.Now()}
	if err := walfile.Quarantine(c.dir, base, note); err != nil {
		log.Error("quarantine segment whose object is missing; the local copy stays", "file", base, "err", err)
		return
	}
	c.metrics.quarantined.WithLabelValues(d.Name, walfile.ReasonObjectMissing).Inc()
	log.Error("segment in the table but its object is missing: local copy kept in the quarantine (see docs/operations.md, \"Objects missing from the store\")",
		"file", base, "partition", s.ready.Partition, "start_offset", s.ready.Start, "end_offset", s.ready.End,
		"object", s.object.Object, "size", s.object.Size)
}
