package consumer

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/parquetfmt"
	"github.com/icewal/ingestor/shared/walfile"
)

// spill is where an open segment of a flat table sets its encoded rows
// aside when the memory budget wants them out of memory before they make a
// whole row group: the rowBuffer's chunks, written as they are (blocks:
// a length, then the chunk's bytes). The rows come back, in order and
// before those still in memory, when the segment writes its next row group
// (a full one, or the last at rotation); the file is then emptied for the
// next spill and deleted when the segment closes.
//
// Setting rows aside this way costs one sequential write and no Parquet
// state: an open segment holds no writer, no column chunk and no footer
// until it has a whole row group or rotates, so what it costs is in
// proportion to its rows, not to its columns.
//
// The file is named like an open segment (active_*, a UUID of its own),
// so that the rules of recovery already cover it: active files are always
// deleted at start, since their rows' offsets were never committed and
// Kafka delivers them again. It is therefore never fsynced: a crash loses
// it, which is what recovery would do with it anyway.
type spill struct {
	path string
	f    *os.File
	n    int64 // bytes in the file
	rows int   // rows in the file
}

// createSpill creates the spill file of a segment of topic/partition.
func createSpill(dir, topic string, partition int32) (*spill, error) {
	n := walfile.Name{State: walfile.Active, Topic: topic, Partition: partition, UUID: uuid.New()}
	path := filepath.Join(dir, n.String())
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create spill file %s: %w", n, err)
	}
	return &spill{path: path, f: f}, nil
}

// write appends the rows of buf to the file; the caller then empties buf.
func (s *spill) write(buf *rowBuffer) error {
	bw := writeBufs.Get().(*bufio.Writer)
	bw.Reset(s.f)
	n, err := buf.writeBlocks(bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	bw.Reset(nil)
	writeBufs.Put(bw)
	s.n += n
	if err != nil {
		return fmt.Errorf("spill rows to %s: %w", filepath.Base(s.path), err)
	}
	s.rows += buf.Len()
	return nil
}

// fill reads the spilled rows back into one block of memory from mem
// and puts them, in the order they were spilled, into c from row 0 (c
// holds copies of their byte values; the block is freed before it
// returns). The file is then emptied for the next spill.
func (s *spill) fill(c *parquetfmt.Columns, kinds []colKind, mem memory.Allocator) error {
	if s.n == 0 {
		return nil
	}
	data := mem.Allocate(int(s.n))
	defer mem.Free(data)
	if _, err := s.f.ReadAt(data, 0); err != nil {
		return fmt.Errorf("read spill file %s: %w", filepath.Base(s.path), err)
	}
	row := 0
	for p := data; len(p) > 0; {
		l, n := binary.Uvarint(p)
		if n <= 0 || uint64(len(p)-n) < l {
			return fmt.Errorf("read spill file %s: block of %d bytes cut short", filepath.Base(s.path), l)
		}
		row = fillEncoded(c, kinds, p[n:n+int(l)], row)
		p = p[n+int(l):]
	}
	if row != s.rows {
		return fmt.Errorf("read spill file %s: %d rows, %d were spilled", filepath.Base(s.path), row, s.rows)
	}
	// Emptied for the next spill: its rows are in c now. A crash from
	// here on loses them with the whole segment, as it always would:
	// the active files go at the next start and Kafka delivers again.
	if err := s.f.Truncate(0); err != nil {
		return fmt.Errorf("empty spill file %s: %w", filepath.Base(s.path), err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("empty spill file %s: %w", filepath.Base(s.path), err)
	}
	s.n, s.rows = 0, 0
	return nil
}

// remove closes and deletes the file. A crash before it leaves an active
// file that the next start's recovery deletes.
func (s *spill) remove() error {
	s.f.Close()
	return walfile.Remove(s.path)
}
