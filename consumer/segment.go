package consumer

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/parquetfmt"
	"github.com/icewal/ingestor/shared/walfile"
)

// flushRows is the number of buffered rows turned into one Parquet row
// group. Rows are buffered in Arrow builders and written as a row group
// when this many have arrived, so memory per open segment stays bounded.
const flushRows = 16384

// flushBytes bounds the JSON payload bytes buffered per segment before a
// row group is written, for wide rows.
const flushBytes = 32 << 20

// countingWriter counts the bytes written to the segment file, which is the
// size rotation compares with ingestion.wal.maxFileSizeBytes. While a row
// group or the footer is written it goes through a buffer from writeBufs:
// the Parquet writer writes each page header and page on its own, and a
// 200-column row group is hundreds of small writes.
type countingWriter struct {
	f  *os.File
	bw *bufio.Writer // set during buffered
	n  int64
	// crc is the CRC32C of the bytes written so far: the segment's
	// checksum record (walfile.Sum) once the footer is written.
	crc uint32
}

// writeBufs holds the write buffers of the segments being written (a few
// at a time), so that thousands of open segments do not each hold one.
var writeBufs = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 256<<10) }}

func (w *countingWriter) Write(p []byte) (int, error) {
	var n int
	var err error
	if w.bw != nil {
		n, err = w.bw.Write(p)
	} else {
		n, err = w.f.Write(p)
	}
	w.n += int64(n)
	w.crc = crc32.Update(w.crc, walfile.Castagnoli, p[:n])
	return n, err
}

// buffered runs fn with writes buffered, and flushes them to the file.
func (w *countingWriter) buffered(fn func() error) error {
	bw := writeBufs.Get().(*bufio.Writer)
	bw.Reset(w.f)
	w.bw = bw
	err := fn()
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	w.bw = nil
	bw.Reset(nil)
	writeBufs.Put(bw)
	return err
}

// segment holds the rows of one Kafka partition for one Iceberg
// partition until rotation makes them a ready_* Parquet file.
//
// A flat table's segment keeps its rows encoded (rowBuffer) and, when the
// memory budget asks, sets them aside on disk (spill); it has no file and
// no Parquet writer until it holds a whole row group (flushRows rows or
// flushBytes of JSON) or rotates. Only then is its active_* Parquet file
// created and its writer made, and the writer is kept until rotation:
// segments busy enough to fill row groups are few, and a writer costs
// them little beside their rows. A table with nested columns buffers its
// rows in Arrow builders, and the budget writes them out as row groups.
type segment struct {
	name   walfile.Name // the active_* name of the Parquet file; its UUID names the ready file
	dir    string
	opened time.Time
	first  int64 // first Kafka offset written
	last   int64 // last Kafka offset written
	rows   int64
	// deletes are the positions of an upsert dataset's delete rows,
	// written into the footer (walfile.MetaDeletes) at finish.
	deletes []int64
	// after, for an upsert dataset, is the last row offset of the
	// partition that another WAL directory wrote before this one took
	// the partition over, -1 if none (walfile.MetaUpsertAfter).
	after    int64
	pending  int   // rows not yet in a row group (in memory or spilled)
	pendingB int64 // payload bytes of those rows

	f  *os.File // nil until the first row group
	cw *countingWriter
	// The file's writer, nil until the first row group: a flat table's
	// writes from column slices (cols), a nested table's through
	// pqarrow (w). Nested tables keep pqarrow because the column writer
	// does not write repetition levels; the benchmarked shapes and most
	// event tables are flat.
	cols *parquetfmt.ColumnWriter
	w    *pqarrow.FileWriter
	// The buffered rows: encoded in buf for a flat table, else in b's
	// Arrow builders.
	buf *rowBuffer
	b   *RowBuilder
	sp  *spill // a flat table's rows set aside for the budget; nil until the first spill
	// layout is a flat table's Parquet schema and footer metadata,
	// shared by the table's segments (layoutOf).
	layout *parquetfmt.Layout

	schema        *arrow.Schema
	partitionJSON string
	// identity is the walfile.MetaTable record of the table the rows are
	// written for; empty in tests that write without a table.
	identity string
	mem      memory.Allocator
	// roomy, when set, tells whether memory allows reserving room for
	// the next batch (the budget is far from its flush mark).
	roomy func() bool
}

// smallFileRows is the row count under which a file written in one row
// group at rotation has no dictionaries: with a few hundred rows a
// dictionary page saves little or nothing over zstd on the plain values
// (the wide benchmark's 100-row files are 5 % smaller without), and it
// costs a page and a zstd frame per column: a quarter of such a file's
// CPU (BenchmarkSegmentFile).
const smallFileRows = 1024

// writerProps are the Parquet settings of every segment, shared with the
// maintainer's compacted files (parquetfmt.WriterProperties).
//
// small turns dictionaries off (smallFileRows). empty names columns that
// hold no value in the whole file (one written in a single row group at
// rotation): they are written without a dictionary and uncompressed.
// Their chunk is a few bytes of definition levels, and a dictionary page
// and two zstd frames for it were most of what a small file of a sparse,
// wide table cost to write.
func writerProps(mem memory.Allocator, small bool, empty ...string) *parquet.WriterProperties {
	opts := make([]parquet.WriterProperty, 0, 1+2*len(empty))
	if small {
		opts = append(opts, parquet.WithDictionaryDefault(false))
	}
	for _, name := range empty {
		opts = append(opts, parquet.WithDictionaryFor(name, false), parquet.WithCompressionFor(name, compress.Codecs.Uncompressed))
	}
	return parquetfmt.WriterProperties(mem, opts...)
}

// openSegment starts a segment for topic/partition. Nothing is on disk
// yet: its active_* file is created with its first row group.
func openSegment(dir, topic string, partition int32, schema *arrow.Schema, partitionJSON string, mem memory.Allocator, now time.Time) (*segment, error) {
	n := walfile.Name{State: walfile.Active, Topic: topic, Partition: partition, UUID: uuid.New()}
	seg := &segment{
		name: n, dir: dir, opened: now, first: -1, last: -1, after: -1,
		cw:     &countingWriter{},
		schema: schema, partitionJSON: partitionJSON, mem: mem,
	}
	if kinds, flat := flatKinds(schema); flat {
		layout, err := layoutOf(schema)
		if err != nil {
			return nil, fmt.Errorf("segment %s: %w", n, err)
		}
		seg.buf, seg.layout = newRowBuffer(mem, kinds), layout
	} else {
		seg.b = NewRowBuilder(mem, schema)
	}
	return seg, nil
}

// create creates the segment's active_* file. A crash from here until
// the rename to ready_* leaves an active file, which recovery deletes:
// its rows' offsets were never committed, Kafka delivers them again.
func (s *segment) create() error {
	if s.f != nil {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(s.dir, s.name.String()), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open segment %s: %w", s.name, err)
	}
	s.f, s.cw.f = f, f
	return nil
}

// writer returns a nested table's Parquet writer, making it on first
// use with the partition values in the footer's key-value metadata;
// small (a file of one row group under smallFileRows) turns its
// dictionaries off.
func (s *segment) writer(small bool) (*pqarrow.FileWriter, error) {
	if s.w != nil {
		return s.w, nil
	}
	if err := s.create(); err != nil {
		return nil, err
	}
	w, err := pqarrow.NewFileWriter(s.schema, s.cw, writerProps(s.mem, small), parquetfmt.ArrowWriterProperties())
	if err != nil {
		return nil, fmt.Errorf("open segment writer %s: %w", s.name, err)
	}
	if err := s.footerMeta(w.AppendKeyValueMetadata); err != nil {
		w.Close()
		return nil, err
	}
	s.w = w
	return w, nil
}

// columnWriter returns a flat table's Parquet writer, making it on first
// use. only, when set, is the file's one row group: columns it holds no
// value of are written plainly (writerProps).
func (s *segment) columnWriter(only *parquetfmt.Columns) (*parquetfmt.ColumnWriter, error) {
	if s.cols != nil {
		return s.cols, nil
	}
	if err := s.create(); err != nil {
		return nil, err
	}
	var empty []string
	if only != nil {
		for i := range only.Cols {
			if !slices.Contains(only.Cols[i].Defs, 1) {
				empty = append(empty, s.layout.Path(i))
			}
		}
	}
	w, err := parquetfmt.NewColumnWriter(s.cw, s.layout, writerProps(s.mem, only != nil && only.Rows < smallFileRows, empty...))
	if err != nil {
		return nil, fmt.Errorf("open segment writer %s: %w", s.name, err)
	}
	if err := s.footerMeta(w.AppendKeyValueMetadata); err != nil {
		w.Close()
		return nil, err
	}
	s.cols = w
	return w, nil
}

// footerMeta adds the partition values and the table to the footer.
func (s *segment) footerMeta(add func(key, value string) error) error {
	if err := add(walfile.MetaPartition, s.partitionJSON); err != nil {
		return fmt.Errorf("segment %s: set partition metadata: %w", s.name, err)
	}
	if s.identity != "" {
		if err := add(walfile.MetaTable, s.identity); err != nil {
			return fmt.Errorf("segment %s: set table metadata: %w", s.name, err)
		}
	}
	return nil
}

// markDelete marks the row appended next as a delete row.
func (s *segment) markDelete() { s.deletes = append(s.deletes, s.rows) }

// append adds one decoded row at the given Kafka offset.
func (s *segment) append(row Row, offset int64, payloadBytes int) error {
	if s.buf != nil {
		s.buf.append(row)
	} else {
		s.b.Append(row)
	}
	if s.first < 0 {
		s.first = offset
	}
	s.last = offset
	s.rows++
	s.pending++
	s.pendingB += int64(payloadBytes)
	if s.pending >= flushRows || s.pendingB >= flushBytes {
		return s.write(true, false)
	}
	return nil
}

// flush takes the buffered rows out of memory for the budget: a flat
// table's are spilled, still encoded, to the segment's spill file; a
// nested table's are written as a row group. It also gives back any room
// reserved for the next batch.
func (s *segment) flush() error {
	if s.buf != nil {
		if s.buf.Len() == 0 {
			return nil
		}
		if s.sp == nil {
			sp, err := createSpill(s.dir, s.name.Topic, s.name.Partition)
			if err != nil {
				return err
			}
			s.sp = sp
		}
		if err := s.sp.write(s.buf); err != nil {
			return err
		}
		s.buf.reset()
		return nil
	}
	if s.pending == 0 {
		s.b.Unsize()
		return nil
	}
	return s.write(false, false)
}

// inMemory is what flushing the segment would take out of memory: a flat
// table's encoded rows, a nested table's JSON bytes buffered (its Arrow
// size is about proportional).
func (s *segment) inMemory() int64 {
	if s.buf != nil {
		return s.buf.held
	}
	return s.pendingB
}

// presized reports whether the segment holds room reserved for its next
// batch and no rows.
func (s *segment) presized() bool { return s.b != nil && s.b.Presized() }

// batch returns a nested table's rows not yet in a row group as a record
// batch, and empties its builders.
func (s *segment) batch(busy bool) arrow.RecordBatch {
	rec := s.b.NewRecordBatch()
	if busy && (s.roomy == nil || s.roomy()) {
		s.b.Presize(rec)
	}
	return rec
}

// write writes the rows not yet in a row group as one row group; busy (a
// full batch) presizes a nested table's builders for the next one, last
// says no row group follows.
func (s *segment) write(busy, last bool) error {
	if s.pending == 0 {
		return nil
	}
	if s.buf != nil {
		return s.writeColumns(last)
	}
	rec := s.batch(busy)
	defer rec.Release()
	s.pending, s.pendingB = 0, 0
	w, err := s.writer(last && rec.NumRows() < smallFileRows)
	if err != nil {
		return err
	}
	if err := s.cw.buffered(func() error { return w.Write(rec) }); err != nil {
		return fmt.Errorf("write row group to %s: %w", s.name, err)
	}
	return nil
}

// writeColumns writes a flat table's pending rows, the spilled ones
// first, as one row group: replayed from their encoding into column
// slices (one level and one copy a value, byte values laid out column
// by column), one WriteBatch a column. The slices come from a pool
// shared by all segments, outside the memory budget: the segments
// writing a row group hold one for the time of the write, and the pool
// keeps a few between writes (parquetfmt.SetKeptBlockBytes bounds their
// copies). The buffered rows go as soon as they are replayed, before the
// write: the row group holds copies of them, so a segment never holds
// both for long.
//
// A crash at any point here loses only what an active file always
// loses: the rows are in no ready file yet, their offsets are not
// committed, and Kafka delivers them again after recovery deletes the
// active files. An error here (the replay, the file, the write) is
// fatal to the consumer, which stops with the segment's rows gone from
// memory and its offsets uncommitted, so that they come again from
// Kafka.
func (s *segment) writeColumns(last bool) error {
	c := parquetfmt.GetColumns(s.layout, s.pending)
	defer parquetfmt.PutColumns(c)
	if s.sp != nil {
		if err := s.sp.fill(c, s.buf.kinds, s.mem); err != nil {
			return err
		}
	}
	got := s.buf.fill(c, s.pending-s.buf.Len())
	s.buf.reset()
	if got != s.pending {
		return fmt.Errorf("segment %s: %d rows replayed, %d pending", s.name, got, s.pending)
	}
	s.pending, s.pendingB = 0, 0
	var only *parquetfmt.Columns
	if last && s.cols == nil {
		only = c
	}
	w, err := s.columnWriter(only)
	if err != nil {
		return err
	}
	err = s.cw.buffered(func() error { return w.WriteRowGroup(c) })
	if err != nil {
		return fmt.Errorf("write row group to %s: %w", s.name, err)
	}
	return nil
}

// size estimates the file's size: the bytes written so far plus a quarter
// of the JSON bytes still buffered (zstd Parquet is usually several times
// smaller than the JSON it came from).
func (s *segment) size() int64 {
	return s.cw.n + s.pendingB/4
}

// finish writes the footer, fsyncs and closes the file, and renames it to
// its ready_* name. The caller fsyncs the directory once for all segments
// of the rotation before committing the offset.
func (s *segment) finish() (walfile.Name, error) {
	if err := s.write(false, true); err != nil {
		s.close()
		return walfile.Name{}, err
	}
	s.release()
	// Every row is in the Parquet file now: the spill file goes. A crash
	// from here to the rename leaves the active Parquet file, which
	// recovery deletes, as it would the spill file.
	if s.sp != nil {
		if err := s.sp.remove(); err != nil {
			s.close()
			return walfile.Name{}, err
		}
		s.sp = nil
	}
	closeFile := func() error { return errors.New("no rows") } // a segment always has rows; this only guards
	addMeta := func(string, string) error { return nil }
	if s.cols != nil {
		closeFile, addMeta = s.cols.Close, s.cols.AppendKeyValueMetadata
	} else if s.w != nil {
		closeFile, addMeta = s.w.Close, s.w.AppendKeyValueMetadata
	}
	// The delete rows go into the footer with the rows: the file is
	// ready with both or, after a crash, with neither.
	if len(s.deletes) > 0 {
		if err := addMeta(walfile.MetaDeletes, walfile.EncodeRows(s.deletes)); err != nil {
			s.close()
			return walfile.Name{}, fmt.Errorf("segment %s: set delete rows: %w", s.name, err)
		}
	}
	if s.after >= 0 {
		if err := addMeta(walfile.MetaUpsertAfter, strconv.FormatInt(s.after, 10)); err != nil {
			s.close()
			return walfile.Name{}, fmt.Errorf("segment %s: set upsert order: %w", s.name, err)
		}
	}
	if err := s.cw.buffered(closeFile); err != nil {
		s.f.Close()
		return walfile.Name{}, fmt.Errorf("close segment %s: %w", s.name, err)
	}
	if err := s.f.Sync(); err != nil {
		s.f.Close()
		return walfile.Name{}, fmt.Errorf("sync segment %s: %w", s.name, err)
	}
	if err := s.f.Close(); err != nil {
		return walfile.Name{}, fmt.Errorf("close segment file %s: %w", s.name, err)
	}
	// The writer holds the footer's metadata, hundreds of KB for a wide
	// table, until it is garbage: it goes now, not when the rotation of
	// the segment's partition (and of every other partition closed
	// beside it: finish.go) is over.
	s.w, s.cols, s.f = nil, nil, nil
	// The checksum record goes before the rename, so that no ready file
	// exists without one. A crash after it and before the rename leaves
	// the active file, which recovery deletes, and a stray record, which
	// walfile.RemoveStraySums deletes at the next start.
	if err := walfile.WriteSum(s.dir, s.name.UUID, walfile.Sum{Size: s.cw.n, CRC32C: s.cw.crc}); err != nil {
		return walfile.Name{}, fmt.Errorf("checksum of segment %s: %w", s.name, err)
	}
	failpoint.Hit(failpoint.ConsumerBeforeRename)
	ready := s.name
	ready.State, ready.Start, ready.End = walfile.Ready, s.first, s.last
	// A crash after this rename and before the offset commit leaves a
	// ready file that recovery deletes, since Kafka delivers its rows again.
	if err := os.Rename(filepath.Join(s.dir, s.name.String()), filepath.Join(s.dir, ready.String())); err != nil {
		return walfile.Name{}, fmt.Errorf("rename segment %s: %w", s.name, err)
	}
	return ready, nil
}

// close closes the Parquet file and the spill file after an error, which
// is fatal: the next start's recovery deletes both active files.
func (s *segment) close() {
	if s.f != nil {
		s.f.Close()
	}
	if s.sp != nil {
		s.sp.f.Close()
	}
}

// release frees the buffered rows' memory.
func (s *segment) release() {
	if s.buf != nil {
		s.buf.reset()
	} else {
		s.b.Release()
	}
}

// discard closes and deletes the active file without making it ready: its
// rows will be delivered again by Kafka (a lost partition).
func (s *segment) discard() error {
	s.release()
	var errs []error
	if s.sp != nil {
		errs = append(errs, s.sp.remove())
	}
	if s.w != nil {
		s.w.Close()
	}
	if s.f != nil {
		s.f.Close()
		errs = append(errs, walfile.Remove(filepath.Join(s.dir, s.name.String())))
	}
	return errors.Join(errs...)
}
