package committer

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icewal/ingestor/shared/parquetfmt"
	"github.com/icewal/ingestor/shared/tables"
)

// deleteWriters is how many partitions of one upsert batch have their
// delete files written at once: each file waits on the store, and a
// batch touches every partition its segments went to.
const deleteWriters = 8

// deleteGroup is the segments of one upsert batch whose data files share
// a partition (spec and values).
type deleteGroup struct {
	spec int32
	part map[int]any
	segs []int // indexes into the batch
}

// writeDeletes writes, for each partition the batch's data files are in,
// an equality-delete file on the key columns with every key those
// segments carry (it removes the older rows of the same keys that the
// table's earlier snapshots hold), and a position-delete file for the
// rows of those segments a later row of the same key supersedes, or that
// are deletes.
//
// An equality delete applies within its partition only, and that is
// enough: every partition field takes its source from a key column
// (tables.UpsertKeys), so every version of a key, and the segment that
// carries it, is in one partition. The keys are grouped by the partition
// of the segment they came from, which is the partition the table's
// transform gives them.
func writeDeletes(ctx context.Context, tbl *table.Table, keyIDs []int, files []iceberg.DataFile, keys *batchKeys) ([]iceberg.DataFile, error) {
	var groups []*deleteGroup
	for i, df := range files {
		var g *deleteGroup
		for _, h := range groups {
			if h.spec == df.SpecID() && samePartition(h.part, df.Partition()) {
				g = h
				break
			}
		}
		if g == nil {
			g = &deleteGroup{spec: df.SpecID(), part: df.Partition()}
			groups = append(groups, g)
		}
		g.segs = append(g.segs, i)
	}
	if len(groups) == 0 {
		return nil, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("file IO %T cannot write", fs)
	}
	lp, err := tbl.LocationProvider()
	if err != nil {
		return nil, err
	}
	superseded := keys.superseded()
	out := make([][]iceberg.DataFile, len(groups))
	errs := make([]error, len(groups))
	sem := make(chan struct{}, deleteWriters)
	var wg sync.WaitGroup
	for gi, g := range groups {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			spec := tbl.Metadata().PartitionSpecByID(int(g.spec))
			if spec == nil {
				errs[gi] = fmt.Errorf("delete files: no partition spec %d in the table", g.spec)
				return
			}
			eq, err := writeEqualityDeletes(wfs, lp, *spec, tbl.Schema(), files, keyIDs, keys, g)
			if err != nil {
				errs[gi] = fmt.Errorf("write equality deletes: %w", err)
				return
			}
			out[gi] = append(out[gi], eq)
			pos, err := writePositionDeletes(wfs, lp, *spec, files, superseded, g)
			if err != nil {
				errs[gi] = fmt.Errorf("write position deletes: %w", err)
				return
			}
			if pos != nil {
				out[gi] = append(out[gi], pos)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		// The files written are orphans: no commit refers to them.
		return nil, err
	}
	return slices.Concat(out...), nil
}

// writeEqualityDeletes writes the keys of the group's segments into one
// equality-delete file of the group's partition. A key twice in it costs
// a few bytes and means the same.
func writeEqualityDeletes(wfs icebergio.WriteFileIO, lp table.LocationProvider, spec iceberg.PartitionSpec, schema *iceberg.Schema, files []iceberg.DataFile, keyIDs []int, keys *batchKeys, g *deleteGroup) (iceberg.DataFile, error) {
	var recs []arrow.RecordBatch
	var n int64
	for _, i := range g.segs {
		for _, r := range keys.recs[i] {
			recs = append(recs, r)
			n += r.NumRows()
		}
	}
	location := lp.NewDataLocation("eq-deletes-" + uuid.NewString() + ".parquet")
	size, err := writeDeleteFile(wfs, location, keys.schema, recs)
	if err != nil {
		_ = wfs.Remove(location)
		return nil, err
	}
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentEqDeletes, location, iceberg.ParquetFile, g.part, nil, nil, n, size)
	if err != nil {
		return nil, fmt.Errorf("equality-delete file %s: %w", location, err)
	}
	lower, upper := keyBounds(schema, keyIDs, files, g.segs)
	return b.EqualityFieldIDs(keyIDs).LowerBoundValues(lower).UpperBoundValues(upper).Build(), nil
}

// writePositionDeletes writes the superseded rows of the group's data
// files into one position-delete file of the group's partition, or
// nothing when none is superseded.
func writePositionDeletes(wfs icebergio.WriteFileIO, lp table.LocationProvider, spec iceberg.PartitionSpec, files []iceberg.DataFile, rows [][]int64, g *deleteGroup) (iceberg.DataFile, error) {
	segs := slices.Clone(g.segs)
	// The spec orders a position-delete file by path, then position.
	slices.SortFunc(segs, func(a, b int) int { return cmp.Compare(files[a].FilePath(), files[b].FilePath()) })
	pb := array.NewStringBuilder(memory.DefaultAllocator)
	ob := array.NewInt64Builder(memory.DefaultAllocator)
	for _, i := range segs {
		for _, p := range rows[i] {
			pb.Append(files[i].FilePath())
			ob.Append(p)
		}
	}
	n := int64(pb.Len())
	pa, oa := pb.NewArray(), ob.NewArray()
	defer pa.Release()
	defer oa.Release()
	if n == 0 {
		return nil, nil
	}
	rec := array.NewRecordBatch(table.PositionalDeleteArrowSchema, []arrow.Array{pa, oa}, n)
	defer rec.Release()
	location := lp.NewDataLocation("pos-deletes-" + uuid.NewString() + ".parquet")
	size, err := writeDeleteFile(wfs, location, rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		_ = wfs.Remove(location)
		return nil, err
	}
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentPosDeletes, location, iceberg.ParquetFile, g.part, nil, nil, n, size)
	if err != nil {
		return nil, fmt.Errorf("position-delete file %s: %w", location, err)
	}
	// No referenced_data_file, even for one data file: iceberg-go's row
	// delta checks that file against the table's head before the commit
	// (on every attempt once the table has a snapshot), and the file is
	// one this same delta adds, so the check would always fail. Readers
	// match the file by partition and by its file_path column, whose
	// bounds are given: when they are equal (one data file, the common
	// case) every later reader of the manifest (the maintainer, a
	// hand-off, a restarted committer) knows the target without opening
	// the file; readers skip it for files outside them.
	targets := make([]string, 0, len(segs))
	for _, i := range segs {
		if len(rows[i]) > 0 {
			targets = append(targets, files[i].FilePath())
		}
	}
	targets = slices.Compact(targets)
	lo, hi := []byte(targets[0]), []byte(targets[len(targets)-1])
	b.LowerBoundValues(map[int][]byte{tables.FilePathFieldID: lo}).UpperBoundValues(map[int][]byte{tables.FilePathFieldID: hi})
	// This process applies the maintainer's hand-offs, which look at
	// every position delete of the partitions they rewrite: it knows
	// the targets of its own files and never reads them back. Dying
	// after this is nothing: the cache is memory, and an entry for a
	// file never committed names a path no one asks about.
	tables.RememberTargets(location, targets)
	return b.Build(), nil
}

// writeDeleteFile writes recs (of schema sc) as one Parquet file with the
// consumer's settings and returns its size.
func writeDeleteFile(wfs icebergio.WriteFileIO, location string, sc *arrow.Schema, recs []arrow.RecordBatch) (int64, error) {
	out, err := wfs.Create(location)
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", location, err)
	}
	cw := &countWriter{w: out}
	fw, err := pqarrow.NewFileWriter(sc, cw, parquetfmt.WriterProperties(memory.DefaultAllocator), parquetfmt.ArrowWriterProperties())
	if err != nil {
		out.Close()
		return 0, err
	}
	for _, rec := range recs {
		if err := fw.Write(rec); err != nil {
			fw.Close()
			out.Close()
			return 0, fmt.Errorf("write %s: %w", location, err)
		}
	}
	if err := fw.Close(); err != nil {
		out.Close()
		return 0, fmt.Errorf("write %s: %w", location, err)
	}
	if err := out.Close(); err != nil {
		return 0, fmt.Errorf("close %s: %w", location, err)
	}
	return cw.n, nil
}

// keyBounds returns the lower and upper bounds of the key columns over
// the group's data files, from their own bounds: every key of the
// equality-delete file is a value of one of those files, so their union
// bounds it. A reader skips the delete for a data file whose key range
// it does not reach (iceberg-go's scan does), which matters when keys
// grow with time and updates touch recent ones. A key column some file
// has no bound for, or of a type not compared here, gets none.
func keyBounds(schema *iceberg.Schema, keyIDs []int, files []iceberg.DataFile, segs []int) (lower, upper map[int][]byte) {
	lower, upper = map[int][]byte{}, map[int][]byte{}
	for _, id := range keyIDs {
		f, ok := schema.FindFieldByID(id)
		if !ok {
			continue
		}
		var lo, hi iceberg.Literal
		for _, i := range segs {
			l, h := files[i].LowerBoundValues()[id], files[i].UpperBoundValues()[id]
			if l == nil || h == nil {
				lo = nil
				break
			}
			ll, err1 := iceberg.LiteralFromBytes(f.Type, l)
			hl, err2 := iceberg.LiteralFromBytes(f.Type, h)
			if err1 != nil || err2 != nil {
				lo = nil
				break
			}
			if lo == nil {
				lo, hi = ll, hl
				continue
			}
			c1, ok1 := compareLiterals(ll, lo)
			c2, ok2 := compareLiterals(hl, hi)
			if !ok1 || !ok2 {
				lo = nil
				break
			}
			if c1 < 0 {
				lo = ll
			}
			if c2 > 0 {
				hi = hl
			}
		}
		if lo == nil {
			continue
		}
		lb, err1 := lo.MarshalBinary()
		ub, err2 := hi.MarshalBinary()
		if err1 == nil && err2 == nil {
			lower[id], upper[id] = lb, ub
		}
	}
	return lower, upper
}

// compareLiterals orders two literals of the same type, for the types a
// key column may have; ok is false for any other.
func compareLiterals(a, b iceberg.Literal) (int, bool) {
	switch x := a.(type) {
	case iceberg.StringLiteral:
		return compareAs(x, b)
	case iceberg.Int32Literal:
		return compareAs(x, b)
	case iceberg.Int64Literal:
		return compareAs(x, b)
	case iceberg.DateLiteral:
		return compareAs(x, b)
	case iceberg.TimeLiteral:
		return compareAs(x, b)
	case iceberg.TimestampLiteral:
		return compareAs(x, b)
	case iceberg.TimestampNsLiteral:
		return compareAs(x, b)
	case iceberg.BinaryLiteral:
		if y, ok := b.(iceberg.BinaryLiteral); ok {
			return bytes.Compare(x, y), true
		}
	case iceberg.FixedLiteral:
		if y, ok := b.(iceberg.FixedLiteral); ok {
			return bytes.Compare(x, y), true
		}
	case iceberg.UUIDLiteral:
		if y, ok := b.(iceberg.UUIDLiteral); ok {
			return bytes.Compare(x[:], y[:]), true
		}
	}
	return 0, false
}

func compareAs[T cmp.Ordered](x T, b iceberg.Literal) (int, bool) {
	y, ok := b.(T)
	if !ok {
		return 0, false
	}
	return cmp.Compare(x, y), true
}
