package consumer

import (
	"errors"
	"path/filepath"

	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/walfile"
)

// Skew. All the segments of a Kafka partition rotate together, because
// one committed offset covers them all. When one Iceberg partition of a
// Kafka partition (a giant tenant) fills its segment to
// ingestion.wal.maxFileSizeBytes long before its neighbours reach their
// age, rotating the whole Kafka partition would cut every neighbour into
// a small file. Instead the giant's segment rolls alone (rollLocked): it
// becomes a ready_* file, a new segment takes the giant's next rows, and
// the partition's offset is not committed. The rolled files wait, ready,
// for the partition's next rotation (by age, count, memory, revoke or
// shutdown, or by size once the giant is alone), whose directory fsync
// and offset commit cover them with the neighbours' files: one committed
// offset for the whole window, as before.
//
// Crash ordering. A rolled file's rows all arrived after the partition's
// last offset commit, so until the next one lands, the committed offset is
// at or below the file's first offset:
//   - a crash before that commit leaves a ready file that recovery deletes
//     (ready_*, commit <= start), after noting its object as an orphan in
//     case the uploader stored it; Kafka delivers its rows again;
//   - the committer adds no ready file before Kafka's committed offset
//     passes its last offset (committer/doc.go, "Offsets first"), so a
//     rolled file never reaches the table before its commit;
//   - the commit that covers it comes after the rotation's directory fsync,
//     which makes its rename and checksum record durable.
//
// A partition lost without a revoke (lost) deletes its rolled files at
// once, as recovery would: another member writes their rows again, and a
// later commit of this directory for the partition, once it is assigned
// back, would otherwise cover them too.

// rollLocked finishes the segment of st under key alone, into a ready
// file whose offset stays uncommitted until the partition rotates.
func (w *writer) rollLocked(st *partState, key string, seg *segment) error {
	ready, err := seg.finish()
	if err != nil {
		return err
	}
	size := seg.cw.n
	w.order.wrote(ready)
	delete(st.segs, key)
	st.rolled = append(st.rolled, ready)
	// A crash here, or at any point before the partition's next offset
	// commit, leaves the rolled file ready with its offsets uncommitted:
	// recovery deletes it and Kafka delivers its rows again.
	failpoint.Hit(failpoint.ConsumerAfterRoll)
	w.m.segmentsOpen.WithLabelValues(w.ds.Name).Dec()
	w.m.rotated.WithLabelValues(w.ds.Name, TriggerSize).Inc()
	w.m.bytesRotated.WithLabelValues(w.ds.Name).Add(float64(size))
	w.log.Debug("segment rolled alone", "dataset", w.ds.Name, "file", ready.String(), "trigger", TriggerSize)
	return nil
}

// dropRolled deletes the rolled files of a partition lost before their
// offset commit, as recovery deletes an uncommitted ready file: the note
// of its object first, then the file, its marker and its checksum record.
func (w *writer) dropRolled(st *partState) error {
	var errs []error
	for _, n := range st.rolled {
		f := walfile.File{Name: n, Path: filepath.Join(w.dir, n.String())}
		if err := noteOrphan(w.dir, w.ds, f); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs,
			walfile.Remove(f.Path),
			walfile.Remove(filepath.Join(w.dir, n.As(walfile.Uploaded).String())),
			walfile.Remove(filepath.Join(w.dir, walfile.SumName(n.UUID))))
	}
	st.rolled = nil
	return errors.Join(errs...)
}
