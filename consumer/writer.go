package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/tables"
	"github.com/icewal/ingestor/shared/walfile"
)

// Rotation triggers, the values of the trigger label.
const (
	TriggerSize     = "size"
	TriggerAge      = "age"
	TriggerCount    = "open_segments"
	TriggerRevoke   = "revoke"
	TriggerShutdown = "shutdown"
	// TriggerMemory rotates the Kafka partition with the most open
	// segments when the live heap stays over the memory budget's mark
	// although the buffered rows went to disk: the fixed cost of many open
	// segments (builders, writers, footers) is what fills it.
	TriggerMemory = "memory"
	// TriggerSchema rotates the other partitions' open segments when a
	// rotation takes a new schema or spec of the table (tableview.go):
	// an open segment holds rows of the old one.
	TriggerSchema = "schema"
)

// commitFunc commits, for one topic, the offset of the next record to read
// of each partition. It returns only when the broker acknowledged it.
type commitFunc func(ctx context.Context, topic string, offsets map[int32]int64) error

// writer turns one dataset's records into WAL segments and rotates them.
// It knows nothing of Kafka but the offsets: the Kafka loop feeds it and
// gives it the function that commits offsets.
type writer struct {
	ds  config.Dataset
	dir string
	log *slog.Logger
	m   *metrics
	dec *recordDecoder
	up  *upserter // nil unless the dataset upserts (upsert.go)
	// mismatchLogged is when a Kafka key that is not its row's key was
	// last logged (once a minute).
	mismatchLogged time.Time
	row            Row    // DecodeInto's scratch row, reused record after record
	key            []byte // the partition key of the record, reused likewise

	// The per-record counters of this dataset, resolved once.
	records, rowsWritten prometheus.Counter
	part                 *partitioner
	schema               *arrow.Schema
	// identity is the walfile.MetaTable record written into every segment.
	identity string
	// view is the table state dec, part, schema and identity come from;
	// next a newer one the table watch found, taken at the next rotation;
	// rotated wakes the watch after a rotation (tableview.go).
	view, next *tableView
	rotated    chan struct{}
	// spend, when set, counts each record's bytes against the WAL
	// volume's byte budget (volumebudget.go).
	spend   func(n int)
	maxSize int64
	maxAge  time.Duration
	maxOpen int
	now     func() time.Time
	commit  commitFunc
	drops   *dropLog
	// deadLetter, when set, receives every dropped record; it must be
	// durable before commit returns for the record's offset.
	deadLetter func(partition int32, offset int64, reason string, err error, payload []byte)

	// mem counts the Arrow and Parquet memory of all open segments (of
	// every dataset of the process); above half of budget, the largest
	// buffered segments are flushed as row groups.
	mem    *budgetAllocator
	budget int64
	heap   func() (live, cycles uint64) // the live heap after the last GC, and the GC count
	// minFlush is the least a segment buffers (JSON bytes) to be flushed
	// for memory.
	minFlush int64
	// closingHook, set by tests only, runs as each segment starts to
	// close (finish.go).
	closingHook func(*segment)

	mu          sync.Mutex
	flushIdle   int       // records to skip before looking for a segment to flush again
	flushIdleAt int64     // the buffered bytes when flushIdle was set
	heapChecked time.Time // when the live heap was last compared with the budget
	shedCycles  uint64    // the GC count at the last memory rotation
	parts       map[int32]*partState
}

// partState is what the writer holds for one Kafka partition.
type partState struct {
	segs map[string]*segment // by partition key
	// next is the offset after the last record processed, -1 if none yet.
	next int64
	// committed is the last offset committed by this writer, -1 if none.
	committed int64
	// since is when the first record not yet covered by a commit arrived.
	since time.Time
	// rolled are the ready files of segments that reached the size limit
	// alone since the last commit, waiting for it (roll.go).
	rolled []walfile.Name
}

func newWriter(ds config.Dataset, wal config.WAL, schema *iceberg.Schema, spec *iceberg.PartitionSpec, log *slog.Logger, m *metrics, mem *budgetAllocator, commit commitFunc) (*writer, error) {
	dec, err := newRecordDecoder(jsonFormat(ds.CustomMapping), schema)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", ds.Name, err)
	}
	part, err := newPartitioner(schema, spec)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", ds.Name, err)
	}
	as, err := ArrowSchema(schema)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", ds.Name, err)
	}
	return &writer{
		ds: ds, dir: wal.Dir, log: log, m: m, dec: dec, part: part, schema: as,
		maxSize: wal.MaxFileSizeBytes, maxAge: wal.MaxFileAge(), maxOpen: wal.MaxOpenSegmentsPerPartition,
		now: time.Now, commit: commit, drops: newDropLog(log, time.Second),
		parts: map[int32]*partState{}, rotated: make(chan struct{}, 1),
		mem: mem, budget: wal.MemoryBudgetBytes, heap: liveHeap,
		minFlush: max(minFlushBytes, minFlushPerColumn*int64(len(schema.Fields()))),
		records:  m.records.WithLabelValues(ds.Name), rowsWritten: m.rowsWritten.WithLabelValues(ds.Name),
	}, nil
}

func (w *writer) state(p int32) *partState {
	st := w.parts[p]
	if st == nil {
		st = &partState{segs: map[string]*segment{}, next: -1, committed: -1}
		w.parts[p] = st
	}
	return st
}

// record processes one Kafka record without a key.
func (w *writer) record(ctx context.Context, partition int32, offset int64, payload []byte) error {
	return w.keyed(ctx, partition, offset, nil, payload)
}

// keyed processes one Kafka record: decode, append to its segment, and
// rotate the partition when a size or count limit is reached. Only WAL
// errors are returned; they are fatal. The key is read only for an upsert
// dataset's tombstones.
func (w *writer) keyed(ctx context.Context, partition int32, offset int64, kafkaKey, payload []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.next != nil {
		w.takeNextLocked() // nothing open: the new view applies at once
	}
	row, isDelete, err := w.decode(kafkaKey, payload)
	var wait *schemaWaitError
	if errors.As(err, &wait) {
		// Not processed: the partition's position and offsets stay
		// before this record, which is read again once its schema is
		// there (schemawait.go).
		return wait
	}
	w.records.Inc()
	st := w.state(partition)
	if st.since.IsZero() {
		st.since = w.now()
	}
	st.next = offset + 1
	if err == nil {
		w.key, err = w.part.appendKey(w.key[:0], row)
		if err != nil {
			err = &decode.Error{Reason: decode.ReasonConvert, Err: fmt.Errorf("partition value: %w", err)}
		}
	}
	if err != nil {
		reason := decode.ReasonNotJSON
		var de *decode.Error
		if errors.As(err, &de) {
			reason = de.Reason
		}
		w.m.dropped.WithLabelValues(w.ds.Name, reason).Inc()
		w.drops.note(w.ds.Topic, partition, offset, reason, err)
		if w.deadLetter != nil {
			w.deadLetter(partition, offset, reason, err, payload)
		}
		return nil
	}

	seg := st.segs[string(w.key)] // no allocation: the compiler looks up the bytes
	if seg == nil {
		vals, err := w.part.values(row)
		if err != nil {
			return fmt.Errorf("partition values: %w", err) // appendKey computed them without an error
		}
		pj, err := tables.EncodePartition(vals)
		if err != nil {
			return fmt.Errorf("encode partition values: %w", err)
		}
		if seg, err = openSegment(w.dir, w.ds.Topic, partition, w.schema, pj, w.mem, w.now()); err != nil {
			return err
		}
		seg.roomy = w.roomy
		seg.identity = w.identity
		st.segs[string(w.key)] = seg
		w.m.segmentsOpen.WithLabelValues(w.ds.Name).Inc()
	}
	if isDelete {
		seg.markDelete()
		w.m.deletes.WithLabelValues(w.ds.Name).Inc()
	}
	if w.up != nil && !w.up.keyMatches(kafkaKey, row) {
		w.m.keyMismatches.WithLabelValues(w.ds.Name).Inc()
		if now := time.Now(); now.Sub(w.mismatchLogged) >= time.Minute {
			w.mismatchLogged = now
			w.log.Warn("upsert record's Kafka key is not its key column: versions of one key may be in several Kafka partitions, where they have no order; the row is written",
				"topic", w.ds.Topic, "partition", partition, "offset", offset, "kafka_key", truncate(string(kafkaKey), 64))
		}
	}
	if err := seg.append(row, offset, len(payload)); err != nil {
		return err
	}
	w.rowsWritten.Inc()
	if w.spend != nil {
		w.spend(len(payload))
	}
	if w.budget > 0 {
		if err := w.keepBudgetLocked(ctx); err != nil {
			return err
		}
	}

	switch {
	case seg.size() >= w.maxSize && len(st.segs) > 1:
		// The neighbours keep their files open to their own age (roll.go).
		return w.rollLocked(st, string(w.key), seg)
	case seg.size() >= w.maxSize:
		return w.rotateLocked(ctx, []int32{partition}, TriggerSize)
	case len(st.segs) > w.maxOpen:
		return w.rotateLocked(ctx, []int32{partition}, TriggerCount)
	}
	return nil
}

// decode decodes one record into a row; isDelete marks the row of an
// upsert dataset's delete (upsert.go).
func (w *writer) decode(kafkaKey, payload []byte) (row Row, isDelete bool, err error) {
	if w.up != nil {
		if payload == nil {
			row, err = w.up.tombstone(kafkaKey)
			return row, err == nil, err
		}
		maxBytes, maxDepth := w.dec.Limits()
		if row, err = w.up.deleteOf(payload, maxBytes, maxDepth); row != nil || err != nil {
			return row, err == nil, err
		}
	}
	row, err = w.dec.DecodeInto(w.row, payload)
	if row != nil {
		w.row = row // a scratch row: the segment copies its values
	}
	return row, false, err
}

// rotateAged rotates every partition whose oldest segment, or oldest
// uncommitted dropped record, has reached the maximum age.
func (w *writer) rotateAged(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	var due []int32
	for p, st := range w.parts {
		if st.next > st.committed && !st.since.IsZero() && now.Sub(st.since) >= w.maxAge {
			due = append(due, p)
		}
	}
	if len(due) == 0 {
		return nil
	}
	return w.rotateLocked(ctx, due, TriggerAge)
}

// rotate rotates the given partitions (all when nil) and commits their
// offsets.
func (w *writer) rotate(ctx context.Context, partitions []int32, trigger string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if partitions == nil {
		for p := range w.parts {
			partitions = append(partitions, p)
		}
	}
	return w.rotateLocked(ctx, partitions, trigger)
}

// rotateLocked closes every open segment of the partitions, makes them
// ready_* files, fsyncs the directory and then commits the offset after
// the last processed record of each partition. All the segments of one
// partition rotate together because one committed offset covers them all.
func (w *writer) rotateLocked(ctx context.Context, partitions []int32, trigger string) error {
	sort.Slice(partitions, func(i, j int) bool { return partitions[i] < partitions[j] })
	// A newer table view waits for a moment when no segment is open:
	// this rotation rotates the other partitions' segments too and takes
	// it. Their rotation is like any other (the same renames, directory
	// sync and offset commit below, the same failpoints): a crash
	// anywhere in it leaves what a crash in any rotation leaves, and the
	// view itself is never on disk, so the next start simply loads the
	// table again.
	var extra []int32
	if w.next != nil {
		extra = w.partitionsWithSegmentsLocked(partitions)
	}
	all := append(partitions[:len(partitions):len(partitions)], extra...)
	offsets := map[int32]int64{}
	var (
		renamed int
		segs    []closing
	)
	for i, p := range all {
		st := w.parts[p]
		if st == nil {
			continue
		}
		why := trigger
		if i >= len(partitions) {
			why = TriggerSchema
		}
		for key, seg := range st.segs {
			segs = append(segs, closing{st: st, key: key, seg: seg, trigger: why})
		}
		renamed += len(st.rolled) // the rolled files' renames want the same fsync
		if st.next > st.committed {
			offsets[p] = st.next
		}
	}
	// The segments of all these partitions close side by side
	// (finish.go). A crash while they do leaves active files and some
	// ready ones, all with uncommitted offsets: recovery deletes them.
	n, err := w.finishAll(segs)
	renamed += n
	if err != nil {
		return err
	}
	if renamed > 0 {
		// The renames must be durable before the offset commit: once the
		// commit lands, the ready files are the rows' only copy.
		failpoint.Hit(failpoint.ConsumerBeforeDirSync)
		if err := walfile.SyncDir(w.dir); err != nil {
			return err
		}
		w.m.lastRotateAge.WithLabelValues(w.ds.Name).Set(float64(w.now().Unix()))
		w.kickRefresh()
	}
	w.takeNextLocked()
	if len(offsets) == 0 {
		return nil
	}
	// A crash here, after the renames and before the commit, leaves ready
	// files with uncommitted offsets: recovery deletes them.
	failpoint.Hit(failpoint.ConsumerAfterRename)
	if err := w.commit(ctx, w.ds.Topic, offsets); err != nil {
		return fmt.Errorf("commit offsets of %s after rotation: %w", w.ds.Topic, err)
	}
	failpoint.Hit(failpoint.ConsumerAfterCommit)
	w.m.commits.WithLabelValues(w.ds.Name).Inc()
	for p, off := range offsets {
		st := w.parts[p]
		st.committed = off
		st.since = time.Time{}
		st.rolled = nil
	}
	return nil
}

// discard drops the open segments of partitions that were lost without a
// chance to commit: their records are delivered again to whoever owns the
// partitions now.
func (w *writer) discard(partitions []int32) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, p := range partitions {
		st := w.parts[p]
		if st == nil {
			continue
		}
		for _, seg := range st.segs {
			errs = append(errs, seg.discard())
			w.m.segmentsOpen.WithLabelValues(w.ds.Name).Dec()
		}
		errs = append(errs, w.dropRolled(st))
		delete(w.parts, p)
	}
	return errors.Join(errs...)
}

// forget drops the state of partitions after they were rotated and revoked.
func (w *writer) forget(partitions []int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range partitions {
		if st := w.parts[p]; st != nil && len(st.segs) == 0 {
			delete(w.parts, p)
		}
	}
}

// dropLog logs dropped records at most once per interval per reason, with
// the number suppressed since the last line.
type dropLog struct {
	log      *slog.Logger
	every    time.Duration
	mu       sync.Mutex
	last     map[string]time.Time
	suppress map[string]int
}

func newDropLog(log *slog.Logger, every time.Duration) *dropLog {
	return &dropLog{log: log, every: every, last: map[string]time.Time{}, suppress: map[string]int{}}
}

func (d *dropLog) note(topic string, partition int32, offset int64, reason string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	if now.Sub(d.last[reason]) < d.every {
		d.suppress[reason]++
		return
	}
	d.log.Warn("record dropped", "topic", topic, "partition", partition, "offset", offset,
		"reason", reason, "error", err.Error(), "suppressed", d.suppress[reason])
	d.last[reason] = now
	d.suppress[reason] = 0
}

// The memory budget (ingestion.wal.memoryBudgetBytes) is kept in two
// steps. The rows buffered in memory (encoded rows, Arrow builders) are
// counted exactly (mem): above flushMark of the budget, the largest
// buffered segments take their rows out of memory, a flat table's spilled
// encoded to disk, a nested table's written as row groups. A flat table's
// open segment then costs little besides its rows: no file, writer or
// footer until it has a whole row group. What open segments still cost
// besides their rows (a nested table's builders and writers, the writers
// of segments past their first row group, the segments' own structs) is
// seen in the live heap, which the collector measures: when it stays
// above shedMark of the budget, the Kafka partition with the most open
// segments rotates (TriggerMemory), which frees all of them.
const (
	flushMark = 1.0 / 4  // of the budget: buffered rows above it are flushed
	flushTo   = 3.0 / 16 // down to this
	shedMark  = 1.0 / 2  // of the budget: live heap above it sheds segments
	// A nested table's segment is flushed for memory only once it buffers
	// 4 KiB of JSON per column (64 KiB at least): each row group adds
	// about 0.85 KB of footer per column, held until the file closes, so a
	// row group of a few rows costs more than its rows free.
	minFlushPerColumn = 4 << 10
	minFlushBytes     = 64 << 10
	// A flat table's segment spills its encoded rows once they hold
	// 16 KiB: a spill adds nothing to memory, so even small segments may
	// go (1,600 open segments of 100 wide rows each are 200 MB), and each
	// spill stays one write of a few whole chunks.
	minSpillBytes = 16 << 10
	// heapCheckEvery is how often the live heap is compared with the budget.
	heapCheckEvery = 100 * time.Millisecond
)

// roomy reports whether a busy segment may reserve room for its next
// batch: only while the buffered rows are under half the flush mark, as
// a reservation the budget would take back at once is only work.
func (w *writer) roomy() bool {
	return w.budget <= 0 || float64(w.mem.Current()) < flushMark/2*float64(w.budget)
}

// keepBudgetLocked runs after each appended record.
func (w *writer) keepBudgetLocked(ctx context.Context) error {
	cur := w.mem.Current()
	if w.flushIdle > 0 && cur < w.flushIdleAt+w.budget/32 {
		w.flushIdle--
	} else if float64(cur) > flushMark*float64(w.budget) {
		w.flushIdle = 0
		flushed, err := w.flushLargestLocked()
		if err != nil {
			return err
		}
		if !flushed {
			// Nothing large enough to flush: look again after 1,024
			// records or 1/32 of the budget more, rather than sort the
			// segments at every record.
			w.flushIdle, w.flushIdleAt = 1024, cur
		}
	}
	if now := w.now(); now.Sub(w.heapChecked) >= heapCheckEvery {
		w.heapChecked = now
		return w.shedLocked(ctx)
	}
	return nil
}

// flushLargestLocked writes the buffered rows of the largest open segments
// as row groups until the Arrow memory falls to flushTo of the budget:
// the rows go to disk early, the files stay open. Segments holding room
// reserved for their next batch and no rows give that room back last. It
// reports whether it flushed any rows.
func (w *writer) flushLargestLocked() (bool, error) {
	var segs []*segment
	for _, st := range w.parts {
		for _, seg := range st.segs {
			if seg.buf != nil && seg.buf.held >= minSpillBytes ||
				seg.buf == nil && (seg.pendingB >= w.minFlush || (seg.pending == 0 && seg.presized())) {
				segs = append(segs, seg)
			}
		}
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].inMemory() > segs[j].inMemory() })
	target := int64(flushTo * float64(w.budget))
	flushed := false
	for _, seg := range segs {
		if w.mem.Current() <= target {
			break
		}
		held := seg.inMemory()
		if err := seg.flush(); err != nil {
			return flushed, err
		}
		if held > 0 && seg.inMemory() < held {
			flushed = true
			w.m.budgetFlushes.WithLabelValues(w.ds.Name).Inc()
		}
	}
	return flushed, nil
}

// shedLocked rotates Kafka partitions, those with the most open segments
// first, when the live heap is above shedMark of the budget: as many as
// it takes to bring the open segments down in proportion to 80 % of the
// mark. It acts at most once per garbage collection (each collection
// measures the live heap anew), and only when partitions hold more than
// one segment on average: with fewer, the memory is not the segments' to
// give back.
func (w *writer) shedLocked(ctx context.Context) error {
	live, cycles := w.heap()
	mark := shedMark * float64(w.budget)
	if float64(live) <= mark || cycles == w.shedCycles {
		return nil
	}
	type part struct {
		p    int32
		segs int
	}
	var parts []part
	open := 0
	for p, st := range w.parts {
		open += len(st.segs)
		if len(st.segs) > 0 {
			parts = append(parts, part{p, len(st.segs)})
		}
	}
	if open <= len(w.parts) {
		return nil
	}
	w.shedCycles = cycles
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].segs != parts[j].segs {
			return parts[i].segs > parts[j].segs
		}
		return parts[i].p < parts[j].p
	})
	free := int(float64(open) * (1 - 0.8*mark/float64(live)))
	var due []int32
	for _, pt := range parts {
		if free <= 0 && len(due) > 0 {
			break
		}
		due = append(due, pt.p)
		free -= pt.segs
	}
	w.log.Info("memory budget: rotating the Kafka partitions with the most open segments",
		"dataset", w.ds.Name, "partitions", due, "open_segments", open,
		"live_heap_bytes", live, "budget_bytes", w.budget)
	return w.rotateLocked(ctx, due, TriggerMemory)
}
