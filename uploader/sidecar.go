package uploader

import (
	"context"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/icewal/ingestor/shared/bloom"
)

// bloomBatchRows is how many rows of a column are decoded at a time.
const bloomBatchRows = 64 << 10

// buildFilters reads the named top-level columns of a Parquet file and
// returns one filter per column holding every non-null value, sized for the
// file's row count at bloom.DefaultFPRate.
func buildFilters(ctx context.Context, path string, columns []string) ([]*bloom.Filter, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		return nil, fmt.Errorf("read parquet footer: %w", err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: bloomBatchRows}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("read parquet schema: %w", err)
	}
	sc, err := fr.Schema()
	if err != nil {
		return nil, fmt.Errorf("read parquet schema: %w", err)
	}
	rows := rdr.NumRows()
	var filters []*bloom.Filter
	for _, col := range columns {
		idx := sc.FieldIndices(col)
		if len(idx) != 1 {
			// A configured column missing from the file is a mistake to
			// fix, not a column of nulls: an empty filter would make
			// readers skip this file for every value.
			return nil, fmt.Errorf("bloom filter column %q is not a column of the file", col)
		}
		flt := bloom.New(int(rows), bloom.DefaultFPRate)
		flt.Column = col
		if err := addColumn(ctx, fr, idx[0], rows, flt); err != nil {
			return nil, fmt.Errorf("bloom filter column %q: %w", col, err)
		}
		filters = append(filters, flt)
	}
	return filters, nil
}

// addColumn adds every non-null value of field i to flt.
func addColumn(ctx context.Context, fr *pqarrow.FileReader, i int, rows int64, flt *bloom.Filter) error {
	cr, err := fr.GetColumn(ctx, i)
	if err != nil {
		return err
	}
	defer cr.Release()
	var key []byte
	for read := int64(0); read < rows; {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunked, err := cr.NextBatch(bloomBatchRows)
		if err != nil {
			return err
		}
		n := int64(chunked.Len())
		for _, arr := range chunked.Chunks() {
			for j := 0; j < arr.Len(); j++ {
				var ok bool
				key, ok, err = bloom.AppendValue(key[:0], arr, j)
				if err != nil {
					chunked.Release()
					return err
				}
				if ok {
					flt.Add(key)
				}
			}
		}
		chunked.Release()
		if n == 0 {
			return fmt.Errorf("column ended after %d of %d rows", read, rows)
		}
		read += n
	}
	return nil
}
