package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/tables"
)

// Health is a table's health at one checkpoint of a soak run: what grows
// with every commit when nothing maintains the table, and what a reader
// and the committer pay for it.
type Health struct {
	// Commits is the committer's appends so far; Seconds the time since
	// the first event was produced.
	Commits int     `json:"commits"`
	Seconds float64 `json:"seconds"`

	// Snapshots kept in the table's metadata.
	Snapshots int `json:"snapshots"`
	// MetadataJSONBytes is the size of the current metadata.json, which
	// every commit rewrites whole.
	MetadataJSONBytes int64 `json:"metadata_json_bytes"`
	// MetadataDirBytes and MetadataDirFiles are every object under the
	// table's metadata/ (metadata.json versions, manifest lists,
	// manifests); MetadataJSONFiles the metadata.json versions among them.
	MetadataDirBytes  int64 `json:"metadata_dir_bytes"`
	MetadataDirFiles  int   `json:"metadata_dir_files"`
	MetadataJSONFiles int   `json:"metadata_json_files"`
	// Manifests is the number of data manifests of the current snapshot.
	Manifests int `json:"manifests"`

	// DataFiles and DataBytes are the live data files of the current
	// snapshot; FileSizeBytes their p10, p50 and p90.
	DataFiles     int              `json:"data_files"`
	DataBytes     int64            `json:"data_bytes"`
	FileSizeBytes map[string]int64 `json:"file_size_bytes"`
	// TargetFileSizeBytes is the table's write.target-file-size-bytes, or
	// Iceberg's default (512 MiB) where the table sets none. SmallFiles
	// counts the files under half of it, over all Partitions and in the
	// partition that holds the most.
	TargetFileSizeBytes       int64 `json:"target_file_size_bytes"`
	Partitions                int   `json:"partitions"`
	SmallFiles                int   `json:"small_files"`
	SmallFilesMaxPerPartition int   `json:"small_files_max_per_partition"`
	// FilesPerPartition is DataFiles over Partitions, FilesMaxPerPartition
	// the files of the partition that holds the most; SmallFilesPct is
	// SmallFiles in percent of DataFiles.
	FilesPerPartition    float64 `json:"files_per_partition"`
	FilesMaxPerPartition int     `json:"files_max_per_partition"`
	SmallFilesPct        float64 `json:"small_files_pct"`

	// DeleteFiles are the live delete files of the current snapshot
	// (equality and position deletes of an upsert dataset), and the rows
	// they hold; DeleteFilesPerPartition is DeleteFiles over the
	// partitions that have any, DeleteFilesMaxPerPartition those of the
	// partition that holds the most.
	DeleteFiles                int     `json:"delete_files"`
	EqualityDeleteFiles        int     `json:"equality_delete_files"`
	PositionDeleteFiles        int     `json:"position_delete_files"`
	DeleteRows                 int64   `json:"delete_rows"`
	DeleteFilesPerPartition    float64 `json:"delete_files_per_partition"`
	DeleteFilesMaxPerPartition int     `json:"delete_files_max_per_partition"`

	// FullScanMs is the time iceberg-go takes to read every row of the
	// table, every column, with its deletes applied, and FullScanRows the
	// rows it returned: what a reader pays for the delete files. Taken
	// at the last checkpoint only.
	FullScanMs   float64 `json:"full_scan_ms,omitempty"`
	FullScanRows int64   `json:"full_scan_rows,omitempty"`

	// CommitP50Ms and CommitP95Ms are the committer's append durations
	// (its "committed" log lines) over the CommitsInWindow appends since
	// the previous checkpoint.
	CommitsInWindow int     `json:"commits_in_window"`
	CommitP50Ms     float64 `json:"commit_p50_ms"`
	CommitP95Ms     float64 `json:"commit_p95_ms"`

	// Scan planning with iceberg-go (Scan.PlanFiles) of the whole table
	// and of one partition (ScanPartition: one tenant-hour), and the
	// files each plan returned.
	ScanPlanTableMs        float64 `json:"scan_plan_table_ms"`
	ScanPlanTableFiles     int     `json:"scan_plan_table_files"`
	ScanPartition          string  `json:"scan_partition"`
	ScanPlanPartitionMs    float64 `json:"scan_plan_partition_ms"`
	ScanPlanPartitionFiles int     `json:"scan_plan_partition_files"`

	// BytesAppended is the added-files-size of the appends (what the
	// consumer wrote), BytesRewritten what any other snapshot added
	// (compaction) or, where the ingestor exports it, the maintainer's
	// ingestor_maintainer_rewritten_bytes_total (RewriteSource says
	// which). WriteAmplification is (appended + rewritten) / appended.
	BytesAppended      int64   `json:"bytes_appended"`
	BytesRewritten     int64   `json:"bytes_rewritten"`
	WriteAmplification float64 `json:"write_amplification"`
	RewriteSource      string  `json:"rewrite_source"`
}

// object is one object under a location: its full path and size.
type object struct {
	path string
	size int64
}

// lister lists the objects under a location (a prefix of paths).
type lister func(ctx context.Context, location string) ([]object, error)

// tenantHour names the partition whose scan planning a checkpoint times.
type tenantHour struct {
	tenant string
	hour   time.Time
}

func (p tenantHour) String() string {
	return p.tenant + "/" + p.hour.UTC().Format("2006-01-02T15")
}

// filter selects the rows of the partition by the table's columns, as a
// reader asking for one tenant's hour would.
func (p tenantHour) filter() iceberg.BooleanExpression {
	from := iceberg.Timestamp(p.hour.UnixMicro())
	to := iceberg.Timestamp(p.hour.Add(time.Hour).UnixMicro())
	return iceberg.NewAnd(
		iceberg.EqualTo(iceberg.Reference(devenv.ColumnTenant), p.tenant),
		iceberg.GreaterThanEqual(iceberg.Reference(devenv.ColumnTS), from),
		iceberg.LessThan(iceberg.Reference(devenv.ColumnTS), to))
}

// tableHealth measures what the table itself says about its health: its
// metadata objects (through list), the current snapshot's manifests and
// data files, and the time iceberg-go takes to plan a scan of the whole
// table and of part. The commit durations and the write amplification
// come from elsewhere (soak.go).
func tableHealth(ctx context.Context, tbl *table.Table, list lister, part tenantHour) (*Health, error) {
	h := &Health{Snapshots: len(tbl.Metadata().Snapshots()), ScanPartition: part.String()}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("table file io: %w", err)
	}
	if f, err := fsys.Open(tbl.MetadataLocation()); err != nil {
		return nil, fmt.Errorf("open %s: %w", tbl.MetadataLocation(), err)
	} else {
		st, err := f.Stat()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("stat %s: %w", tbl.MetadataLocation(), err)
		}
		h.MetadataJSONBytes = st.Size()
	}
	objs, err := list(ctx, strings.TrimSuffix(tbl.Location(), "/")+"/metadata/")
	if err != nil {
		return nil, fmt.Errorf("list the table's metadata: %w", err)
	}
	for _, o := range objs {
		h.MetadataDirFiles++
		h.MetadataDirBytes += o.size
		if strings.HasSuffix(o.path, ".metadata.json") {
			h.MetadataJSONFiles++
		}
	}

	h.TargetFileSizeBytes = int64(table.WriteTargetFileSizeBytesDefault)
	if v, ok := tbl.Properties()[table.WriteTargetFileSizeBytesKey]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			h.TargetFileSizeBytes = n
		}
	}
	var sizes []int64
	small := map[string]int{}
	partitions := map[string]int{}
	deletes := map[string]int{} // delete files by partition
	if cur := tbl.CurrentSnapshot(); cur != nil {
		manifests, err := cur.Manifests(fsys)
		if err != nil {
			return nil, fmt.Errorf("read manifest list: %w", err)
		}
		for _, m := range manifests {
			if m.ManifestContent() == iceberg.ManifestContentDeletes {
				if err := h.addDeletes(fsys, m, deletes); err != nil {
					return nil, err
				}
				continue
			}
			if m.ManifestContent() != iceberg.ManifestContentData {
				continue
			}
			h.Manifests++
			entries, err := m.FetchEntries(fsys, true)
			if err != nil {
				return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			for _, e := range entries {
				df := e.DataFile()
				sizes = append(sizes, df.FileSizeBytes())
				h.DataBytes += df.FileSizeBytes()
				key := partitionKey(df.Partition())
				partitions[key]++
				if df.FileSizeBytes() < h.TargetFileSizeBytes/2 {
					small[key]++
				}
			}
		}
	}
	slices.Sort(sizes)
	h.DataFiles = len(sizes)
	h.FileSizeBytes = map[string]int64{"p10": quantile(sizes, 0.1), "p50": quantile(sizes, 0.5), "p90": quantile(sizes, 0.9)}
	h.Partitions = len(partitions)
	for _, n := range small {
		h.SmallFiles += n
		h.SmallFilesMaxPerPartition = max(h.SmallFilesMaxPerPartition, n)
	}
	for _, n := range partitions {
		h.FilesMaxPerPartition = max(h.FilesMaxPerPartition, n)
	}
	for _, n := range deletes {
		h.DeleteFilesMaxPerPartition = max(h.DeleteFilesMaxPerPartition, n)
	}
	if len(deletes) > 0 {
		h.DeleteFilesPerPartition = round(float64(h.DeleteFiles)/float64(len(deletes)), 1)
	}
	if h.Partitions > 0 {
		h.FilesPerPartition = round(float64(h.DataFiles)/float64(h.Partitions), 1)
	}
	if h.DataFiles > 0 {
		h.SmallFilesPct = round(100*float64(h.SmallFiles)/float64(h.DataFiles), 1)
	}

	start := time.Now()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan a scan of the table: %w", err)
	}
	h.ScanPlanTableMs = round(float64(time.Since(start).Microseconds())/1e3, 1)
	h.ScanPlanTableFiles = len(tasks)
	start = time.Now()
	tasks, err = tbl.Scan(table.WithRowFilter(part.filter())).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan a scan of %s: %w", part, err)
	}
	h.ScanPlanPartitionMs = round(float64(time.Since(start).Microseconds())/1e3, 1)
	h.ScanPlanPartitionFiles = len(tasks)
	return h, nil
}

// addDeletes counts the live delete files of a delete manifest, by
// partition into byPartition.
func (h *Health) addDeletes(fsys icebergio.IO, m iceberg.ManifestFile, byPartition map[string]int) error {
	entries, err := m.FetchEntries(fsys, true)
	if err != nil {
		return fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
	}
	for _, e := range entries {
		df := e.DataFile()
		switch df.ContentType() {
		case iceberg.EntryContentEqDeletes:
			h.EqualityDeleteFiles++
		case iceberg.EntryContentPosDeletes:
			h.PositionDeleteFiles++
		default:
			continue
		}
		h.DeleteFiles++
		h.DeleteRows += df.Count()
		byPartition[partitionKey(df.Partition())]++
	}
	return nil
}

// fullScan reads every row and column of the table with iceberg-go's
// scan, deletes applied, and returns the rows and the time it took.
func fullScan(ctx context.Context, tbl *table.Table) (int64, time.Duration, error) {
	start := time.Now()
	if tbl.CurrentSnapshot() == nil {
		return 0, 0, nil
	}
	scan := tbl.Scan()
	defer scan.Close()
	_, batches, err := scan.ToArrowRecords(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("scan the table: %w", err)
	}
	var rows int64
	for rec, err := range batches {
		if err != nil {
			return 0, 0, fmt.Errorf("scan the table: %w", err)
		}
		rows += rec.NumRows()
		rec.Release()
	}
	return rows, time.Since(start), nil
}

// partitionKey renders a data file's partition values (by field id) as
// one comparable string.
func partitionKey(p map[int]any) string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(p)) {
		fmt.Fprintf(&b, "%d=%v;", id, p[id])
	}
	return b.String()
}

// writeLedger adds up the bytes each snapshot added, by kind, over every
// snapshot the table ever showed a checkpoint: snapshots expired between
// two checkpoints are missed, which is why the maintainer's own counter
// is preferred when it exists.
type writeLedger struct {
	seen                map[int64]bool
	appended, rewritten int64
}

// add records the snapshots of tbl not seen before.
func (w *writeLedger) add(tbl *table.Table) {
	if w.seen == nil {
		w.seen = map[int64]bool{}
	}
	for _, s := range tbl.Metadata().Snapshots() {
		if w.seen[s.SnapshotID] || s.Summary == nil {
			continue
		}
		w.seen[s.SnapshotID] = true
		n, _ := strconv.ParseInt(s.Summary.Properties["added-files-size"], 10, 64)
		// The committer's commits of upserts are row deltas (Iceberg's
		// overwrites) that carry the dataset's name.
		if s.Summary.Operation == table.OpAppend || s.Summary.Properties[tables.SummaryDataset] != "" {
			w.appended += n
		} else {
			w.rewritten += n
		}
	}
}

// fill sets h's write figures; rewrittenMetric is the maintainer's
// counter, negative when no role exports it.
func (w *writeLedger) fill(h *Health, rewrittenMetric float64) {
	h.BytesAppended, h.BytesRewritten, h.RewriteSource = w.appended, w.rewritten, "snapshots"
	if rewrittenMetric >= 0 {
		h.BytesRewritten, h.RewriteSource = int64(rewrittenMetric), "metric"
	}
	if h.BytesAppended > 0 {
		h.WriteAmplification = round(float64(h.BytesAppended+h.BytesRewritten)/float64(h.BytesAppended), 3)
	}
}
