package consumer

// Reading committed records only (kgo.ReadCommitted) leaves gaps in a
// partition's offsets: the records of aborted transactions are never
// returned, and every transaction ends with a control record (its commit
// or abort marker) that holds no event. The client is told to return the
// control records (kgo.KeepControlRecords) so that the consumer sees the
// last offset of every decided transaction and can commit past it: a
// partition whose last records are a transaction's marker then shows no
// lag once its offsets are committed. Without that, the committed offset
// would stop at the last data record, one or more behind the end.
//
// The gaps change nothing else: a segment is named by the offsets of its
// first and last rows, a committed offset is the offset after the last
// record processed (a data record or a marker), and recovery compares a
// file's range with the committed offset, which lies past every file of
// the partition whatever the gaps inside or between them.

// skip advances a partition past an offset that holds no row, a control
// record, as record advances it past a dropped one: the next offset
// commit of the partition covers it. If the process dies before that
// commit, the marker is read again from the committed offset and skipped
// again; nothing was written for it.
func (w *writer) skip(partition int32, offset int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.state(partition)
	if st.since.IsZero() {
		st.since = w.now()
	}
	st.next = offset + 1
}

// lagOf is the number of records of a partition that the consumer may
// still read after the record at offset: up to the last stable offset,
// which with read-committed isolation is where the readable records end
// (the high watermark when no transaction is open).
func lagOf(highWatermark, lastStable, offset int64) int64 {
	end := highWatermark
	if lastStable >= 0 && lastStable < end {
		end = lastStable
	}
	return max(end-offset-1, 0)
}
