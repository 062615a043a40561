package maintainer

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/icewal/ingestor/shared/parquetfmt"
)

// fileSink writes a compacted file's rows in row groups of rowGroupRows:
// a flat table's from column slices through Parquet's column chunk
// writers, as the consumer writes its segments, so a compacted file reads,
// prunes and compresses like them; a nested table's through pqarrow.
type fileSink interface {
	write(rec arrow.RecordBatch) error
	close() (*metadata.FileMetaData, error)
	abort()
}

func newFileSink(w io.Writer, schema *arrow.Schema, mem memory.Allocator) (fileSink, error) {
	if layout, err := parquetfmt.NewLayout(schema); err == nil {
		cw, err := parquetfmt.NewColumnWriter(w, layout, parquetfmt.WriterProperties(mem))
		if err != nil {
			return nil, err
		}
		return &columnSink{w: cw, layout: layout, c: parquetfmt.GetColumns(layout, 0)}, nil
	}
	fw, err := pqarrow.NewFileWriter(schema, w, parquetfmt.WriterProperties(mem), parquetfmt.ArrowWriterProperties())
	if err != nil {
		return nil, err
	}
	return &arrowSink{fw: fw}, nil
}

// columnSink gathers a row group's rows into column slices. The byte
// values point into the records, which it holds until their row group
// is written.
type columnSink struct {
	w      *parquetfmt.ColumnWriter
	layout *parquetfmt.Layout
	c      *parquetfmt.Columns
	held   []arrow.RecordBatch
}

func (s *columnSink) write(rec arrow.RecordBatch) error {
	for off := int64(0); off < rec.NumRows(); {
		m := min(rec.NumRows()-off, int64(rowGroupRows-s.c.Rows))
		part := rec.NewSlice(off, off+m)
		s.held = append(s.held, part)
		if err := s.c.AppendRecord(part); err != nil {
			return err
		}
		off += m
		if s.c.Rows >= rowGroupRows {
			if err := s.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *columnSink) flush() error {
	if s.c.Rows == 0 {
		return nil
	}
	err := s.w.WriteRowGroup(s.c)
	s.release()
	s.c = parquetfmt.GetColumns(s.layout, 0)
	return err
}

func (s *columnSink) release() {
	parquetfmt.PutColumns(s.c)
	for _, r := range s.held {
		r.Release()
	}
	clear(s.held)
	s.held = s.held[:0]
}

func (s *columnSink) close() (*metadata.FileMetaData, error) {
	if err := s.flush(); err != nil {
		s.release()
		return nil, err
	}
	s.release()
	if err := s.w.Close(); err != nil {
		return nil, err
	}
	return s.w.FileMetadata()
}

func (s *columnSink) abort() {
	s.release()
	s.w.Close()
}

// arrowSink writes through pqarrow's buffered row groups.
type arrowSink struct{ fw *pqarrow.FileWriter }

func (s *arrowSink) write(rec arrow.RecordBatch) error {
	for off := int64(0); off < rec.NumRows(); {
		have, err := s.fw.RowGroupNumRows()
		if err != nil {
			return err
		}
		if have >= rowGroupRows {
			s.fw.NewBufferedRowGroup()
			have = 0
		}
		m := min(rec.NumRows()-off, int64(rowGroupRows-have))
		part := rec.NewSlice(off, off+m)
		err = s.fw.WriteBuffered(part)
		part.Release()
		if err != nil {
			return err
		}
		off += m
	}
	return nil
}

func (s *arrowSink) close() (*metadata.FileMetaData, error) {
	if err := s.fw.Close(); err != nil {
		return nil, err
	}
	return s.fw.FileMetadata()
}

func (s *arrowSink) abort() { s.fw.Close() }
