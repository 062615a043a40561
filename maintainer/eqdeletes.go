package maintainer

import (
	"bytes"
	"context"
	"encoding/binary"
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

// Why compaction applies a group's equality deletes itself.
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
// Here each delete file is read once per group, into one map from key to
// the delete files that hold it, and each data file's rows are checked
// against the delete files the plan attached to that file: the same
// rows are removed as by the scan (the plan still decides which delete
// applies to which file, by partition and sequence number), for one map
// lookup per row.

// groupDeletes is the equality deletes of one compaction group, read once.
type groupDeletes struct {
	// cols is the position of each key column in the scan's records, in
	// the order of the delete files' equality field ids.
	cols []int
	// files numbers the group's equality-delete files by path.
	files map[string]int
	// keys maps each deleted key (keyOf) to the delete files holding it.
	keys map[string][]int32
}

// readGroupDeletes reads the equality deletes attached to tasks, once
// each, rewriteReaders at a time. ok is false when there are none, or
// when they cannot be applied here (delete files on different columns,
// or a key that is not a top-level column of a type with a canonical
// encoding): the caller then lets the scan apply them.
func readGroupDeletes(ctx context.Context, fsys icebergio.IO, schema *iceberg.Schema, tasks []table.FileScanTask) (*groupDeletes, bool, error) {
	gd := &groupDeletes{files: map[string]int{}, keys: map[string][]int32{}}
	var fieldIDs []int
	var files []iceberg.DataFile
	for _, t := range tasks {
		for _, d := range t.EqualityDeleteFiles {
			if _, ok := gd.files[d.FilePath()]; ok {
				continue
			}
			ids := d.EqualityFieldIDs()
			if fieldIDs == nil {
				fieldIDs = ids
			} else if !slices.Equal(ids, fieldIDs) {
				return nil, false, nil
			}
			gd.files[d.FilePath()] = len(files)
			files = append(files, d)
		}
	}
	if len(files) == 0 || len(fieldIDs) == 0 {
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
	if err := eg.Wait(); err != nil {
		return nil, false, err
	}
	return gd, true, nil
}

// readDeleteKeys returns the keys (keyOf) of the rows of the
// equality-delete file at location, whose columns are found by field id.
func readDeleteKeys(ctx context.Context, fsys icebergio.IO, location string, fieldIDs []int) ([]string, error) {
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
			return nil, fmt.Errorf("no top-level column with field id %d", id)
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
	tbl, err := fr.ReadRowGroups(ctx, leaves, groups)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	cols := make([]*arrow.Chunked, len(leaves))
	for k := range leaves {
		cols[k] = tbl.Column(k).Data()
	}
	rows := tbl.NumRows()
	out := make([]string, 0, rows)
	// Walk the columns' chunks together; each column may be chunked
	// differently.
	type cursor struct {
		chunk, at int
	}
	cur := make([]cursor, len(cols))
	arrs := make([]arrow.Array, len(cols))
	idx := make([]int, len(cols))
	var buf []byte
	for range rows {
		for k, c := range cols {
			for cur[k].at >= c.Chunk(cur[k].chunk).Len() {
				cur[k].chunk++
				cur[k].at = 0
			}
			arrs[k], idx[k] = c.Chunk(cur[k].chunk), cur[k].at
			cur[k].at++
		}
		if buf, err = keyOf(buf[:0], arrs, idx); err != nil {
			return nil, err
		}
		out = append(out, string(buf))
	}
	return out, nil
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

// applies returns, for the delete files of gd, which the plan attached to t.
func (gd *groupDeletes) applies(t table.FileScanTask) []bool {
	out := make([]bool, len(gd.files))
	for _, d := range t.EqualityDeleteFiles {
		out[gd.files[d.FilePath()]] = true
	}
	return out
}

// filter returns rec without the rows an attached delete file removes
// (nil when none is left), and releases rec when it returns another.
func (gd *groupDeletes) filter(ctx context.Context, rec arrow.RecordBatch, applies []bool) (arrow.RecordBatch, error) {
	arrs := make([]arrow.Array, len(gd.cols))
	for k, c := range gd.cols {
		arrs[k] = rec.Column(c)
	}
	idx := make([]int, len(arrs))
	n := int(rec.NumRows())
	var keep *array.BooleanBuilder
	var buf []byte
	var err error
	for i := range n {
		for k := range idx {
			idx[k] = i
		}
		if buf, err = keyOf(buf[:0], arrs, idx); err != nil {
			rec.Release()
			return nil, err
		}
		deleted := false
		for _, f := range gd.keys[string(buf)] {
			if applies[f] {
				deleted = true
				break
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
		return nil, fmt.Errorf("apply equality deletes: %w", err)
	}
	if out.NumRows() == 0 {
		out.Release()
		return nil, nil
	}
	return out, nil
}

// readWithDeletes reads tasks in order, rewriteReaders files at a time,
// each through the scan without its equality deletes (position deletes
// and deletion vectors still applied by the scan), then without the rows
// gd removes for it. Each file's records are handed on in order; a
// reader ahead of the writer holds at most a few of its records.
func readWithDeletes(ctx context.Context, scan *table.Scan, tasks []table.FileScanTask, gd *groupDeletes) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type item struct {
			rec arrow.RecordBatch
			err error
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
					defer func() { <-sem }()
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
					applies := gd.applies(t)
					bare := t
					bare.EqualityDeleteFiles = nil
					_, records, err := scan.ReadTasks(ctx, []table.FileScanTask{bare})
					if err != nil {
						send(item{err: fmt.Errorf("read %s: %w", t.File.FilePath(), err)})
						return
					}
					for rec, err := range records {
						if err != nil {
							send(item{err: fmt.Errorf("read %s: %w", t.File.FilePath(), err)})
							return
						}
						out, err := gd.filter(ctx, rec, applies)
						if err != nil {
							send(item{err: fmt.Errorf("read %s: %w", t.File.FilePath(), err)})
							return
						}
						if out != nil && !send(item{rec: out}) {
							return
						}
					}
				}()
			}
		}()
		for _, ch := range outs {
			for it := range ch {
				if it.err != nil {
					yield(nil, it.err)
					return
				}
				if !yield(it.rec, nil) {
					return
				}
			}
		}
	}
}
