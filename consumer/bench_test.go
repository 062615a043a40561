package consumer

import (
	"encoding/json"

	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/jmespath/go-jmespath"

	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/internal/testutil"
	"github.com/icewal/ingestor/shared/parquetfmt"
)

// The micro-benchmarks of the decode -> map -> Arrow -> Parquet path, per
// core, on the events of the whole-path benchmark (devenv's narrow and
// wide shapes, the same generator as `ingestor bench`):
//
//	go test -run '^$' -bench 'Path' -cpu 1 ./consumer/...
//
// (consumer/decode has the stages that need the parser's insides:
// parse_skip, the parse limit, and map_plain.)
//
// Every stage reports rows/s (wall time) and rows/cpu-s (CPU time of the
// whole process, the garbage collector's included, from getrusage), so
// figures do not depend on how many cores the collector found idle.
// BenchmarkPathRatio runs the naive path, ours and the parse limit on the
// same rows in one run and reports the ratios. docs/benchmarks.md has the
// figures.

// pathRows is the number of rows per Arrow record batch and Parquet row
// group, as in a WAL segment (flushRows).
const pathRows = flushRows

// pathShape is one shape's table and events, with its Arrow schema.
type pathShape struct {
	*testutil.PathShape
	arrow *arrow.Schema
}

// loadPathShapes gives the events of testutil.PathShapes with their Arrow
// schemas.
func loadPathShapes(b testing.TB) []*pathShape {
	b.Helper()
	if testutil.PathRows != pathRows {
		b.Fatalf("testutil.PathRows is %d, segments flush every %d rows", testutil.PathRows, pathRows)
	}
	var out []*pathShape
	for _, s := range testutil.PathShapes(b) {
		as, err := ArrowSchema(s.Schema)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, &pathShape{PathShape: s, arrow: as})
	}
	return out
}

// naivePath is the plain implementation the targets compare with:
// encoding/json into map[string]any, one compiled go-jmespath expression
// per column, then the same conversion, Arrow building and Parquet
// writing as ours.
type naivePath struct {
	exprs []*jmespath.JMESPath // one per column
	conv  *decode.Decoder      // converts the selected values
}

func newNaivePath(b *testing.B, s *pathShape) *naivePath {
	b.Helper()
	conv, err := decode.New(s.Schema, s.Mapping)
	if err != nil {
		b.Fatal(err)
	}
	n := &naivePath{conv: conv}
	for _, f := range s.Schema.Fields() {
		expr, err := jmespath.Compile(s.Mapping[f.Name])
		if err != nil {
			b.Fatal(err)
		}
		n.exprs = append(n.exprs, expr)
	}
	return n
}

// mapDoc evaluates every column's expression on a decoded document.
func (n *naivePath) mapDoc(doc any) (Row, error) {
	row := make(Row, len(n.exprs))
	for i, expr := range n.exprs {
		v, err := expr.Search(doc)
		if err != nil {
			return nil, err
		}
		row[i] = v
	}
	if err := n.conv.Convert(row); err != nil {
		return nil, err
	}
	return row, nil
}

func (n *naivePath) decode(payload []byte) (Row, error) {
	var doc any
	if err := json.Unmarshal(payload, &doc); err != nil {
		return nil, err
	}
	return n.mapDoc(doc)
}

// parquetSink writes record batches through pqarrow, as segments did
// before they wrote from column slices: writerProps (zstd, statistics),
// one row group per batch; it starts a new file every 128 row groups, as
// rotation would, so the footer stays small.
type parquetSink struct {
	b      *testing.B
	schema *arrow.Schema
	w      *pqarrow.FileWriter
	groups int
	out    byteCounter
}

func (p *parquetSink) write(rec arrow.RecordBatch) {
	if p.w == nil {
		w, err := pqarrow.NewFileWriter(p.schema, &p.out, writerProps(memory.DefaultAllocator, false), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			p.b.Fatal(err)
		}
		p.w = w
	}
	if err := p.w.Write(rec); err != nil {
		p.b.Fatal(err)
	}
	if p.groups++; p.groups == 128 {
		p.close()
	}
}

func (p *parquetSink) close() {
	if p.w == nil {
		return
	}
	if err := p.w.Close(); err != nil {
		p.b.Fatal(err)
	}
	p.w, p.groups = nil, 0
}

// columnSink writes encoded rows as a segment does: replayed into column
// slices, one row group per rowBuffer through parquetfmt.ColumnWriter,
// a new file every 128 row groups.
type columnSink struct {
	b      *testing.B
	layout *parquetfmt.Layout
	w      *parquetfmt.ColumnWriter
	groups int
	out    byteCounter
}

func newColumnSink(b *testing.B, s *pathShape) *columnSink {
	layout, err := parquetfmt.NewLayout(s.arrow)
	if err != nil {
		b.Fatal(err)
	}
	return &columnSink{b: b, layout: layout}
}

func (p *columnSink) write(buf *rowBuffer) {
	if p.w == nil {
		w, err := parquetfmt.NewColumnWriter(&p.out, p.layout, writerProps(memory.DefaultAllocator, false))
		if err != nil {
			p.b.Fatal(err)
		}
		p.w = w
	}
	c := parquetfmt.GetColumns(p.layout, buf.Len())
	buf.fill(c, 0)
	if err := p.w.WriteRowGroup(c); err != nil {
		p.b.Fatal(err)
	}
	parquetfmt.PutColumns(c)
	if p.groups++; p.groups == 128 {
		p.close()
	}
}

func (p *columnSink) close() {
	if p.w == nil {
		return
	}
	if err := p.w.Close(); err != nil {
		p.b.Fatal(err)
	}
	p.w, p.groups = nil, 0
}

// byteCounter counts what a sink writes: bytes/row.
type byteCounter struct{ n int64 }

func (c *byteCounter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// reportBytes reports the Parquet bytes per row written.
func reportBytes(b *testing.B, n int64, rows int64) {
	if rows > 0 {
		b.ReportMetric(float64(n)/float64(rows), "bytes/row")
	}
}

// pipeline is decode -> buffered rows -> a row group every pathRows
// rows. Ours buffers as a segment does: encoded rows replayed into
// column slices for each row group (both shapes are flat tables). The
// naive path appends every value, nulls included, to a plain arrow-go
// RecordBuilder (AppendRow), as straightforward use of arrow-go does,
// and writes through pqarrow. Both write with the segments' Parquet
// settings.
type pipeline struct {
	buf   *rowBuffer
	cols  *columnSink
	plain *array.RecordBuilder // the naive path's
	sink  *parquetSink
	n     int
	rows  int64
}

func newPipeline(b *testing.B, s *pathShape) *pipeline {
	kinds, ok := flatKinds(s.arrow)
	if !ok {
		b.Fatalf("%s: not a flat table", s.Name)
	}
	return &pipeline{buf: newRowBuffer(memory.DefaultAllocator, kinds), cols: newColumnSink(b, s)}
}

func newNaivePipeline(b *testing.B, s *pathShape) *pipeline {
	return &pipeline{plain: array.NewRecordBuilder(memory.DefaultAllocator, s.arrow), sink: &parquetSink{b: b, schema: s.arrow}}
}

func (p *pipeline) add(row Row) {
	if p.plain != nil {
		AppendRow(p.plain, row)
	} else {
		p.buf.append(row)
	}
	p.rows++
	if p.n++; p.n == pathRows {
		p.flush()
	}
}

func (p *pipeline) flush() {
	if p.n == 0 {
		return
	}
	if p.plain != nil {
		rec := p.plain.NewRecordBatch()
		p.sink.write(rec)
		rec.Release()
	} else {
		p.cols.write(p.buf)
		p.buf.reset()
	}
	p.n = 0
}

func (p *pipeline) close(b *testing.B) {
	p.flush()
	if p.plain != nil {
		p.sink.close()
		p.plain.Release()
		reportBytes(b, p.sink.out.n, p.rows)
	} else {
		p.cols.close()
		reportBytes(b, p.cols.out.n, p.rows)
	}
}

func decodeAll(b *testing.B, s *pathShape) []Row {
	b.Helper()
	d, err := decode.New(s.Schema, s.Mapping)
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]Row, len(s.Payloads))
	for i, p := range s.Payloads {
		if rows[i], err = d.DecodeInto(nil, p); err != nil {
			b.Fatal(err)
		}
	}
	return rows
}

// BenchmarkPath measures each stage of the path on its own, for each shape:
//
//	parse_valid   json.Valid: the standard library's scanner, no values
//	decode_naive  encoding/json into map[string]any
//	decode        Decoder.Decode: one pass extracting the mapped paths and
//	              converting them, the whole decode + mapping of ours
//	map_jmespath  go-jmespath + conversion on an encoding/json document
//	arrow            RowBuilder.Append of decoded rows, a record batch every
//	                 pathRows (what a nested table's segment buffers in)
//	parquet          a flat table's buffered rows to Parquet, what a segment
//	                 does: replay into column slices, column chunk writers
//	                 (zstd level 1, statistics)
//	parquet_pqarrow  the record batches of arrow written through pqarrow, the
//	                 writer flat tables had before (building them not counted)
//	e2e_naive        decode_naive + map_jmespath + a plain arrow-go
//	                 RecordBuilder + parquet_pqarrow
//	e2e              decode + row buffer + parquet, what a segment does
func BenchmarkPath(b *testing.B) {
	for _, s := range loadPathShapes(b) {
		b.Run(s.Name, func(b *testing.B) {
			benchStages(b, s)
		})
	}
}

func benchStages(b *testing.B, s *pathShape) {
	n := len(s.Payloads)
	perRow := s.Bytes / int64(n)
	b.Run("parse_valid", func(b *testing.B) {
		b.SetBytes(perRow)
		m := testutil.StartRows()
		for i := 0; b.Loop(); i++ {
			if !json.Valid(s.Payloads[i%n]) {
				b.Fatal("not valid")
			}
			m.Rows++
		}
		m.Report(b)
	})
	b.Run("decode_naive", func(b *testing.B) {
		b.SetBytes(perRow)
		m := testutil.StartRows()
		for i := 0; b.Loop(); i++ {
			var doc any
			if err := json.Unmarshal(s.Payloads[i%n], &doc); err != nil {
				b.Fatal(err)
			}
			m.Rows++
		}
		m.Report(b)
	})
	b.Run("decode", func(b *testing.B) {
		d, err := decode.New(s.Schema, s.Mapping)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(perRow)
		m := testutil.StartRows()
		var row Row
		for i := 0; b.Loop(); i++ {
			if row, err = d.DecodeInto(row, s.Payloads[i%n]); err != nil {
				b.Fatal(err)
			}
			m.Rows++
		}
		m.Report(b)
	})
	b.Run("map_jmespath", func(b *testing.B) {
		np := newNaivePath(b, s)
		docs := make([]any, n)
		for i, p := range s.Payloads {
			if err := json.Unmarshal(p, &docs[i]); err != nil {
				b.Fatal(err)
			}
		}
		m := testutil.StartRows()
		for i := 0; b.Loop(); i++ {
			if _, err := np.mapDoc(docs[i%n]); err != nil {
				b.Fatal(err)
			}
			m.Rows++
		}
		m.Report(b)
	})
	b.Run("arrow", func(b *testing.B) {
		rows := decodeAll(b, s)
		rb := NewRowBuilder(memory.DefaultAllocator, s.arrow)
		defer rb.Release()
		m := testutil.StartRows()
		for i := 0; b.Loop(); i++ {
			rb.Append(rows[i%n])
			if (i+1)%pathRows == 0 {
				rec := rb.NewRecordBatch()
				rb.Presize(rec)
				rec.Release()
			}
			m.Rows++
		}
		m.Report(b)
	})
	b.Run("parquet", func(b *testing.B) {
		kinds, _ := flatKinds(s.arrow)
		var bufs []*rowBuffer
		for i, r := range decodeAll(b, s) {
			if i%pathRows == 0 {
				bufs = append(bufs, newRowBuffer(memory.DefaultAllocator, kinds))
			}
			bufs[len(bufs)-1].append(r)
		}
		bufs = bufs[:len(s.Payloads)/pathRows] // whole row groups only
		sink := newColumnSink(b, s)
		m := testutil.StartRows()
		for i := 0; b.Loop(); i++ {
			sink.write(bufs[i%len(bufs)])
			m.Rows += pathRows
		}
		sink.close()
		m.Report(b)
		reportBytes(b, sink.out.n, m.Rows)
	})
	b.Run("parquet_pqarrow", func(b *testing.B) {
		rows := decodeAll(b, s)
		rb := NewRowBuilder(memory.DefaultAllocator, s.arrow)
		var recs []arrow.RecordBatch
		for i, r := range rows {
			rb.Append(r)
			if (i+1)%pathRows == 0 {
				recs = append(recs, rb.NewRecordBatch())
			}
		}
		rb.Release()
		defer func() {
			for _, r := range recs {
				r.Release()
			}
		}()
		sink := &parquetSink{b: b, schema: s.arrow}
		m := testutil.StartRows()
		for i := 0; b.Loop(); i++ {
			sink.write(recs[i%len(recs)])
			m.Rows += pathRows
		}
		sink.close()
		m.Report(b)
		reportBytes(b, sink.out.n, m.Rows)
	})
	b.Run("e2e_naive", func(b *testing.B) {
		np := newNaivePath(b, s)
		p := newNaivePipeline(b, s)
		b.SetBytes(perRow)
		m := testutil.StartRows()
		for i := 0; b.Loop(); i++ {
			row, err := np.decode(s.Payloads[i%n])
			if err != nil {
				b.Fatal(err)
			}
			p.add(row)
			m.Rows++
		}
		m.Report(b)
		p.close(b)
	})
	b.Run("e2e", func(b *testing.B) {
		d, err := decode.New(s.Schema, s.Mapping)
		if err != nil {
			b.Fatal(err)
		}
		p := newPipeline(b, s)
		b.SetBytes(perRow)
		m := testutil.StartRows()
		var row Row
		for i := 0; b.Loop(); i++ {
			if row, err = d.DecodeInto(row, s.Payloads[i%n]); err != nil {
				b.Fatal(err)
			}
			p.add(row)
			m.Rows++
		}
		m.Report(b)
		p.close(b)
	})
}

// BenchmarkPathRatio runs, on the same batches of pathRows events and in the
// same run, the naive path (e2e_naive), ours (e2e) and the parse limit
// (a decoder with nothing mapped, which validates the whole document as
// decode's parse_skip does), each timed by the process's CPU clock, and reports each
// one's rows/cpu-s with the ratios: x_naive is ours over the naive path,
// of_parse_limit ours over the parse limit.
func BenchmarkPathRatio(b *testing.B) {
	for _, s := range loadPathShapes(b) {
		b.Run(s.Name, func(b *testing.B) {
			d, err := decode.New(s.Schema, s.Mapping)
			if err != nil {
				b.Fatal(err)
			}
			// The parse limit: a decoder with nothing mapped validates
			// the whole document and builds nothing.
			limit, err := decode.New(iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "unmapped", Type: iceberg.PrimitiveTypes.String}), nil)
			if err != nil {
				b.Fatal(err)
			}
			scratch := make(Row, 1)
			np := newNaivePath(b, s)
			ours, naive := newPipeline(b, s), newNaivePipeline(b, s)
			defer ours.close(b)
			defer naive.close(b)
			var cpuOurs, cpuNaive, cpuParse time.Duration
			var row Row
			var rows int64
			for batch := 0; b.Loop(); batch++ {
				payloads := s.Payloads[(batch%2)*pathRows : (batch%2+1)*pathRows]
				t0 := testutil.ProcessCPU()
				for _, p := range payloads {
					row, err := np.decode(p)
					if err != nil {
						b.Fatal(err)
					}
					naive.add(row)
				}
				t1 := testutil.ProcessCPU()
				for _, p := range payloads {
					if row, err = d.DecodeInto(row, p); err != nil {
						b.Fatal(err)
					}
					ours.add(row)
				}
				t2 := testutil.ProcessCPU()
				for _, p := range payloads {
					if _, err := limit.DecodeInto(scratch, p); err != nil {
						b.Fatal(err)
					}
				}
				t3 := testutil.ProcessCPU()
				cpuNaive += t1 - t0
				cpuOurs += t2 - t1
				cpuParse += t3 - t2
				rows += int64(len(payloads))
			}
			perCPU := func(d time.Duration) float64 { return float64(rows) / d.Seconds() }
			b.ReportMetric(perCPU(cpuNaive), "naive_rows/cpu-s")
			b.ReportMetric(perCPU(cpuOurs), "rows/cpu-s")
			b.ReportMetric(perCPU(cpuParse), "parse_rows/cpu-s")
			b.ReportMetric(cpuNaive.Seconds()/cpuOurs.Seconds(), "x_naive")
			b.ReportMetric(cpuParse.Seconds()/cpuOurs.Seconds(), "of_parse_limit")
		})
	}
}
