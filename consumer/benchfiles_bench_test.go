package consumer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/icewal/ingestor/internal/testutil"
	"github.com/icewal/ingestor/shared/parquetfmt"
)

// benchFileRows is how many rows each of the 64 files of the default
// `ingestor bench` run holds: 200,000 wide or 1,000,000 narrow events
// over 64 tenants, each tenant's rows in one 30-second file.
var benchFileRows = map[string]int{"wide": 200_000 / 64, "narrow": 1_000_000 / 64}

// BenchmarkBenchFiles splits what the Parquet files of a default `ingestor
// bench` run cost, per row, between the segment's own code and the
// libraries it writes through:
//
//	go test -run '^$' -bench 'BenchFiles' -cpu 1 ./consumer/
//
// Each file holds the rows one of the bench's segments holds (benchFileRows).
// The stages:
//
//	file     what a rotation does: the buffered rows replayed into column
//	         slices, the column chunk writers with the segments' settings
//	         (zstd level 1), the footer
//	fill     the replay into column slices alone (ours)
//	columns  the filled slices through arrow-go's column chunk writers and
//	         the footer, pages not compressed (arrow-go, with our choice of
//	         dictionaries and the values handed to it)
//	zstd     arrow-go's zstd codec (klauspost/compress at level 1) over the
//	         pages the file stage compresses, one call a page, as the
//	         writer makes them
//
// It reports cpu-µs/row beside rows/cpu-s, and zstd its input in MB per
// CPU-second. With INGESTOR_BENCH_PAGES set to a directory, the zstd
// stage also writes its pages there, one file each, for a reference
// compressor on the same bytes (for example `zstd -b1 -r DIR`).
func BenchmarkBenchFiles(b *testing.B) {
	for _, s := range loadPathShapes(b) {
		perFile := benchFileRows[s.Name]
		kinds, _ := flatKinds(s.arrow)
		layout, err := parquetfmt.NewLayout(s.arrow)
		if err != nil {
			b.Fatal(err)
		}
		var bufs []*rowBuffer
		rows := decodeAll(b, s)
		for i := 0; i+perFile <= len(rows); i += perFile {
			buf := newRowBuffer(memory.DefaultAllocator, kinds)
			for _, r := range rows[i : i+perFile] {
				buf.append(r)
			}
			bufs = append(bufs, buf)
		}
		writeFile := func(out *byteCounter, c *parquetfmt.Columns, props *parquet.WriterProperties) {
			w, err := parquetfmt.NewColumnWriter(out, layout, props)
			if err != nil {
				b.Fatal(err)
			}
			if err := w.WriteRowGroup(c); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
		fillAll := func() []*parquetfmt.Columns {
			cols := make([]*parquetfmt.Columns, len(bufs))
			for i, buf := range bufs {
				cols[i] = parquetfmt.GetColumns(layout, buf.Len())
				buf.fill(cols[i], 0)
			}
			return cols
		}
		b.Run(s.Name+"/file", func(b *testing.B) {
			var out byteCounter
			m := testutil.StartRows()
			for i := 0; b.Loop(); i++ {
				buf := bufs[i%len(bufs)]
				c := parquetfmt.GetColumns(layout, buf.Len())
				buf.fill(c, 0)
				writeFile(&out, c, writerProps(memory.DefaultAllocator, false))
				parquetfmt.PutColumns(c)
				m.Rows += int64(buf.Len())
			}
			reportPerRow(b, m)
			reportBytes(b, out.n, m.Rows)
		})
		b.Run(s.Name+"/fill", func(b *testing.B) {
			m := testutil.StartRows()
			for i := 0; b.Loop(); i++ {
				buf := bufs[i%len(bufs)]
				c := parquetfmt.GetColumns(layout, buf.Len())
				buf.fill(c, 0)
				parquetfmt.PutColumns(c)
				m.Rows += int64(buf.Len())
			}
			reportPerRow(b, m)
		})
		b.Run(s.Name+"/columns", func(b *testing.B) {
			cols := fillAll()
			// The segments' settings, each column's codec set to none
			// (both shapes are flat: a column's path is its name).
			var none []parquet.WriterProperty
			for _, f := range s.arrow.Fields() {
				none = append(none, parquet.WithCompressionFor(f.Name, compress.Codecs.Uncompressed))
			}
			props := parquetfmt.WriterProperties(memory.DefaultAllocator, none...)
			var out byteCounter
			m := testutil.StartRows()
			for i := 0; b.Loop(); i++ {
				c := cols[i%len(cols)]
				writeFile(&out, c, props)
				m.Rows += int64(c.Rows)
			}
			reportPerRow(b, m)
			reportBytes(b, out.n, m.Rows)
		})
		b.Run(s.Name+"/zstd", func(b *testing.B) {
			pages := recordPages(b, func() {
				var out byteCounter
				for _, c := range fillAll() {
					writeFile(&out, c, writerProps(memory.DefaultAllocator, false))
				}
			})
			if dir := os.Getenv("INGESTOR_BENCH_PAGES"); dir != "" {
				dir = filepath.Join(dir, s.Name)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				for i, p := range pages {
					if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("page-%05d", i)), p, 0o644); err != nil {
						b.Fatal(err)
					}
				}
			}
			codec, err := compress.GetCodec(compress.Codecs.Zstd)
			if err != nil {
				b.Fatal(err)
			}
			var in, out, total int64
			for _, p := range pages {
				in += int64(len(p))
			}
			var dst []byte
			m := testutil.StartRows()
			for b.Loop() {
				out = 0
				for _, p := range pages {
					dst = codec.EncodeLevel(dst[:0], p, parquetfmt.CompressionLevel)
					out += int64(len(dst))
				}
				m.Rows += int64(len(bufs) * perFile)
				total += in
			}
			if cpu := m.CPUSeconds(); cpu > 0 {
				b.ReportMetric(float64(total)/cpu/1e6, "in-MB/cpu-s")
			}
			reportPerRow(b, m)
			b.ReportMetric(float64(in)/float64(out), "ratio")
		})
	}
}

// reportPerRow reports rows/cpu-s and its inverse, cpu-µs/row.
func reportPerRow(b *testing.B, m *testutil.RowMeter) {
	b.Helper()
	if cpu := m.CPUSeconds(); m.Rows > 0 && cpu > 0 {
		b.ReportMetric(cpu*1e6/float64(m.Rows), "cpu-µs/row")
	}
	m.Report(b)
}

// pageRecorder is the zstd codec, keeping a copy of each page it is given.
type pageRecorder struct {
	compress.Codec
	pages *[][]byte
}

func (r pageRecorder) EncodeLevel(dst, src []byte, level int) []byte {
	*r.pages = append(*r.pages, bytes.Clone(src))
	return r.Codec.EncodeLevel(dst, src, level)
}

// recordPages runs write with the zstd codec recording the pages given to
// it, then puts the codec back. The codecs are a process-wide table that
// writers read when they are made, so nothing else may write meanwhile
// (benchmarks run one at a time).
func recordPages(b *testing.B, write func()) [][]byte {
	b.Helper()
	orig, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		b.Fatal(err)
	}
	var pages [][]byte
	compress.RegisterCodec(compress.Codecs.Zstd, pageRecorder{Codec: orig, pages: &pages})
	defer compress.RegisterCodec(compress.Codecs.Zstd, orig)
	write()
	if len(pages) == 0 {
		b.Fatal("the writer compressed no page")
	}
	return pages
}
