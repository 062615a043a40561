// Package parquetfmt holds the Parquet settings of every data file the
// ingestor writes: the consumer's WAL segments, which become the table's
// data files as they are, and the maintainer's compacted files, which
// replace them. One definition, so that a compacted file reads, prunes and
// compresses like the segments it replaces.
package parquetfmt

import (
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

const (
	// CompressionLevel is the zstd level: 1, the cheapest, since the
	// consumer writes at the ingest rate.
	CompressionLevel = 1
	// DictPageLimit is the dictionary size at which a column chunk falls
	// back to plain encoding. A column chunk whose dictionary passes
	// 64 KiB (8 bytes a row in a full 8192-row group) is high-cardinality:
	// ids, e-mail addresses, free text. It falls back to plain encoding
	// rather than hashing every remaining value into a dictionary that
	// cannot pay off. Low-cardinality columns keep their dictionary.
	DictPageLimit = 64 << 10
	// MaxRowGroupLength bounds the rows of one row group.
	MaxRowGroupLength = 1 << 20
)

// WriterProperties are the Parquet settings of a data file: zstd,
// statistics on (the committer and iceberg-go build the table's column
// metrics from the footer), the dictionary fallback above, memory from
// mem. extra come first, so they can only set what these leave open
// (per-column dictionary and codec choices, the dictionary default).
func WriterProperties(mem memory.Allocator, extra ...parquet.WriterProperty) *parquet.WriterProperties {
	return parquet.NewWriterProperties(append(extra,
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(CompressionLevel),
		parquet.WithStats(true),
		parquet.WithDictionaryPageSizeLimit(DictPageLimit),
		parquet.WithMaxRowGroupLength(MaxRowGroupLength),
		parquet.WithAllocator(mem),
	)...)
}

// ArrowWriterProperties are the Arrow-side settings of a data file: the
// Arrow schema stored in the footer, so that a reader gets the exact
// Arrow types back. The field ids come from the Arrow schema itself
// (PARQUET:field_id metadata, as table.SchemaToArrowSchema sets it).
func ArrowWriterProperties() pqarrow.ArrowWriterProperties {
	return pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())
}
