package maintainer

import (
	"bytes"
	"context"
	"io/fs"
	"path"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// wholeReadMaxBytes is the largest input file compaction reads with one
// request. A Parquet reader on an object store asks for the object, then
// for its footer's length, its footer and each column chunk, each a
// request of its own: about 18 for a segment of the 15-column narrow
// table, whatever its size. For the small files compaction merges, that
// is the whole cost (measured in the soak: a pass over 2,066 files of
// about 15 KB took two minutes on the emulator, which serves one request
// at a time). Read whole, they are one request each; the scan reads two
// files at a time, so at most twice this is held at once.
const wholeReadMaxBytes = 16 << 20

// wholeReads returns tbl with a file IO that reads each object of sizes
// no larger than wholeReadMaxBytes in one request and serves the reader
// from memory. Other objects, and writes, pass through. The table is for
// scans only: it has no catalog to commit to.
func wholeReads(tbl *table.Table, sizes map[string]int64) *table.Table {
	return wrapFS(nil, tbl, func(_ context.Context, inner icebergio.IO) icebergio.IO {
		rf, ok := inner.(icebergio.ReadFileIO)
		if !ok {
			return inner
		}
		return &wholeReadIO{ReadFileIO: rf, sizes: sizes}
	})
}

// wholeReadIO is a file IO whose Open reads a small known object whole.
type wholeReadIO struct {
	icebergio.ReadFileIO
	sizes map[string]int64 // location -> size, from the compaction plan
}

// Open opens name; an object of the plan no larger than wholeReadMaxBytes
// is read with one request and served from memory.
func (w *wholeReadIO) Open(name string) (icebergio.File, error) {
	size, ok := w.sizes[name]
	if !ok || size > wholeReadMaxBytes {
		return w.ReadFileIO.Open(name)
	}
	b, err := w.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &memFile{Reader: bytes.NewReader(b), name: path.Base(name), size: int64(len(b))}, nil
}

// memFile is an object read whole, as an icebergio.File.
type memFile struct {
	*bytes.Reader
	name string
	size int64
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f, nil }
func (f *memFile) Close() error               { return nil }
func (f *memFile) Name() string               { return f.name }
func (f *memFile) Size() int64                { return f.size }
func (f *memFile) Mode() fs.FileMode          { return 0o444 }
func (f *memFile) ModTime() time.Time         { return time.Time{} }
func (f *memFile) IsDir() bool                { return false }
func (f *memFile) Sys() any                   { return nil }
