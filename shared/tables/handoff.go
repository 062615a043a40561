package tables

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/icewal/ingestor/shared/walfile"
)

// SummaryHandoff names, on the replace snapshot that applied it, the
// compaction hand-off (walfile.Handoff) whose files the snapshot added:
// after a crash between the commit and the note's deletion, it tells the
// committer the note is applied even when the compacted files are no
// longer live (compacted again since).
const SummaryHandoff = "ingestor.handoff"

// maxHandoffAttempts bounds the commits of one hand-off in one call when
// other writers (other pods' committers) keep changing the table first.
const maxHandoffAttempts = 8

// IsConflict reports whether err says another writer changed the table
// first and nothing was committed, so that the commit can be redone on the
// reloaded table. The SQL catalog returns such conflicts as plain
// requirement errors (`requirement failed: branch "main" has changed`, or
// `... was created concurrently` for a table's first snapshot); it checks
// requirements before it writes anything.
func IsConflict(err error) bool {
	if err == nil {
		return false
	}
	return errors.Is(err, table.ErrCommitFailed) ||
		strings.Contains(strings.ToLower(err.Error()), "requirement failed:")
}

// HandoffResult says what ApplyHandoff did with a hand-off's groups.
type HandoffResult struct {
	// Applied groups were committed by this call; AlreadyIn groups by an
	// earlier one (a crash before the note's deletion).
	Applied, AlreadyIn int
	// Dropped groups can never be applied: some file they replace is no
	// longer live (another writer compacted it, or rewrote it for a
	// copy-on-write delete) or has gained a position delete or deletion
	// vector since the maintainer read it (the compacted file still holds
	// the deleted rows, and the delete cannot follow them), or the table
	// was recreated. Their compacted files are referred to by
	// nothing and are left to the orphan cleanup, which deletes them once
	// they are older than its safety margin; DroppedFiles names them.
	Dropped      int
	DroppedFiles []string
	// DroppedForDeletes counts the dropped groups some of whose files
	// have a delete the compacted file does not hold.
	DroppedForDeletes int
	// DeleteFilesRemoved is the delete files the replace removed: they
	// applied only to the files it replaced, whose compacted files hold
	// their rows no more.
	DeleteFilesRemoved int
	// Rows and Bytes are the applied groups' rows and replaced bytes.
	Rows, Bytes int64
	// Attempts is the number of catalog commits tried.
	Attempts int
	// TargetReads is the position-delete files read to learn which data
	// files they name; a file this process wrote (RememberTargets) or
	// whose manifest entry names its one target is not read.
	TargetReads int64
}

// ApplyHandoff commits the hand-off h on tbl as one replace snapshot that
// deletes each group's replaced files and adds its compacted file, and
// removes the delete files that then apply to no live data file: a
// metadata-only commit that changes no row. Groups already applied (their
// file live, or a kept snapshot naming h) and groups that can never be (a
// replaced file no longer live, or with a delete the compacted file does
// not hold) are left out of it. A conflict with another writer is redone
// on the reloaded table, up to a few times, and every check is made again
// on it; an error leaves the hand-off to a later call, which decides again
// from the table. beforeCommit, when set, runs before each catalog commit
// (tests).
//
// Row-level deletes and data sequence numbers. The maintainer read each
// group's files at the snapshot with sequence number h.ReadSequence (S),
// applying the deletes committed up to S, and wrote only the rows they
// left (maintainer/rewrite.go). Which delete applies to which file:
//
//   - a position delete or deletion vector names its data file's path,
//     and applies to no other file: once its file is replaced, it
//     deletes nothing;
//   - an equality delete applies to the data files of its partition (or
//     of every partition, if unpartitioned) with a smaller data sequence
//     number.
//
// The compacted files are committed with S as their data sequence
// number, not the replace snapshot's. So an equality delete committed up
// to S (sequence <= S) does not apply to them, which is right only
// because its rows are already gone from them; and one committed after S
// (the ingestor's committer appends one for a key of the group while the
// maintainer reads, or another engine does) still applies to them as it
// applied to their inputs: nothing of it is lost, and the group is kept.
// Had they taken the replace's own, newer number, such an equality delete
// would no longer apply and its rows would read again.
//
// A position delete or deletion vector committed after S for a replaced
// file cannot follow its rows into the compacted file: the group is
// dropped (DroppedForDeletes), its rows stay in its inputs with their
// deletes, and a later pass compacts them again with the delete applied.
// A delete committed after this check and before the commit changes the
// table's current snapshot, so the commit fails its requirement as a
// conflict, and the check is made again on the reloaded table.
//
// A note without ReadSequence (written before compaction applied
// deletes) planned no file with a delete: any delete on its files, of
// any kind, drops the group, and its files take the replace's number.
//
// It returns the table after the commit, or tbl when it committed nothing.
// When it returns without error the note can be deleted.
func ApplyHandoff(ctx context.Context, cat catalog.Catalog, tbl *table.Table, h walfile.Handoff, beforeCommit func(attempt int)) (_ *table.Table, res HandoffResult, _ error) {
	var read []*TableFiles // of every attempt, for TargetReads
	defer func() {
		for _, f := range read {
			res.TargetReads += f.TargetReads()
		}
	}()
	if tbl.Metadata().TableUUID() != h.TableUUID {
		for _, g := range h.Groups {
			res.Dropped++
			res.DroppedFiles = append(res.DroppedFiles, g.File)
		}
		return tbl, res, nil
	}
	added := map[string]iceberg.DataFile{} // described once, for every attempt
	for attempt := 1; ; attempt++ {
		res = HandoffResult{Attempts: attempt - 1}
		if handoffCommitted(tbl, h) {
			res.AlreadyIn = len(h.Groups)
			return tbl, res, nil
		}
		files, err := ReadTableFiles(ctx, tbl)
		if err != nil {
			return tbl, res, err
		}
		read = append(read, files)
		live := map[string]iceberg.DataFile{}
		for p, e := range files.Data {
			live[p] = e.File
		}
		var apply []walfile.HandoffGroup
		drop := func(g walfile.HandoffGroup) {
			res.Dropped++
			if g.File != "" {
				res.DroppedFiles = append(res.DroppedFiles, g.File)
			}
		}
		for _, g := range h.Groups {
			if g.File != "" && live[g.File] != nil {
				res.AlreadyIn++
				continue
			}
			if !allLive(live, g.Replaced) {
				drop(g)
				continue
			}
			since, err := files.DeletesSince(ctx, h.ReadSequence, g.Replaced, h.ReadSequence == 0)
			if err != nil {
				return tbl, res, err
			}
			if len(since) > 0 {
				drop(g)
				res.DroppedForDeletes++
				continue
			}
			apply = append(apply, g)
		}
		if len(apply) == 0 {
			return tbl, res, nil
		}
		describeAhead(ctx, tbl, apply, added)
		tx := tbl.NewTransaction()
		staged := 0
		rw := tx.NewRewrite(iceberg.Properties{SummaryUpkeep: UpkeepCompaction, SummaryHandoff: h.ID.String()})
		// The data sequence number the compacted files take: S, or for
		// an old note the replace snapshot's own.
		seq := h.ReadSequence
		if seq > 0 {
			rw.DataSequenceNumber(seq)
		} else if snap := tbl.CurrentSnapshot(); snap != nil {
			seq = snap.SequenceNumber + 1
		}
		rewritten := map[string]bool{}
		var addedFiles []FileEntry
		for _, g := range apply {
			old := make([]iceberg.DataFile, len(g.Replaced))
			for i, p := range g.Replaced {
				old[i] = live[p]
			}
			if g.File == "" {
				// Deletes removed every row of its files: they go,
				// and nothing comes in their place.
				for _, p := range g.Replaced {
					rewritten[p] = true
				}
				rw.ApplyResult(table.CompactionGroupResult{OldDataFiles: old, BytesBefore: g.ReplacedBytes})
				res.Applied++
				res.Bytes += g.ReplacedBytes
				staged++
				continue
			}
			df := added[g.File]
			if df == nil {
				df, err = describeCompacted(ctx, tbl, g)
				if errors.Is(err, errCompactedGone) {
					// Its rows are still in the files it was to
					// replace: nothing is lost by leaving it out.
					res.Dropped++
					res.DroppedFiles = append(res.DroppedFiles, g.File)
					continue
				}
				if err != nil {
					return tbl, res, err
				}
				added[g.File] = df
			}
			for _, p := range g.Replaced {
				rewritten[p] = true
			}
			rw.ApplyResult(table.CompactionGroupResult{OldDataFiles: old, NewDataFiles: []iceberg.DataFile{df}, BytesBefore: g.ReplacedBytes})
			addedFiles = append(addedFiles, FileEntry{File: df, Seq: seq})
			res.Applied++
			res.Rows += g.Rows
			res.Bytes += g.ReplacedBytes
			staged++
		}
		if staged == 0 {
			return tbl, res, nil
		}
		// The delete files the replace leaves applying to nothing go in
		// the same snapshot: a position delete whose files it replaces,
		// an equality delete whose partition keeps no older file.
		dead, err := files.Dead(ctx, rewritten, addedFiles)
		if err != nil {
			return tbl, res, fmt.Errorf("find the delete files the replace leaves unused: %w", err)
		}
		if len(dead) > 0 {
			rw.ApplyResult(table.CompactionGroupResult{SafePosDeletes: dead})
			res.DeleteFilesRemoved = len(dead)
		}
		if err := rw.Commit(ctx); err != nil {
			return tbl, res, fmt.Errorf("stage the replace of %d compacted files: %w", len(apply), err)
		}
		if beforeCommit != nil {
			beforeCommit(attempt)
		}
		res.Attempts = attempt
		next, err := tx.Commit(ctx)
		if err == nil {
			return next, res, nil
		}
		if !IsConflict(err) || attempt >= maxHandoffAttempts || ctx.Err() != nil {
			// A conflict left nothing behind; any other error's outcome
			// is unknown, and the next call tells from the table
			// (handoffCommitted) whether it landed.
			return tbl, res, fmt.Errorf("commit the replace (attempt %d): %w", attempt, err)
		}
		if tbl, err = cat.LoadTable(ctx, tbl.Identifier()); err != nil {
			return tbl, res, fmt.Errorf("reload table after a conflict: %w", err)
		}
	}
}

// handoffCommitted reports whether a snapshot tbl keeps records h as
// applied.
func handoffCommitted(tbl *table.Table, h walfile.Handoff) bool {
	id := h.ID.String()
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties[SummaryHandoff] == id {
			return true
		}
	}
	return false
}

// HasDeletes reports whether a delete file of any kind applies to the
// task's data file: a compaction that reads it without applying them may
// not replace it.
func HasDeletes(t table.FileScanTask) bool {
	return len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) > 0
}

func allLive(live map[string]iceberg.DataFile, paths []string) bool {
	for _, p := range paths {
		if live[p] == nil {
			return false
		}
	}
	return len(paths) > 0
}

// errCompactedGone marks a compacted file that is missing, or not the file
// its hand-off describes: its group can never be applied.
var errCompactedGone = errors.New("compacted file gone")

// describeAhead describes the compacted files of groups not in added
// yet, targetReaders at a time, into added: each is a read of the
// file's footer from the store, and a hand-off of sixteen groups read
// them one after the other while the appends waited. A file that cannot
// be described is left out; the caller describes it again and handles
// the error.
func describeAhead(ctx context.Context, tbl *table.Table, groups []walfile.HandoffGroup, added map[string]iceberg.DataFile) {
	var todo []walfile.HandoffGroup
	for _, g := range groups {
		if g.File != "" && added[g.File] == nil {
			todo = append(todo, g)
		}
	}
	if len(todo) < 2 {
		return
	}
	var (
		mu sync.Mutex
		eg errgroup.Group
	)
	eg.SetLimit(targetReaders)
	for _, g := range todo {
		if ctx.Err() != nil {
			break
		}
		eg.Go(func() error {
			if df, err := describeCompacted(ctx, tbl, g); err == nil {
				mu.Lock()
				added[g.File] = df
				mu.Unlock()
			}
			return nil
		})
	}
	_ = eg.Wait() // no call fails: an error is met again in the caller's loop
}

// describeCompacted builds the data file of a compacted file from its
// Parquet footer, read from the table's storage: the object, not the
// note, is what the table will refer to.
func describeCompacted(ctx context.Context, tbl *table.Table, g walfile.HandoffGroup) (iceberg.DataFile, error) {
	meta := tbl.Metadata()
	spec := meta.PartitionSpecByID(g.SpecID)
	if spec == nil {
		return nil, fmt.Errorf("compacted file %s: partition spec %d not in the table", g.File, g.SpecID)
	}
	var schema *iceberg.Schema
	for _, s := range meta.Schemas() {
		if s.ID == g.SchemaID {
			schema = s
		}
	}
	if schema == nil {
		return nil, fmt.Errorf("compacted file %s: schema %d not in the table", g.File, g.SchemaID)
	}
	values, err := DecodePartition(*spec, schema, g.Partition)
	if err != nil {
		return nil, fmt.Errorf("compacted file %s: %w", g.File, err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	f, err := fs.Open(g.File)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s: %w", errCompactedGone, g.File, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open compacted file: %w", err)
	}
	defer f.Close()
	r, err := file.NewParquetReader(f)
	if err != nil {
		return nil, fmt.Errorf("read the footer of %s: %w", g.File, err)
	}
	footer := r.MetaData()
	if footer.NumRows != g.Rows {
		return nil, fmt.Errorf("%w: %s holds %d rows, its hand-off says %d", errCompactedGone, g.File, footer.NumRows, g.Rows)
	}
	df, err := table.DataFileFromMetadata(table.DataFileArgs{
		Schema:          schema,
		Spec:            *spec,
		Format:          iceberg.ParquetFile,
		Metadata:        footer,
		FilePath:        g.File,
		FileSize:        g.Size,
		Content:         iceberg.EntryContentData,
		PartitionValues: values,
		Properties:      tbl.Properties(),
		FormatVersion:   meta.Version(),
		SortOrderID:     g.SortOrderID,
	})
	if err != nil {
		return nil, fmt.Errorf("data file of %s: %w", g.File, err)
	}
	return df, nil
}
