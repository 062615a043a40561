package maintainer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/bloom"
	"github.com/icewal/ingestor/shared/tables"
)

// rowGroupRows is the row count at which a compacted file starts a new
// row group: the consumer's segments are row groups of 16,384 rows; a
// compacted file has fewer, larger ones, each still a unit a reader can
// prune by its statistics.
const rowGroupRows = 256 << 10

// CompactedPrefix starts the object name of every file the maintainer
// writes, so that an operator listing the data directory tells them from
// the uploader's segments (<uuid>.parquet).
const CompactedPrefix = "compacted-"

// IdleCompactedPrefix starts the object name of the files an idle merge
// writes (compact.go): the name, kept in the table's metadata, is what
// tells a later pass that their bytes have had their one idle merge.
const IdleCompactedPrefix = CompactedPrefix + "idle-"

// compacted is one group's rewrite: the files it replaces and the one
// file that holds their rows.
type compacted struct {
	old []iceberg.DataFile
	// added is nil when deletes removed every row of old.
	added iceberg.DataFile
	bytes int64 // input bytes, read and written again
	// schemaID and sortOrderID are the schema and sort order added was
	// written with; the hand-off records them.
	schemaID, sortOrderID int
	// sidecars are the bloom-filter sidecars written beside added.
	sidecars []string
	// deleted is the rows of old that their deletes removed, which added
	// does not hold.
	deleted int64
}

// rewriteReaders is how many input files (and delete files) a
// compaction reads at once.
const rewriteReaders = 16

// readGroup returns the live rows of tasks, in order: read through the
// scan, with the group's delete files read once for the group
// (groupdeletes.go) where it can.
func readGroup(ctx context.Context, tbl *table.Table, sizes map[string]int64, tasks []table.FileScanTask) (iter.Seq2[arrow.RecordBatch, error], error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	gd, ok, err := readGroupDeletes(ctx, fs, tbl.Schema(), tasks)
	if err != nil {
		return nil, fmt.Errorf("read the deletes of %d files: %w", len(tasks), err)
	}
	if ok {
		return readWithDeletes(ctx, wholeReads(tbl, sizes).Scan(table.WithMaxConcurrency(1)), tasks, gd), nil
	}
	_, records, err := wholeReads(tbl, sizes).Scan(table.WithMaxConcurrency(rewriteReaders)).ReadTasks(ctx, tasks)
	if err != nil {
		return nil, fmt.Errorf("read %d files: %w", len(tasks), err)
	}
	return records, nil
}

// withDeletes reports whether a delete file applies to some of tasks.
func withDeletes(tasks []table.FileScanTask) bool {
	for _, t := range tasks {
		if tables.HasDeletes(t) {
			return true
		}
	}
	return false
}

// compactGroup reads the group's files once, with the deletes that apply
// to them, and writes their live rows into one
// new data file under the table's data location, with the consumer's
// Parquet settings (parquetfmt) and the table schema's field ids, in the
// table's sort order where it has one. Nothing is committed: the file is
// an orphan until the replace that refers to it lands.
//
// For each of bloomColumns (the dataset's bloomFilterColumns) it also
// writes the file's bloom-filter sidecar beside it (<id>.bloom.<column>,
// shared/bloom), as the uploader does for a segment, filled while the
// rows are written, and before the hand-off: once the replace lands,
// the inputs' sidecars go with the inputs at expiry, and a reader of
// the compacted file finds its own.
func compactGroup(ctx context.Context, tbl *table.Table, g compactionGroup, bloomColumns []string) (compacted, error) {
	var c compacted
	var rows int64
	sizes := make(map[string]int64, len(g.Tasks))
	for _, t := range g.Tasks {
		c.old = append(c.old, t.File)
		c.bytes += t.File.FileSizeBytes()
		rows += t.File.Count()
		sizes[t.File.FilePath()] = t.File.FileSizeBytes()
	}
	spec := tbl.Metadata().PartitionSpecByID(int(g.Tasks[0].File.SpecID()))
	if spec == nil {
		return c, fmt.Errorf("partition spec %d of %s not in the table", g.Tasks[0].File.SpecID(), g.Tasks[0].File.FilePath())
	}
	schema := tbl.Schema()
	fileSchema, err := table.SchemaToArrowSchema(schema, nil, true, false)
	if err != nil {
		return c, fmt.Errorf("arrow schema: %w", err)
	}
	keys, orderID, err := sortKeys(tbl.SortOrder(), schema)
	if err != nil {
		return c, err
	}
	filters, err := newColumnFilters(fileSchema, bloomColumns, rows)
	if err != nil {
		return c, err
	}
	// Small inputs are read in one request each (wholeread.go). The
	// deletes the plan attached to each task are applied, by
	// readGroupDeletes (groupdeletes.go says why) or, for deletion
	// vectors, by the scan.
	//
	// The reads are bound by the store's latency, not the CPU: a group
	// of a thousand small segments read two at a time (iceberg-go's
	// default, GOMAXPROCS) spends most of a pass waiting. rewriteReaders
	// tasks are read at once and handed on in order, at most
	// rewriteReaders tasks' rows held at once.
	records, err := readGroup(ctx, tbl, sizes, g.Tasks)
	if err != nil {
		return c, err
	}
	lp, err := tbl.LocationProvider()
	if err != nil {
		return c, fmt.Errorf("location provider: %w", err)
	}
	prefix := CompactedPrefix
	if g.idle {
		prefix = IdleCompactedPrefix
	}
	location := lp.NewDataLocation(prefix + uuid.NewString() + ".parquet")
	fs, err := tbl.FS(ctx)
	if err != nil {
		return c, err
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return c, fmt.Errorf("file IO %T cannot write", fs)
	}
	out, err := wfs.Create(location)
	if err != nil {
		return c, fmt.Errorf("create %s: %w", location, err)
	}
	cw := &countingSink{w: out}
	written, footer, err := writeRows(ctx, cw, fileSchema, records, keys, filters)
	if cerr := cw.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close: %w", cerr)
	}
	if err != nil {
		// The partial object is referred to by nothing; delete it now
		// rather than leave it to the orphan cleanup.
		_ = fs.Remove(location)
		return c, fmt.Errorf("write %s: %w", location, err)
	}
	// Dying here leaves a whole file no metadata refers to: an orphan,
	// deleted by the orphan cleanup once it is old enough.
	//
	// The scan applied the deletes the plan attached to each file
	// (position deletes, equality deletes committed after it, deletion
	// vectors), so the file holds the live rows only; the hand-off
	// commits it with the read snapshot's sequence number, which keeps a
	// later delete applying to it (tables.ApplyHandoff).
	if written > rows || (written != rows && !withDeletes(g.Tasks)) {
		_ = fs.Remove(location)
		return c, fmt.Errorf("compaction of %d files read %d rows, their manifests say %d: nothing committed", len(g.Tasks), written, rows)
	}
	c.deleted = rows - written
	if written == 0 {
		// Deletes removed every row: the group's files are replaced by
		// nothing. An empty file would stay in the table for ever, as
		// a scan plans no file without rows and so no compaction
		// would take it.
		_ = fs.Remove(location)
		c.schemaID, c.sortOrderID = schema.ID, orderID
		return c, nil
	}
	df, err := table.DataFileFromMetadata(table.DataFileArgs{
		Schema:          schema,
		Spec:            *spec,
		Format:          iceberg.ParquetFile,
		Metadata:        footer,
		FilePath:        location,
		FileSize:        cw.n,
		Content:         iceberg.EntryContentData,
		PartitionValues: g.Tasks[0].File.Partition(),
		Properties:      tbl.Properties(),
		FormatVersion:   tbl.Metadata().Version(),
		SortOrderID:     orderID,
	})
	if err != nil {
		_ = fs.Remove(location)
		return c, fmt.Errorf("data file of %s: %w", location, err)
	}
	// Dying after a sidecar leaves it and the file orphans: the orphan
	// cleanup deletes the file, then the sidecar of a file that is gone.
	if c.sidecars, err = writeSidecars(wfs, location, filters); err != nil {
		_ = fs.Remove(location)
		return c, err
	}
	c.added, c.schemaID, c.sortOrderID = df, schema.ID, orderID
	return c, nil
}

// columnFilter is the bloom filter of one top-level column of a file
// being written.
type columnFilter struct {
	index  int
	filter *bloom.Filter
}

// newColumnFilters returns an empty filter for each of columns of schema,
// sized for rows values at bloom.DefaultFPRate as the uploader sizes a
// segment's.
func newColumnFilters(schema *arrow.Schema, columns []string, rows int64) ([]columnFilter, error) {
	var out []columnFilter
	for _, col := range columns {
		idx := schema.FieldIndices(col)
		if len(idx) != 1 {
			return nil, fmt.Errorf("bloom filter column %q is not a column of the table", col)
		}
		f := bloom.New(int(rows), bloom.DefaultFPRate)
		f.Column = col
		out = append(out, columnFilter{index: idx[0], filter: f})
	}
	return out, nil
}

// addToFilters adds every non-null value of the filters' columns in rec.
func addToFilters(filters []columnFilter, rec arrow.RecordBatch) error {
	var key []byte
	for _, cf := range filters {
		arr := rec.Column(cf.index)
		for j := 0; j < arr.Len(); j++ {
			var ok bool
			var err error
			if key, ok, err = bloom.AppendValue(key[:0], arr, j); err != nil {
				return fmt.Errorf("bloom filter column %q: %w", cf.filter.Column, err)
			} else if ok {
				cf.filter.Add(key)
			}
		}
	}
	return nil
}

// writeSidecars stores each filter beside the data file at location and
// returns their locations; on an error it deletes those it wrote.
func writeSidecars(wfs icebergio.WriteFileIO, location string, filters []columnFilter) ([]string, error) {
	base := strings.TrimSuffix(location, ".parquet")
	var done []string
	for _, cf := range filters {
		loc := bloom.SidecarName(base, cf.filter.Column)
		var buf bytes.Buffer
		_, err := cf.filter.WriteTo(&buf)
		if err == nil {
			err = wfs.WriteFile(loc, buf.Bytes())
		}
		if err != nil {
			for _, d := range done {
				_ = wfs.Remove(d)
			}
			return nil, fmt.Errorf("write bloom filter sidecar %s: %w", loc, err)
		}
		done = append(done, loc)
	}
	return done, nil
}

// writeRows writes the records to w as one Parquet file of schema and
// returns the rows written and the footer. With sort keys, the rows are
// gathered and sorted as a whole first, so the file is one sorted run (a
// group is bounded by twice the target file size); without, they stream.
func writeRows(ctx context.Context, w io.Writer, schema *arrow.Schema, records iter.Seq2[arrow.RecordBatch, error], keys []compute.SortKey, filters []columnFilter) (int64, *metadata.FileMetaData, error) {
	mem := memory.DefaultAllocator
	fw, err := newFileSink(w, schema, mem)
	if err != nil {
		return 0, nil, err
	}
	var n int64
	write := func(rec arrow.RecordBatch) error {
		if err := addToFilters(filters, rec); err != nil {
			return err
		}
		if err := fw.write(rec); err != nil {
			return err
		}
		n += rec.NumRows()
		return nil
	}
	var batches []arrow.RecordBatch
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	var werr error
	for rec, err := range records {
		if err != nil {
			werr = err
			break
		}
		own, err := withSchema(rec, schema)
		if err != nil {
			werr = err
			break
		}
		if keys != nil {
			batches = append(batches, own)
			continue
		}
		werr = write(own)
		own.Release()
		if werr != nil {
			break
		}
	}
	if werr == nil && keys != nil && len(batches) > 0 {
		werr = writeSorted(ctx, mem, schema, batches, keys, write)
	}
	if werr != nil {
		fw.abort()
		return 0, nil, werr
	}
	meta, err := fw.close()
	if err != nil {
		return 0, nil, err
	}
	return n, meta, nil
}

// writeSorted concatenates batches into one record, sorts it by keys and
// writes it.
func writeSorted(ctx context.Context, mem memory.Allocator, schema *arrow.Schema, batches []arrow.RecordBatch, keys []compute.SortKey, write func(arrow.RecordBatch) error) error {
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var rows int64
	for _, b := range batches {
		rows += b.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, len(batches))
		for j, b := range batches {
			parts[j] = b.Column(i)
		}
		c, err := array.Concatenate(parts, mem)
		if err != nil {
			return fmt.Errorf("gather column %s: %w", schema.Field(i).Name, err)
		}
		cols[i] = c
	}
	all := array.NewRecordBatch(schema, cols, rows)
	defer all.Release()
	sorted, err := compute.SortRecordBatch(compute.WithAllocator(ctx, mem), all, keys)
	if err != nil {
		return fmt.Errorf("sort: %w", err)
	}
	defer sorted.Release()
	return write(sorted)
}

// withSchema returns rec under the file schema, which carries the field
// ids; the scan's schema has the same columns and types.
func withSchema(rec arrow.RecordBatch, schema *arrow.Schema) (arrow.RecordBatch, error) {
	if int(rec.NumCols()) != schema.NumFields() {
		return nil, fmt.Errorf("scan returned %d columns, the table has %d", rec.NumCols(), schema.NumFields())
	}
	for i, f := range schema.Fields() {
		if !arrow.TypeEqual(rec.Column(i).DataType(), f.Type) {
			return nil, fmt.Errorf("column %s: scan type %s, table type %s", f.Name, rec.Column(i).DataType(), f.Type)
		}
	}
	return array.NewRecordBatch(schema, rec.Columns(), rec.NumRows()), nil
}

// sortKeys are the Arrow sort keys of order over schema's top-level
// columns (the file schema has the same column order), and the order id a
// file sorted by them may claim. Order-preserving transforms (identity,
// truncate, year/month/day/hour) sort as their source column. A field
// that is not (bucket, void) or is nested ends the keys there: the file
// is sorted by the fields before it, which is not the table's order, so
// it claims none (0, unsorted).
func sortKeys(order table.SortOrder, schema *iceberg.Schema) ([]compute.SortKey, int, error) {
	if order.IsUnsorted() {
		return nil, table.UnsortedSortOrderID, nil
	}
	var keys []compute.SortKey
	orderID := order.OrderID()
	fields := schema.Fields()
	for _, f := range order.Fields() {
		idx := -1
		for i, sf := range fields {
			if sf.ID == f.SourceID() {
				idx = i
			}
		}
		if idx < 0 || f.Transform == nil || !f.Transform.PreservesOrder() || len(f.SourceIDs) > 1 {
			orderID = table.UnsortedSortOrderID
			break
		}
		k := compute.SortKey{ColumnIndex: idx, Order: compute.SortOrderAscending, NullPlacement: compute.SortNullsAtEnd}
		if f.Direction == table.SortDESC {
			k.Order = compute.SortOrderDescending
		}
		if f.NullOrder == table.NullsFirst {
			k.NullPlacement = compute.SortNullsAtStart
		}
		keys = append(keys, k)
	}
	return keys, orderID, nil
}

// countingSink counts the bytes of a data file as it is written: its
// size, which the manifest records.
type countingSink struct {
	w      io.WriteCloser
	n      int64
	closed bool
}

func (s *countingSink) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.n += int64(n)
	return n, err
}

// Close closes the object once: the Parquet writer closes its sink, and
// an error path may close it again.
func (s *countingSink) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.w.Close()
}

// bloomColumns are the bloomFilterColumns of the dataset named dataset.
func (m *Maintainer) bloomColumns(dataset string) []string {
	for _, d := range m.cfg.Datasets {
		if d.Name == dataset {
			return d.BloomFilterColumns
		}
	}
	return nil
}
