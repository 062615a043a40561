package parquetfmt

import (
	"encoding/base64"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Layout is the Parquet form of a flat table's Arrow schema: the schema
// pqarrow would write (field ids, logical types) and the key-value
// metadata it would store (the Arrow schema under ARROW:schema), made
// once and shared by every file of the table. A reader cannot tell a
// file written from Columns from one written by pqarrow.
type Layout struct {
	schema *schema.Schema
	leaves []leaf
	meta   metadata.KeyValueMetadata
}

// NewLayout returns the layout of sc, whose columns must all be flat
// (no struct, list or map): nested tables keep pqarrow.
func NewLayout(sc *arrow.Schema) (*Layout, error) {
	ps, err := pqarrow.ToParquet(sc, nil, ArrowWriterProperties())
	if err != nil {
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	leaves, err := leavesOf(ps)
	if err != nil {
		return nil, err
	}
	// As pqarrow.NewFileWriter does: the Arrow schema's own metadata,
	// then the serialized schema (a flat schema has no list element
	// names for pqarrow to normalize).
	meta := make(metadata.KeyValueMetadata, 0, sc.Metadata().Len()+1)
	for i, k := range sc.Metadata().Keys() {
		meta.Append(k, sc.Metadata().Values()[i])
	}
	meta.Append("ARROW:schema", base64.StdEncoding.EncodeToString(flight.SerializeSchema(sc, memory.DefaultAllocator)))
	return &Layout{schema: ps, leaves: leaves, meta: meta}, nil
}

// Path is the Parquet column path of column i (its name, flat).
func (l *Layout) Path(i int) string { return l.leaves[i].path }

// ColumnWriter writes a Parquet file of a flat table from Columns, one
// row group each, through arrow-go's column chunk writers.
type ColumnWriter struct {
	layout *Layout
	fw     *file.Writer
	// sample is scratch for the dictionary decision (useDict).
	sample []uint64
	dict   dictScratch
	// dictLimit is the dictionary size from which a chunk is plain.
	dictLimit int
}

// NewColumnWriter starts a file of layout on w with props (WriterProperties).
func NewColumnWriter(w io.Writer, layout *Layout, props *parquet.WriterProperties) (*ColumnWriter, error) {
	meta := make(metadata.KeyValueMetadata, 0, len(layout.meta)+2)
	for _, kv := range layout.meta {
		meta.Append(kv.Key, *kv.Value)
	}
	fw, err := file.NewParquetWriterWithError(w, layout.schema.Root(), file.WithWriterProps(props), file.WithWriteMetadata(meta))
	if err != nil {
		return nil, err
	}
	return &ColumnWriter{layout: layout, fw: fw, dictLimit: int(props.DictionaryPageSizeLimit())}, nil
}

// AppendKeyValueMetadata adds a key to the footer's metadata.
func (w *ColumnWriter) AppendKeyValueMetadata(key, value string) error {
	return w.fw.AppendKeyValueMetadata(key, value)
}

// Dictionary choice per column chunk. arrow-go hashes every value of a
// dictionary column into its memo table and falls back to plain only
// when the dictionary passes DictPageLimit: on a wide table of ids and
// free text that hashing was most of the write. A chunk is written plain
// from the start when a dictionary cannot pay: it has few values (its
// dictionary page and zstd frame cost about what they save), or an even
// sample of its values is nearly all distinct.
const (
	dictMinValues = 1024
	dictSample    = 512
	// dictMaxDistinct is the share of distinct values in the sample (in
	// 1/100) from which a chunk is written plain.
	dictMaxDistinct = 90
)

var sampleSeed = maphash.MakeSeed()

// useDict reports whether col's chunk should keep its dictionary: it
// has enough values, its sample is not nearly all distinct, and the
// dictionary its sample predicts stays under the writer's dictionary
// limit (past it arrow-go would fall back to plain after hashing the
// values into it). The distinct count is the GEE estimate (Charikar et
// al.): values seen once in the sample stand for sqrt(n/sample) each.
func (w *ColumnWriter) useDict(col *Column, t parquet.Type) bool {
	n := col.present(t)
	if n < dictMinValues || t == parquet.Types.Boolean {
		return false
	}
	step := n / dictSample
	s := w.sample[:0]
	size := 0 // bytes of the sampled values
	for k := 0; k < dictSample; k++ {
		j := k * step
		var h uint64
		switch t {
		case parquet.Types.Int32:
			h, size = uint64(col.Int32[j]), size+4
		case parquet.Types.Int64:
			h, size = uint64(col.Int64[j]), size+8
		case parquet.Types.Float:
			h, size = uint64(math.Float32bits(col.Float32[j])), size+4
		case parquet.Types.Double:
			h, size = math.Float64bits(col.Float64[j]), size+8
		case parquet.Types.ByteArray:
			h, size = maphash.Bytes(sampleSeed, col.Bytes[j]), size+len(col.Bytes[j])+4
		case parquet.Types.FixedLenByteArray:
			h, size = maphash.Bytes(sampleSeed, col.Fixed[j]), size+len(col.Fixed[j])
		}
		s = append(s, h)
	}
	slices.Sort(s)
	distinct, once := 0, 0
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && s[j] == s[i] {
			j++
		}
		distinct++
		if j == i+1 {
			once++
		}
		i = j
	}
	w.sample = s[:0]
	if distinct*100 >= dictMaxDistinct*len(s) {
		return false
	}
	estimate := math.Sqrt(float64(n)/float64(len(s)))*float64(once) + float64(distinct-once)
	return estimate*float64(size)/float64(len(s)) < float64(w.dictLimit)
}

// WriteRowGroup writes c as one row group: one WriteBatch per column
// chunk. c is not changed except that its converted fixed-length values
// are made visible (Column.Fixed).
func (w *ColumnWriter) WriteRowGroup(c *Columns) error {
	if len(c.Cols) != len(w.layout.leaves) {
		return fmt.Errorf("row group has %d columns, the schema %d", len(c.Cols), len(w.layout.leaves))
	}
	rg, err := w.fw.AppendRowGroupChecked()
	if err != nil {
		return err
	}
	for i := range c.Cols {
		col := &c.Cols[i]
		lf := w.layout.leaves[i]
		if len(col.Defs) != c.Rows {
			return fmt.Errorf("column %s: %d definition levels for %d rows", lf.path, len(col.Defs), c.Rows)
		}
		if len(col.Fixed) == 0 {
			col.sealFixed()
		}
		cw, err := rg.NextColumn()
		if err != nil {
			return fmt.Errorf("column %s: %w", lf.path, err)
		}
		dict := w.useDict(col, lf.typ)
		if ba, ok := cw.(*file.ByteArrayColumnChunkWriter); ok && dict && !lf.required {
			done, err := w.writeDictBytes(ba, col, c.Rows, w.dictLimit)
			if err != nil {
				return fmt.Errorf("column %s: %w", lf.path, err)
			}
			if done {
				continue
			}
			dict = false
		}
		if !dict {
			cw.FallbackToPlain()
		}
		defs := col.Defs
		if lf.required {
			// A required column has no levels; a row without its value
			// would shift every later value onto the wrong row.
			if n := col.present(lf.typ); n != c.Rows {
				return fmt.Errorf("column %s is required: %d values for %d rows", lf.path, n, c.Rows)
			}
			defs = nil
		}
		if err := writeChunk(cw, col, defs); err != nil {
			return fmt.Errorf("column %s: %w", lf.path, err)
		}
	}
	return rg.Close()
}

func writeChunk(cw file.ColumnChunkWriter, col *Column, defs []int16) error {
	var err error
	switch cw := cw.(type) {
	case *file.Int32ColumnChunkWriter:
		_, err = cw.WriteBatch(col.Int32, defs, nil)
	case *file.Int64ColumnChunkWriter:
		_, err = cw.WriteBatch(col.Int64, defs, nil)
	case *file.Float32ColumnChunkWriter:
		_, err = cw.WriteBatch(col.Float32, defs, nil)
	case *file.Float64ColumnChunkWriter:
		_, err = cw.WriteBatch(col.Float64, defs, nil)
	case *file.BooleanColumnChunkWriter:
		_, err = cw.WriteBatch(col.Bool, defs, nil)
	case *file.ByteArrayColumnChunkWriter:
		_, err = cw.WriteBatch(col.Bytes, defs, nil)
	case *file.FixedLenByteArrayColumnChunkWriter:
		_, err = cw.WriteBatch(col.Fixed, defs, nil)
	default:
		err = fmt.Errorf("unsupported column writer %T", cw)
	}
	return err
}

// Close writes the footer.
func (w *ColumnWriter) Close() error { return w.fw.Close() }

// FileMetadata is the footer written by Close.
func (w *ColumnWriter) FileMetadata() (*metadata.FileMetaData, error) { return w.fw.FileMetadata() }
