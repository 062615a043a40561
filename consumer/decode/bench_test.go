package decode

import (
	"testing"

	"github.com/icewal/ingestor/internal/testutil"
)

// BenchmarkPath measures the stages of the decode -> Arrow -> Parquet path
// that need this package's parser on its own, for each shape of the
// whole-path benchmark (the consumer's BenchmarkPath has the others):
//
//	parse_skip    this package's parser validating the whole document
//	              without building anything (a fastjson-like tokenizer):
//	              the parse limit
//	map_plain     plain-path lookups + conversion on a built document
//
// Run both with go test -run '^$' -bench Path -cpu 1 ./consumer/...;
// docs/benchmarks.md has the figures.
func BenchmarkPath(b *testing.B) {
	for _, s := range testutil.PathShapes(b) {
		b.Run(s.Name, func(b *testing.B) {
			benchStages(b, s)
		})
	}
}

func benchStages(b *testing.B, s *testutil.PathShape) {
	n := len(s.Payloads)
	perRow := s.Bytes / int64(n)
	b.Run("parse_skip", func(b *testing.B) {
		b.SetBytes(perRow)
		m := testutil.StartRows()
		for i := 0; b.Loop(); i++ {
			p := parser{s: string(s.Payloads[i%n])}
			p.ws()
			if err := p.skip(); err != nil {
				b.Fatal(err)
			}
			if err := p.end(); err != nil {
				b.Fatal(err)
			}
			m.Rows++
		}
		m.Report(b)
	})
	b.Run("map_plain", func(b *testing.B) {
		d, err := New(s.Schema, s.Mapping)
		if err != nil {
			b.Fatal(err)
		}
		docs := make([]any, n)
		for i, p := range s.Payloads {
			ps := parser{s: string(p)}
			if docs[i], err = ps.document(); err != nil {
				b.Fatal(err)
			}
		}
		m := testutil.StartRows()
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
			m.Rows++
		}
		m.Report(b)
	})
}

// BenchmarkVisit measures the one-pass visit of the trie of plain paths
// that Decoder.DecodeInto runs before converting: the parse of decode
// without its conversions. Run it against an older commit as
// docs/benchmarks.md says, with -cpu 1 and the binaries alternated.
func BenchmarkVisit(b *testing.B) {
	for _, s := range testutil.PathShapes(b) {
		b.Run(s.Name, func(b *testing.B) {
			d, err := New(s.Schema, s.Mapping)
			if err != nil {
				b.Fatal(err)
			}
			if d.root == nil {
				b.Fatal("the shape's mapping is not all plain paths")
			}
			n := len(s.Payloads)
			docs := make([]string, n)
			for i, p := range s.Payloads {
				docs[i] = string(p)
			}
			row := make([]any, len(d.cols))
			b.SetBytes(s.Bytes / int64(n))
			b.ReportAllocs()
			m := testutil.StartRows()
			for i := 0; b.Loop(); i++ {
				clear(row)
				p := parser{s: docs[i%n]}
				if err := p.visitDocument(d.root, row); err != nil {
					b.Fatal(err)
				}
				m.Rows++
			}
			m.Report(b)
		})
	}
}
