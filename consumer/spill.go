package consumer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/google/uuid"

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
	data []int // bytes of each string and binary column's values in the file (rowBuffer.data)
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

// readBufs and spillBlocks are shared by the segments that replay a spill
// (a few at a time), so that open segments hold none.
var (
	readBufs    = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 256<<10) }}
	spillBlocks = sync.Pool{New: func() any { b := make([]byte, maxChunk); return &b }}
)

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
	if buf.data != nil {
		if s.data == nil {
			s.data = make([]int, len(buf.data))
		}
		for i, n := range buf.data {
			s.data[i] += n
		}
	}
	return nil
}

// replay appends the spilled rows to rb, in the order they were spilled,
// and empties the file.
func (s *spill) replay(rb *RowBuilder, kinds []colKind) error {
	if s.n == 0 {
		return nil
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read spill file %s: %w", filepath.Base(s.path), err)
	}
	br := readBufs.Get().(*bufio.Reader)
	br.Reset(io.LimitReader(s.f, s.n))
	bp := spillBlocks.Get().(*[]byte)
	err := func() error {
		for {
			l, err := binary.ReadUvarint(br)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if int(l) > cap(*bp) {
				*bp = make([]byte, l)
			}
			block := (*bp)[:l]
			if _, err := io.ReadFull(br, block); err != nil {
				return err
			}
			replayEncoded(rb, kinds, block)
		}
	}()
	br.Reset(nil)
	readBufs.Put(br)
	spillBlocks.Put(bp)
	if err != nil {
		return fmt.Errorf("read spill file %s: %w", filepath.Base(s.path), err)
	}
	// Emptied for the next spill: its rows are in rb now.
	if err := s.f.Truncate(0); err != nil {
		return fmt.Errorf("empty spill file %s: %w", filepath.Base(s.path), err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("empty spill file %s: %w", filepath.Base(s.path), err)
	}
	s.n, s.rows = 0, 0
	clear(s.data)
	return nil
}

// remove closes and deletes the file. A crash before it leaves an active
// file that the next start's recovery deletes.
func (s *spill) remove() error {
	s.f.Close()
	return walfile.Remove(s.path)
}
