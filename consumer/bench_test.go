package consumer

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/jmespath/go-jmespath"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/tables"
)

// The micro-benchmarks of the decode -> map -> Arrow -> Parquet path, per
// core, on the events of the whole-path benchmark (devenv's narrow and
// wide shapes, the same generator as `ingestor bench`):
//
//	go test -run '^$' -bench 'Path' -cpu 1 ./consumer/
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

// pathShape is one shape's table and events.
type pathShape struct {
	name     string
	schema   *iceberg.Schema
	arrow    *arrow.Schema
	mapping  map[string]string
	payloads [][]byte // 2 * pathRows distinct events
	bytes    int64    // their total size
}

var (
	pathShapesOnce sync.Once
	pathShapes     []*pathShape
	pathShapesErr  error
)

// loadPathShapes makes the narrow and wide events once per test binary.
func loadPathShapes(b testing.TB) []*pathShape {
	b.Helper()
	pathShapesOnce.Do(func() {
		ten, err := devenv.NewTenancy(devenv.KeysUniform, 64)
		if err != nil {
			pathShapesErr = err
			return
		}
		base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		for _, name := range []string{devenv.ShapeNarrow, devenv.ShapeWide} {
			sh, err := devenv.ShapeByName(name)
			if err != nil {
				pathShapesErr = err
				return
			}
			schema, err := tables.BuildSchema(sh.Columns)
			if err != nil {
				pathShapesErr = err
				return
			}
			as, err := ArrowSchema(schema)
			if err != nil {
				pathShapesErr = err
				return
			}
			ps := &pathShape{name: name, schema: schema, arrow: as, mapping: sh.Mapping}
			for seq := int64(0); seq < 2*pathRows; seq++ {
				p := sh.Append(nil, devenv.EventID(1, seq), ten.Name(ten.Of(seq)), seq, base.Add(time.Duration(seq)*time.Millisecond))
				ps.payloads = append(ps.payloads, p)
				ps.bytes += int64(len(p))
			}
			pathShapes = append(pathShapes, ps)
		}
	})
	if pathShapesErr != nil {
		b.Fatal(pathShapesErr)
	}
	return pathShapes
}

// processCPU is the CPU time of the whole process, all threads.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rowMeter reports rows/s and rows/cpu-s of a b.Loop benchmark: start it
// just before the loop, report once the last rows are written (a
// pipeline's final flush comes after the loop, and counts).
type rowMeter struct {
	start time.Time
	cpu0  time.Duration
	rows  int64
}

func startRows() *rowMeter { return &rowMeter{start: time.Now(), cpu0: processCPU()} }

func (m *rowMeter) report(b *testing.B) {
	cpu := processCPU() - m.cpu0
	b.ReportMetric(float64(m.rows)/time.Since(m.start).Seconds(), "rows/s")
	if cpu > 0 {
		b.ReportMetric(float64(m.rows)/cpu.Seconds(), "rows/cpu-s")
	}
}

// naivePath is the plain implementation the targets compare with:
// encoding/json into map[string]any, one compiled go-jmespath expression
// per column, then the same conversion, Arrow building and Parquet
// writing as ours.
type naivePath struct {
	cols []naiveColumn
}

type naiveColumn struct {
	expr     *jmespath.JMESPath
	conv     *converter
	required bool
	name     string
}

func newNaivePath(b *testing.B, s *pathShape) *naivePath {
	b.Helper()
	n := &naivePath{}
	for _, f := range s.schema.Fields() {
		conv, err := newConverter(f.Type, f.Name)
		if err != nil {
			b.Fatal(err)
		}
		expr, err := jmespath.Compile(s.mapping[f.Name])
		if err != nil {
			b.Fatal(err)
		}
		n.cols = append(n.cols, naiveColumn{expr: expr, conv: conv, required: f.Required, name: f.Name})
	}
	return n
}

// mapDoc evaluates every column's expression on a decoded document.
func (n *naivePath) mapDoc(doc any) (Row, error) {
	row := make(Row, len(n.cols))
	for i, c := range n.cols {
		v, err := c.expr.Search(doc)
		if err != nil {
			return nil, err
		}
		if v == nil {
			if c.required {
				return nil, fmt.Errorf("column %s missing", c.name)
			}
			continue
		}
		if row[i], err = c.conv.convert(v); err != nil {
			return nil, err
		}
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

// parquetSink writes record batches as a segment does: writerProps
// (zstd, statistics), one row group per batch; it starts a new file every
// 128 row groups, as rotation would, so the footer stays small.
type parquetSink struct {
	b      *testing.B
	schema *arrow.Schema
	w      *pqarrow.FileWriter
	groups int
}

func (p *parquetSink) write(rec arrow.RecordBatch) {
	if p.w == nil {
		w, err := pqarrow.NewFileWriter(p.schema, io.Discard, writerProps(memory.DefaultAllocator, false), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
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

// pipeline is decode -> buffered rows -> a row group every pathRows
// rows. Ours buffers as a segment does: encoded rows replayed into a
// RowBuilder for each row group (both shapes are flat tables). The naive
// path appends every value, nulls included, to a plain arrow-go
// RecordBuilder (AppendRow), as straightforward use of arrow-go does.
// Both write with the segments' Parquet settings.
type pipeline struct {
	buf   *rowBuffer
	plain *array.RecordBuilder // the naive path's
	sink  *parquetSink
	arrow *arrow.Schema
	n     int
}

func newPipeline(b *testing.B, s *pathShape) *pipeline {
	kinds, ok := flatKinds(s.arrow)
	if !ok {
		b.Fatalf("%s: not a flat table", s.name)
	}
	return &pipeline{buf: newRowBuffer(memory.DefaultAllocator, kinds), arrow: s.arrow, sink: &parquetSink{b: b, schema: s.arrow}}
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
	if p.n++; p.n == pathRows {
		p.flush()
	}
}

func (p *pipeline) flush() {
	if p.n == 0 {
		return
	}
	var rec arrow.RecordBatch
	if p.plain != nil {
		rec = p.plain.NewRecordBatch()
	} else {
		rb := NewRowBuilder(memory.DefaultAllocator, p.arrow)
		p.buf.replay(rb)
		p.buf.reset()
		rec = rb.NewRecordBatch()
		rb.Release()
	}
	p.sink.write(rec)
	rec.Release()
	p.n = 0
}

func (p *pipeline) close() {
	p.flush()
	p.sink.close()
	if p.plain != nil {
		p.plain.Release()
	} else {
		p.buf.reset()
	}
}

func decodeAll(b *testing.B, s *pathShape) []Row {
	b.Helper()
	d, err := NewDecoder(s.schema, s.mapping)
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]Row, len(s.payloads))
	for i, p := range s.payloads {
		if rows[i], err = d.Decode(p); err != nil {
			b.Fatal(err)
		}
	}
	return rows
}

// BenchmarkPath measures each stage of the path on its own, for each shape:
//
//	parse_valid   json.Valid: the standard library's scanner, no values
//	parse_skip    this package's parser validating the whole document
//	              without building anything (a fastjson-like tokenizer):
//	              the parse limit
//	decode_naive  encoding/json into map[string]any
//	decode        Decoder.Decode: one pass extracting the mapped paths and
//	              converting them, the whole decode + mapping of ours
//	map_jmespath  go-jmespath + conversion on an encoding/json document
//	map_plain     plain-path lookups + conversion on a built document
//	arrow         RowBuilder.Append of decoded rows, a record batch every 8192
//	parquet       writing those batches (zstd level 1, statistics)
//	e2e_naive     decode_naive + map_jmespath + a plain arrow-go RecordBuilder + parquet
//	e2e           decode + arrow + parquet, what a segment does
func BenchmarkPath(b *testing.B) {
	for _, s := range loadPathShapes(b) {
		b.Run(s.name, func(b *testing.B) {
			benchStages(b, s)
		})
	}
}

func benchStages(b *testing.B, s *pathShape) {
	n := len(s.payloads)
	perRow := s.bytes / int64(n)
	b.Run("parse_valid", func(b *testing.B) {
		b.SetBytes(perRow)
		m := startRows()
		for i := 0; b.Loop(); i++ {
			if !json.Valid(s.payloads[i%n]) {
				b.Fatal("not valid")
			}
			m.rows++
		}
		m.report(b)
	})
	b.Run("parse_skip", func(b *testing.B) {
		b.SetBytes(perRow)
		m := startRows()
		for i := 0; b.Loop(); i++ {
			p := parser{s: string(s.payloads[i%n])}
			p.ws()
			if err := p.skip(); err != nil {
				b.Fatal(err)
			}
			if err := p.end(); err != nil {
				b.Fatal(err)
			}
			m.rows++
		}
		m.report(b)
	})
	b.Run("decode_naive", func(b *testing.B) {
		b.SetBytes(perRow)
		m := startRows()
		for i := 0; b.Loop(); i++ {
			var doc any
			if err := json.Unmarshal(s.payloads[i%n], &doc); err != nil {
				b.Fatal(err)
			}
			m.rows++
		}
		m.report(b)
	})
	b.Run("decode", func(b *testing.B) {
		d, err := NewDecoder(s.schema, s.mapping)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(perRow)
		m := startRows()
		var row Row
		for i := 0; b.Loop(); i++ {
			if row, err = d.DecodeInto(row, s.payloads[i%n]); err != nil {
				b.Fatal(err)
			}
			m.rows++
		}
		m.report(b)
	})
	b.Run("map_jmespath", func(b *testing.B) {
		np := newNaivePath(b, s)
		docs := make([]any, n)
		for i, p := range s.payloads {
			if err := json.Unmarshal(p, &docs[i]); err != nil {
				b.Fatal(err)
			}
		}
		m := startRows()
		for i := 0; b.Loop(); i++ {
			if _, err := np.mapDoc(docs[i%n]); err != nil {
				b.Fatal(err)
			}
			m.rows++
		}
		m.report(b)
	})
	b.Run("map_plain", func(b *testing.B) {
		d, err := NewDecoder(s.schema, s.mapping)
		if err != nil {
			b.Fatal(err)
		}
		docs := make([]any, n)
		for i, p := range s.payloads {
			ps := parser{s: string(p)}
			if docs[i], err = ps.document(); err != nil {
				b.Fatal(err)
			}
		}
		m := startRows()
		for i := 0; b.Loop(); i++ {
			doc := docs[i%n]
			row := make(Row, len(d.cols))
			for c := range d.cols {
				col := &d.cols[c]
				if col.path == nil {
					b.Fatalf("column %s is not mapped by a plain path", col.name)
				}
				v := evalPath(col.path, doc)
				if v == nil {
					continue
				}
				if row[c], err = col.conv.convert(v); err != nil {
					b.Fatal(err)
				}
			}
			m.rows++
		}
		m.report(b)
	})
	b.Run("arrow", func(b *testing.B) {
		rows := decodeAll(b, s)
		rb := NewRowBuilder(memory.DefaultAllocator, s.arrow)
		defer rb.Release()
		m := startRows()
		for i := 0; b.Loop(); i++ {
			rb.Append(rows[i%n])
			if (i+1)%pathRows == 0 {
				rec := rb.NewRecordBatch()
				rb.Presize(rec)
				rec.Release()
			}
			m.rows++
		}
		m.report(b)
	})
	b.Run("parquet", func(b *testing.B) {
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
		m := startRows()
		for i := 0; b.Loop(); i++ {
			sink.write(recs[i%len(recs)])
			m.rows += pathRows
		}
		sink.close()
		m.report(b)
	})
	b.Run("e2e_naive", func(b *testing.B) {
		np := newNaivePath(b, s)
		p := newNaivePipeline(b, s)
		b.SetBytes(perRow)
		m := startRows()
		for i := 0; b.Loop(); i++ {
			row, err := np.decode(s.payloads[i%n])
			if err != nil {
				b.Fatal(err)
			}
			p.add(row)
			m.rows++
		}
		p.close()
		m.report(b)
	})
	b.Run("e2e", func(b *testing.B) {
		d, err := NewDecoder(s.schema, s.mapping)
		if err != nil {
			b.Fatal(err)
		}
		p := newPipeline(b, s)
		b.SetBytes(perRow)
		m := startRows()
		var row Row
		for i := 0; b.Loop(); i++ {
			if row, err = d.DecodeInto(row, s.payloads[i%n]); err != nil {
				b.Fatal(err)
			}
			p.add(row)
			m.rows++
		}
		p.close()
		m.report(b)
	})
}

// BenchmarkPathRatio runs, on the same batches of 8192 events and in the
// same run, the naive path (e2e_naive), ours (e2e) and the parse limit
// (parse_skip), each timed by the process's CPU clock, and reports each
// one's rows/cpu-s with the ratios: x_naive is ours over the naive path,
// of_parse_limit ours over the parse limit.
func BenchmarkPathRatio(b *testing.B) {
	for _, s := range loadPathShapes(b) {
		b.Run(s.name, func(b *testing.B) {
			d, err := NewDecoder(s.schema, s.mapping)
			if err != nil {
				b.Fatal(err)
			}
			np := newNaivePath(b, s)
			ours, naive := newPipeline(b, s), newNaivePipeline(b, s)
			defer ours.close()
			defer naive.close()
			var cpuOurs, cpuNaive, cpuParse time.Duration
			var row Row
			var rows int64
			for batch := 0; b.Loop(); batch++ {
				payloads := s.payloads[(batch%2)*pathRows : (batch%2+1)*pathRows]
				t0 := processCPU()
				for _, p := range payloads {
					row, err := np.decode(p)
					if err != nil {
						b.Fatal(err)
					}
					naive.add(row)
				}
				t1 := processCPU()
				for _, p := range payloads {
					if row, err = d.DecodeInto(row, p); err != nil {
						b.Fatal(err)
					}
					ours.add(row)
				}
				t2 := processCPU()
				for _, p := range payloads {
					ps := parser{s: string(p)}
					ps.ws()
					if err := ps.skip(); err != nil {
						b.Fatal(err)
					}
				}
				t3 := processCPU()
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
