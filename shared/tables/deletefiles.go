package tables

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
)

// FilePathFieldID is the field id of a position-delete file's file_path
// column (the spec's reserved id), whose bounds name the data files it
// deletes rows of.
const FilePathFieldID = 2147483546

// FileEntry is a live file of a table's current snapshot with its data
// sequence number, which decides what an equality delete applies to: a
// data file with a smaller number, in its partition (or anywhere, for an
// unpartitioned spec's).
type FileEntry struct {
	File iceberg.DataFile
	Seq  int64
	// entry is the manifest entry read, for the compaction package's
	// dead-delete decision; nil for a file not committed yet.
	entry iceberg.ManifestEntry
	// Partition tells partitions apart across specs (PartitionOf).
	Partition string
}

// TableFiles is what a table's current snapshot holds, read once from its
// manifests: the live data files and the live delete files of every kind,
// each with its data sequence number. Unlike a scan plan it says which
// snapshot order each delete has, what compaction's hand-off needs to tell
// a delete it applied from one that came after.
type TableFiles struct {
	Data    map[string]FileEntry // by path
	Deletes []FileEntry          // position, equality and deletion vectors
	meta    table.Metadata
	fs      icebergio.IO
	// reads counts the position-delete files read to learn their
	// targets (TargetReads).
	reads atomic.Int64
}

// TargetReads returns how many position-delete files tf has read to
// learn the data files they name: those neither the manifest nor the
// process's cache told.
func (tf *TableFiles) TargetReads() int64 { return tf.reads.Load() }

// ReadTableFiles reads the live files of tbl's current snapshot.
func ReadTableFiles(ctx context.Context, tbl *table.Table) (*TableFiles, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	tf := &TableFiles{Data: map[string]FileEntry{}, meta: tbl.Metadata(), fs: fs}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return tf, nil
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("read the manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	seen := map[string]bool{}
	for _, m := range manifests {
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			df := e.DataFile()
			key := df.FilePath()
			if table.IsDeletionVector(df) && df.ContentOffset() != nil {
				key = fmt.Sprintf("%s@%d", key, *df.ContentOffset())
			}
			if seen[key] {
				continue // a merged manifest may name a file twice
			}
			seen[key] = true
			part, err := PartitionOf(df)
			if err != nil {
				return nil, err
			}
			fe := FileEntry{File: df, Seq: e.SequenceNum(), entry: e, Partition: part}
			if df.ContentType() == iceberg.EntryContentData {
				tf.Data[df.FilePath()] = fe
			} else {
				tf.Deletes = append(tf.Deletes, fe)
			}
		}
	}
	return tf, nil
}

// PartitionOf tells the partitions of a table apart across its specs.
func PartitionOf(f iceberg.DataFile) (string, error) {
	part, err := EncodePartition(f.Partition())
	if err != nil {
		return "", fmt.Errorf("partition of %s: %w", f.FilePath(), err)
	}
	return fmt.Sprintf("%d/%s", f.SpecID(), part), nil
}

// unpartitioned reports whether spec id of the table has no partition
// field: an equality delete of it applies in every partition.
func (tf *TableFiles) unpartitioned(specID int32) bool {
	spec := tf.meta.PartitionSpecByID(int(specID))
	return spec == nil || spec.IsUnpartitioned() // an unknown spec: the safe side
}

// eqApplies reports whether the equality delete d applies to the data
// file in: a smaller data sequence number, and the same partition or an
// unpartitioned delete.
func (tf *TableFiles) eqApplies(d, in FileEntry) bool {
	return d.Seq > in.Seq && (d.Partition == in.Partition || tf.unpartitioned(d.File.SpecID()))
}

// Targets returns the paths of the data files a position-delete file or
// deletion vector deletes rows of: its referenced data file, or the one
// its file_path bounds both name, else the file_path column read from
// the file itself (cached for the life of the process, deleteTargets).
func (tf *TableFiles) Targets(ctx context.Context, d iceberg.DataFile) ([]string, error) {
	if t, ok := knownTargets(d); ok {
		return t, nil
	}
	t, err := readDeletePaths(tf.fs, d.FilePath())
	if err != nil {
		return nil, err
	}
	tf.reads.Add(1)
	deleteTargets.put(d.FilePath(), t)
	return t, nil
}

// knownTargets returns a position delete's targets where the manifest or
// the cache tells them, without reading the file.
func knownTargets(d iceberg.DataFile) ([]string, bool) {
	if ref := d.ReferencedDataFile(); ref != nil {
		return []string{*ref}, true
	}
	lo, hi := d.LowerBoundValues()[FilePathFieldID], d.UpperBoundValues()[FilePathFieldID]
	if lo != nil && string(lo) == string(hi) {
		return []string{string(lo)}, true
	}
	return deleteTargets.get(d.FilePath())
}

// readDeletePaths reads the distinct file_path values of a position-delete
// Parquet file.
func readDeletePaths(fs icebergio.IO, location string) ([]string, error) {
	f, err := fs.Open(location)
	if err != nil {
		return nil, fmt.Errorf("open position-delete file %s: %w", location, err)
	}
	defer f.Close()
	r, err := file.NewParquetReader(f)
	if err != nil {
		return nil, fmt.Errorf("read position-delete file %s: %w", location, err)
	}
	defer r.Close()
	col := r.MetaData().Schema.ColumnIndexByName("file_path")
	if col < 0 {
		return nil, fmt.Errorf("position-delete file %s has no file_path column", location)
	}
	var out []string
	vals := make([]parquet.ByteArray, 1024)
	for rg := range r.NumRowGroups() {
		cr, err := r.RowGroup(rg).Column(col)
		if err != nil {
			return nil, fmt.Errorf("position-delete file %s: %w", location, err)
		}
		br, ok := cr.(*file.ByteArrayColumnChunkReader)
		if !ok {
			return nil, fmt.Errorf("position-delete file %s: file_path is %T, not a string column", location, cr)
		}
		for br.HasNext() {
			_, n, err := br.ReadBatch(int64(len(vals)), vals, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("position-delete file %s: %w", location, err)
			}
			for _, v := range vals[:n] {
				if len(out) == 0 || out[len(out)-1] != string(v) {
					out = append(out, string(v))
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// errNoSeq marks a live file whose data sequence number the manifests do
// not tell; nothing is decided on such a table.
var errNoSeq = errors.New("no data sequence number")

// DeletesSince returns the delete files committed after the snapshot with
// sequence number read that delete rows of the data files at paths: a
// position-delete file or deletion vector that names one of them, and,
// when withEquality, an equality delete that applies to one of them.
func (tf *TableFiles) DeletesSince(ctx context.Context, read int64, paths []string, withEquality bool) ([]iceberg.DataFile, error) {
	in := map[string]FileEntry{}
	parts := map[string]bool{}
	for _, p := range paths {
		if e, ok := tf.Data[p]; ok {
			in[p] = e
			parts[e.Partition] = true
		}
	}
	if err := tf.prefetchTargets(ctx, parts, read); err != nil {
		return nil, err
	}
	var out []iceberg.DataFile
	for _, d := range tf.Deletes {
		if d.Seq < 0 {
			return nil, fmt.Errorf("delete file %s: %w", d.File.FilePath(), errNoSeq)
		}
		if d.Seq <= read {
			continue
		}
		switch d.File.ContentType() {
		case iceberg.EntryContentEqDeletes:
			if !withEquality {
				continue
			}
			for _, e := range in {
				if tf.eqApplies(d, e) {
					out = append(out, d.File)
					break
				}
			}
		case iceberg.EntryContentPosDeletes:
			// A position delete applies within its partition only: one
			// elsewhere is not read.
			if !parts[d.Partition] {
				continue
			}
			targets, err := tf.Targets(ctx, d.File)
			if err != nil {
				return nil, err
			}
			for _, t := range targets {
				if _, ok := in[t]; ok {
					out = append(out, d.File)
					break
				}
			}
		}
	}
	return out, nil
}

// Dead returns the delete files that apply to no live data file once the
// data files at rewritten are replaced by added (each added file with the
// data sequence number it is committed with): an equality delete whose
// partition keeps no data file older than it, a position-delete file or
// deletion vector whose data files are all rewritten or gone. Removing
// them in the replace that rewrites those files changes no row; keeping
// them makes every later read check them.
func (tf *TableFiles) Dead(ctx context.Context, rewritten map[string]bool, added []FileEntry) ([]iceberg.DataFile, error) {
	out, err := tf.DeadEquality(rewritten, added)
	if err != nil {
		return nil, err
	}
	// A position delete dies with its data files: only those of the
	// partitions the replace rewrites are looked at, which spares the
	// reads of the others' files (one without a referenced data file is
	// read to learn its targets).
	parts := map[string]bool{}
	for p := range rewritten {
		if e, ok := tf.Data[p]; ok {
			parts[e.Partition] = true
		}
	}
	if err := tf.prefetchTargets(ctx, parts, math.MinInt64); err != nil {
		return nil, err
	}
	for _, d := range tf.Deletes {
		if d.File.ContentType() != iceberg.EntryContentPosDeletes || !parts[d.Partition] {
			continue
		}
		targets, err := tf.Targets(ctx, d.File)
		if err != nil {
			return nil, err
		}
		live := false
		for _, t := range targets {
			if _, ok := tf.Data[t]; ok && !rewritten[t] {
				live = true
				break
			}
		}
		if !live {
			out = append(out, d.File)
		}
	}
	return out, nil
}

// DeadEquality returns the equality deletes that apply to no live data
// file once the files at rewritten are replaced by added: those whose
// partition (every partition, for an unpartitioned spec's) keeps no data
// file with a smaller data sequence number. It reads no file.
func (tf *TableFiles) DeadEquality(rewritten map[string]bool, added []FileEntry) ([]iceberg.DataFile, error) {
	survey := compaction.NewSurvivorSurvey()
	for p, e := range tf.Data {
		if rewritten[p] {
			continue
		}
		survey.AddSurvivorWithSpec(e.File.SpecID(), e.File.Partition(), e.Seq)
	}
	for _, e := range added {
		survey.AddSurvivorWithSpec(e.File.SpecID(), e.File.Partition(), e.Seq)
	}
	var eq []iceberg.ManifestEntry
	for _, d := range tf.Deletes {
		if d.File.ContentType() == iceberg.EntryContentEqDeletes {
			eq = append(eq, d.entry)
		}
	}
	return compaction.DecideDeadEqualityDeletesWithSpecs(survey, eq, specLookup{tf.meta})
}

// specLookup gives the compaction package the table's specs by id.
type specLookup struct{ meta table.Metadata }

func (s specLookup) PartitionSpecByID(id int) *iceberg.PartitionSpec {
	return s.meta.PartitionSpecByID(id)
}
