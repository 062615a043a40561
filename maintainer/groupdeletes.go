package maintainer

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/icewal/ingestor/shared/bloom"
)

// Why compaction applies a group's deletes itself.
//
// iceberg-go's scan gives each data file the union of the equality
// deletes that apply to it, merged into one key set per distinct
// combination of delete files. In an upsert table every batch adds an
// equality delete that applies to every older file of its partition, so
// each file of a group has its own combination: a group of n files under
// d deletes merges about n*d key sets. Measured with
// `go test -run '^$' -bench CompactGroup -cpu 1 ./maintainer/`: 128
// segments of 512 rows with 30 % updates rewrote 43,468 input rows a
// second against 382,831 append-only, and the 300-commit upsert soak's
// maintainer spent a third of its CPU in that merge, which is why its
// upkeep fell behind.
//
// Here each delete file is read once per group: the equality deletes
// into one map from key to the delete files that hold it, the position
// deletes into the rows they remove from each file of the group. Each
// data file is then read without its deletes, and each row checked
// against the delete files the plan attached to that file: the same rows
// are removed as by the scan (the plan still decides which delete
// applies to which file, by partition and sequence number), for one map
// lookup per row. The position deletes are applied here too because the
// files are read one by one (the rows of each must be told apart), and a
// scan of one file reads every position-delete file attached to it: an
// upsert batch's position-delete file is attached to every older file of
// its partition, so the scan read each of them once per file.

// Field ids of a position-delete file's columns (the Iceberg spec's
// reserved ids).
const (
	posDeleteFilePathID = 2147483546
	posDeletePosID      = 2147483545
)

// groupDeletes is the delete files of one compaction group, read once.
type groupDeletes struct {
	// cols is the position of each key column in the scan's records, in
	// the order of the equality-delete files' field ids.
	cols []int
	// files numbers the group's delete files (of both kinds) by path.
	files map[string]int
	// keys maps each key an equality delete removes (keyOf) to the
	// delete files holding it.
	keys map[string][]int32
	// positions holds, for each data file of the group, the rows
	// position deletes remove from it, in the order of their position.
	positions map[string][]deletedRow
}

// deletedRow is a row a position-delete file removes from a data file.
type deletedRow struct {
	pos  int64
	file int32
}

// errToTheScan marks a delete file this reader does not read (columns
// without field ids, which a reader finds by name mapping, or of types it
// does not expect): the group's deletes are left to the scan.
var errToTheScan = errors.New("a delete file left to the scan")

// readGroupDeletes reads the equality- and position-delete files
// attached to tasks, once each, rewriteReaders at a time. ok is false
// when there are none, or when they cannot be applied here (deletion
// vectors, a task that is a split of its file, equality deletes on
// different columns, a key that is not a top-level column of a type with
// a canonical encoding, a delete file marked errToTheScan): the caller
// then lets the scan apply them.
func readGroupDeletes(ctx context.Context, fsys icebergio.IO, schema *iceberg.Schema, tasks []table.FileScanTask) (*groupDeletes, bool, error) {
	gd := &groupDeletes{files: map[string]int{}, keys: map[string][]int32{}, positions: map[string][]deletedRow{}}
	var fieldIDs []int
	var files []iceberg.DataFile
	paths := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		paths[t.File.FilePath()] = true
		// Position deletes count a file's rows from its start: a task
		// that is a split of its file (a large file of several row
		// groups) is left to the scan, as are deletion vectors.
		if len(t.DeletionVectorFiles) > 0 || t.Start != 0 || t.Length != 0 && t.Length != t.File.FileSizeBytes() {
			return nil, false, nil
		}
		for _, d := range slices.Concat(t.EqualityDeleteFiles, t.DeleteFiles) {
			if _, ok := gd.files[d.FilePath()]; ok {
				continue
			}
			switch d.ContentType() {
			case iceberg.EntryContentEqDeletes:
				ids := d.EqualityFieldIDs()
				if len(ids) == 0 || fieldIDs != nil && !slices.Equal(ids, fieldIDs) {
					return nil, false, nil
				}
				fieldIDs = ids
			case iceberg.EntryContentPosDeletes:
			default:
				return nil, false, nil
			}
			gd.files[d.FilePath()] = len(files)
			files = append(files, d)
		}
	}
	if len(files) == 0 {
		return nil, false, nil
	}
	for _, id := range fieldIDs {
		idx := slices.IndexFunc(schema.Fields(), func(f iceberg.NestedField) bool { return f.ID == id })
		if idx < 0 {
			return nil, false, nil
		}
		if _, ok := schema.Field(idx).Type.(iceberg.PrimitiveType); !ok {
			return nil, false, nil
		}
		gd.cols = append(gd.cols, idx)
	}
	var mu sync.Mutex
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(rewriteReaders)
	for i, d := range files {
		eg.Go(func() error {
			if d.ContentType() == iceberg.EntryContentPosDeletes {
				rows, err := readDeletedRows(ctx, fsys, d.FilePath(), paths)
				if err != nil {
					return fmt.Errorf("position-delete file %s: %w", d.FilePath(), err)
				}
				mu.Lock()
				defer mu.Unlock()
				for path, pos := range rows {
					for _, p := range pos {
						gd.positions[path] = append(gd.positions[path], deletedRow{pos: p, file: int32(i)})
					}
				}
				return nil
			}
			keys, err := readDeleteKeys(ctx, fsys, d.FilePath(), fieldIDs)
			if err != nil {
				return fmt.Errorf("equality-delete file %s: %w", d.FilePath(), err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, k := range keys {
				if l := gd.keys[k]; len(l) == 0 || l[len(l)-1] != int32(i) {
					gd.keys[k] = append(l, int32(i))
				}
			}
			return nil
		})
	}
	if err := eg.Wait(); errors.Is(err, errToTheScan) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, err
	}
	for _, rows := range gd.positions {
		slices.SortFunc(rows, func(a, b deletedRow) int { return cmp.Compare(a.pos, b.pos) })
	}
	return gd, true, nil
}

// readParquet opens the Parquet file at location, read whole where the
// file IO can, and reads the top-level columns with fieldIDs, in that
// order. The caller releases the table.
func readParquet(ctx context.Context, fsys icebergio.IO, location string, fieldIDs []int) (arrow.Table, error) {
	var src parquet.ReaderAtSeeker
	if rf, ok := fsys.(icebergio.ReadFileIO); ok {
		b, err := rf.ReadFile(location)
		if err != nil {
			return nil, err
		}
		src = &memFile{Reader: bytes.NewReader(b), size: int64(len(b))}
	} else {
		f, err := fsys.Open(location)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		src = f
	}
	pr, err := file.NewParquetReader(src)
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	sc := pr.MetaData().Schema
	leaves := make([]int, len(fieldIDs))
	for k, id := range fieldIDs {
		leaves[k] = -1
		for i := 0; i < sc.NumColumns(); i++ {
			c := sc.Column(i)
			if int(c.SchemaNode().FieldID()) == id && len(c.ColumnPath()) == 1 {
				leaves[k] = i
			}
		}
		if leaves[k] < 0 {
			return nil, fmt.Errorf("%w: no top-level column with field id %d", errToTheScan, id)
		}
	}
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	groups := make([]int, pr.NumRowGroups())
	for i := range groups {
		groups[i] = i
	}
	return fr.ReadRowGroups(ctx, leaves, groups)
}

// eachRow calls fn with the arrays and index of each row of tbl's
// columns in turn; the columns may be chunked differently.
func eachRow(tbl arrow.Table, fn func(arrs []arrow.Array, idx []int) error) error {
	n := int(tbl.NumCols())
	chunk, at := make([]int, n), make([]int, n)
	arrs, idx := make([]arrow.Array, n), make([]int, n)
	for range tbl.NumRows() {
		for k := range n {
			c := tbl.Column(k).Data()
			for at[k] >= c.Chunk(chunk[k]).Len() {
				chunk[k]++
				at[k] = 0
			}
			arrs[k], idx[k] = c.Chunk(chunk[k]), at[k]
			at[k]++
		}
		if err := fn(arrs, idx); err != nil {
			return err
		}
	}
	return nil
}

// readDeleteKeys returns the keys (keyOf) of the rows of the
// equality-delete file at location, whose columns are found by field id.
func readDeleteKeys(ctx context.Context, fsys icebergio.IO, location string, fieldIDs []int) ([]string, error) {
	tbl, err := readParquet(ctx, fsys, location, fieldIDs)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	out := make([]string, 0, tbl.NumRows())
	var buf []byte
	err = eachRow(tbl, func(arrs []arrow.Array, idx []int) error {
		var err error
		if buf, err = keyOf(buf[:0], arrs, idx); err != nil {
			return err
		}
		out = append(out, string(buf))
		return nil
	})
	return out, err
}

// readDeletedRows returns the positions the position-delete file at
// location removes from each of the data files paths.
func readDeletedRows(ctx context.Context, fsys icebergio.IO, location string, paths map[string]bool) (map[string][]int64, error) {
	tbl, err := readParquet(ctx, fsys, location, []int{posDeleteFilePathID, posDeletePosID})
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	out := map[string][]int64{}
	err = eachRow(tbl, func(arrs []arrow.Array, idx []int) error {
		path, ok := arrs[0].(interface{ Value(int) string })
		pos, ok2 := arrs[1].(*array.Int64)
		if !ok || !ok2 {
			return fmt.Errorf("%w: columns of types %s and %s, not string and long", errToTheScan, arrs[0].DataType(), arrs[1].DataType())
		}
		if arrs[0].IsNull(idx[0]) || pos.IsNull(idx[1]) || pos.Value(idx[1]) < 0 {
			return fmt.Errorf("a null file_path, or a null or negative pos")
		}
		if p := path.Value(idx[0]); paths[p] {
			out[p] = append(out[p], pos.Value(idx[1]))
		}
		return nil
	})
	return out, err
}

// keyOf appends the key of the values arrs[k] at idx[k]: for each
// column, a null marker or the value's canonical encoding (the one bloom
// filters use, which is the same for every Arrow type of one Iceberg
// type) with its length, so that two keys are equal exactly when their
// values are.
func keyOf(dst []byte, arrs []arrow.Array, idx []int) ([]byte, error) {
	for k, a := range arrs {
		if a.IsNull(idx[k]) {
			dst = append(dst, 0)
			continue
		}
		dst = append(dst, 1)
		lenAt := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		var err error
		if dst, _, err = bloom.AppendValue(dst, a, idx[k]); err != nil {
			return nil, err
		}
		binary.LittleEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	}
	return dst, nil
}

// taskDeletes is what the plan attached to one data file, from gd.
type taskDeletes struct {
	gd *groupDeletes
	// applies tells which of gd's delete files the plan attached.
	applies []bool
	// positions are the rows the attached position deletes remove, in
	// order, possibly repeated.
	positions []int64
	// read is the rows of the file read so far: the position of the
	// next record's first row.
	read int64
}

// forTask returns the deletes of gd the plan attached to t.
func (gd *groupDeletes) forTask(t table.FileScanTask) *taskDeletes {
	td := &taskDeletes{gd: gd, applies: make([]bool, len(gd.files))}
	for _, d := range slices.Concat(t.EqualityDeleteFiles, t.DeleteFiles) {
		td.applies[gd.files[d.FilePath()]] = true
	}
	for _, r := range gd.positions[t.File.FilePath()] {
		if td.applies[r.file] {
			td.positions = append(td.positions, r.pos)
		}
	}
	return td
}

// filter returns rec, the file's next rows, without those the attached
// deletes remove (nil when none is left), and releases rec when it
// returns another.
func (td *taskDeletes) filter(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	gd := td.gd
	first := td.read
	n := int(rec.NumRows())
	td.read += int64(n)
	var arrs []arrow.Array
	var idx []int
	if len(gd.keys) > 0 {
		arrs = make([]arrow.Array, len(gd.cols))
		for k, c := range gd.cols {
			arrs[k] = rec.Column(c)
		}
		idx = make([]int, len(arrs))
	}
	var keep *array.BooleanBuilder
	var buf []byte
	var err error
	for i := range n {
		deleted := false
		for len(td.positions) > 0 && td.positions[0] < first+int64(i) {
			td.positions = td.positions[1:]
		}
		if len(td.positions) > 0 && td.positions[0] == first+int64(i) {
			deleted = true
		} else if arrs != nil {
			for k := range idx {
				idx[k] = i
			}
			if buf, err = keyOf(buf[:0], arrs, idx); err != nil {
				rec.Release()
				return nil, err
			}
			for _, f := range gd.keys[string(buf)] {
				if td.applies[f] {
					deleted = true
					break
				}
			}
		}
		if deleted && keep == nil {
			keep = array.NewBooleanBuilder(memory.DefaultAllocator)
			keep.Reserve(n)
			for range i {
				keep.UnsafeAppend(true)
			}
		}
		if keep != nil {
			keep.UnsafeAppend(!deleted)
		}
	}
	if keep == nil {
		return rec, nil
	}
	defer keep.Release()
	mask := keep.NewArray()
	defer mask.Release()
	defer rec.Release()
	out, err := compute.FilterRecordBatch(ctx, rec, mask, compute.DefaultFilterOptions())
	if err != nil {
		return nil, fmt.Errorf("apply deletes: %w", err)
	}
	if out.NumRows() == 0 {
		out.Release()
		return nil, nil
	}
	return out, nil
}

// readWithDeletes reads tasks in order, rewriteReaders files at a time,
// each through the scan without its deletes, then without the rows gd
// removes from it. Each file's records are handed on in order. A reader
// keeps its place among the rewriteReaders until the writer has taken
// all of its file's records, so at most rewriteReaders files' records
// are held at once, as with the scan's own readers.
//
// Every file's records end with a mark that it was read to its end:
// records that stop without it (the context ended, the reader failed)
// end the iteration with an error, never with fewer rows, which the
// caller could not tell from rows the deletes removed.
func readWithDeletes(ctx context.Context, scan *table.Scan, tasks []table.FileScanTask, gd *groupDeletes) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type item struct {
			rec  arrow.RecordBatch
			err  error
			done bool // the file was read to its end
		}
		outs := make([]chan item, len(tasks))
		for i := range outs {
			outs[i] = make(chan item, 4)
		}
		sem := make(chan struct{}, rewriteReaders)
		var wg sync.WaitGroup
		defer func() {
			cancel()
			// Every channel is closed once the readers are done: by its
			// reader, or by the loop that starts them. Release what they
			// still hold.
			wg.Wait()
			for _, ch := range outs {
				for it := range ch {
					if it.rec != nil {
						it.rec.Release()
					}
				}
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, t := range tasks {
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					for _, ch := range outs[i:] {
						close(ch)
					}
					return
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer close(outs[i])
					send := func(it item) bool {
						select {
						case outs[i] <- it:
							return true
						case <-ctx.Done():
							if it.rec != nil {
								it.rec.Release()
							}
							return false
						}
					}
					// The file is read without any of its deletes, so its
					// rows come in order, each once, and td counts their
					// positions; the count is checked against the
					// manifest's at the end.
					td := gd.forTask(t)
					bare := t
					bare.EqualityDeleteFiles, bare.DeleteFiles = nil, nil
					fail := func(err error) { send(item{err: fmt.Errorf("read %s: %w", t.File.FilePath(), err)}) }
					_, records, err := scan.ReadTasks(ctx, []table.FileScanTask{bare})
					if err != nil {
						fail(err)
						return
					}
					for rec, err := range records {
						if err != nil {
							fail(err)
							return
						}
						out, err := td.filter(ctx, rec)
						if err != nil {
							fail(err)
							return
						}
						if out != nil && !send(item{rec: out}) {
							return
						}
					}
					if td.read != t.File.Count() {
						fail(fmt.Errorf("read %d rows, the manifest says %d", td.read, t.File.Count()))
						return
					}
					send(item{done: true})
				}()
			}
		}()
		for i, ch := range outs {
			done := false
			for it := range ch {
				switch {
				case it.err != nil:
					yield(nil, it.err)
					return
				case it.done:
					done = true
				case !yield(it.rec, nil):
					return
				}
			}
			if !done {
				err := context.Cause(ctx)
				if err == nil {
					err = errors.New("the read stopped")
				}
				yield(nil, fmt.Errorf("read %s: %w", tasks[i].File.FilePath(), err))
				return
			}
			// The writer has all of this file's records: its reader's
			// place goes to the next file.
			<-sem
		}
	}
}
