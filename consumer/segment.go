package consumer

import (
	"bufio"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
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

// segment is one open active_* Parquet file holding the rows of one Kafka
// partition for one Iceberg partition.
type segment struct {
	name     walfile.Name
	dir      string
	opened   time.Time
	first    int64 // first Kafka offset written
	last     int64 // last Kafka offset written
	rows     int64
	pending  int   // rows in the builder, not yet in a row group
	pendingB int64 // payload bytes of those rows

	f  *os.File
	cw *countingWriter
	w  *pqarrow.FileWriter // nil until the first row group
	// The buffered rows: encoded in buf for a flat table, else in b's
	// Arrow builders.
	buf *rowBuffer
	b   *RowBuilder

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

// writerProps are the Parquet settings of every segment, shared with the
// maintainer's compacted files (parquetfmt.WriterProperties).
func writerProps(mem memory.Allocator) *parquet.WriterProperties {
	return parquetfmt.WriterProperties(mem)
}

// openSegment creates a new active_* file for topic/partition. Its Parquet
// writer, which holds the schema and the footer of every column (a few
// hundred kilobytes for 200 columns), is made when the first row group is
// written: a segment that only buffers rows costs its Arrow builders.
func openSegment(dir, topic string, partition int32, schema *arrow.Schema, partitionJSON string, mem memory.Allocator, now time.Time) (*segment, error) {
	n := walfile.Name{State: walfile.Active, Topic: topic, Partition: partition, UUID: uuid.New()}
	path := filepath.Join(dir, n.String())
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open segment %s: %w", n, err)
	}
	seg := &segment{
		name: n, dir: dir, opened: now, first: -1, last: -1,
		f: f, cw: &countingWriter{f: f},
		schema: schema, partitionJSON: partitionJSON, mem: mem,
	}
	if kinds, flat := flatKinds(schema); flat {
		seg.buf = newRowBuffer(mem, kinds)
	} else {
		seg.b = NewRowBuilder(mem, schema)
	}
	return seg, nil
}

// writer returns the segment's Parquet writer, making it on first use
// with the partition values in the footer's key-value metadata.
func (s *segment) writer() (*pqarrow.FileWriter, error) {
	if s.w != nil {
		return s.w, nil
	}
	w, err := pqarrow.NewFileWriter(s.schema, s.cw, writerProps(s.mem), parquetfmt.ArrowWriterProperties())
	if err != nil {
		return nil, fmt.Errorf("open segment writer %s: %w", s.name, err)
	}
	if err := w.AppendKeyValueMetadata(walfile.MetaPartition, s.partitionJSON); err != nil {
		w.Close()
		return nil, fmt.Errorf("segment %s: set partition metadata: %w", s.name, err)
	}
	if s.identity != "" {
		if err := w.AppendKeyValueMetadata(walfile.MetaTable, s.identity); err != nil {
			w.Close()
			return nil, fmt.Errorf("segment %s: set table metadata: %w", s.name, err)
		}
	}
	s.w = w
	return w, nil
}

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
		return s.write(true)
	}
	return nil
}

// flush writes the buffered rows as one row group and gives back any room
// reserved for the next batch.
func (s *segment) flush() error {
	if s.pending == 0 {
		if s.b != nil {
			s.b.Unsize()
		}
		return nil
	}
	return s.write(false)
}

// presized reports whether the segment holds room reserved for its next
// batch and no rows.
func (s *segment) presized() bool { return s.b != nil && s.b.Presized() }

// batch returns the buffered rows as a record batch, and empties the
// buffer. Encoded rows are replayed into builders made for the batch.
func (s *segment) batch(busy bool) arrow.RecordBatch {
	if s.buf != nil {
		rb := NewRowBuilder(s.mem, s.schema)
		defer rb.Release()
		s.buf.replay(rb)
		s.buf.reset()
		return rb.NewRecordBatch()
	}
	rec := s.b.NewRecordBatch()
	if busy && (s.roomy == nil || s.roomy()) {
		s.b.Presize(rec)
	}
	return rec
}

// write writes the buffered rows as one row group; busy (a full batch)
// presizes the builders for the next one.
func (s *segment) write(busy bool) error {
	if s.pending == 0 {
		return nil
	}
	rec := s.batch(busy)
	defer rec.Release()
	s.pending, s.pendingB = 0, 0
	w, err := s.writer()
	if err != nil {
		return err
	}
	if err := s.cw.buffered(func() error { return w.Write(rec) }); err != nil {
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
	if err := s.flush(); err != nil {
		return walfile.Name{}, err
	}
	s.release()
	w, err := s.writer() // a segment always has rows; this only guards
	if err != nil {
		s.f.Close()
		return walfile.Name{}, err
	}
	if err := s.cw.buffered(w.Close); err != nil {
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
	if s.w != nil {
		s.w.Close()
	}
	s.f.Close()
	return walfile.Remove(filepath.Join(s.dir, s.name.String()))
}
