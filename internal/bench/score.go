package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/icewal/ingestor/internal/devenv"
	"github.com/icewal/ingestor/shared/tables"
)

// dataFile is one data file of the table's current snapshot.
type dataFile struct {
	path     string
	size     int64
	rows     int64
	commitMs int64  // timestamp-ms of the append that added it; 0 where the table keeps none
	tenant   string // its tenant partition value
}

// score is what the scorer found in the table.
type score struct {
	rows        int64 // rows read from the data files
	missing     int64 // events never found
	duplicated  int64 // events found more than once (counted once each)
	unexpected  int64 // rows whose id is not an event of this run
	wrongTenant int64 // rows whose tenant is not their event's
	// freshness of each row of this run, in seconds, sorted; of the rows
	// whose append the table keeps (freshnessUnknown counts the others).
	freshness        []float64
	freshnessUnknown int64
	files            []dataFile
	// commits is the number of the dataset's appends; lastCommitMs the
	// timestamp-ms of the latest.
	commits      int
	lastCommitMs int64
}

// exactlyOnce tells whether every event is in the table once and nothing
// else is.
func (s *score) exactlyOnce() bool {
	return s.missing == 0 && s.duplicated == 0 && s.unexpected == 0 && s.wrongTenant == 0
}

// scoreTable reads the whole table back. Each data file is mapped to the
// snapshot that added it through the manifest entries of the current
// snapshot, not through the committer's own bookkeeping; then its
// event_id, tenant and ts columns are read from storage.
func scoreTable(ctx context.Context, tbl *table.Table, run uint32, events int64, ten *devenv.Tenancy) (*score, error) {
	s := &score{}
	// The appends the table keeps: a row's freshness is the commit of
	// the append that added it. A file whose adding snapshot is a
	// compaction's replace, or an append that expiry removed, holds rows
	// whose append the table no longer records; they count for exactly
	// once, not for freshness.
	commitMs := map[int64]int64{}
	for _, snap := range tbl.Metadata().Snapshots() {
		if snap.Summary == nil {
			continue
		}
		// The committer's commits of upserts are row deltas, which
		// Iceberg calls overwrites: the dataset's name tells them from
		// a compaction's.
		ours := snap.Summary.Properties[tables.SummaryDataset] == dataset
		if snap.Summary.Operation == table.OpAppend || ours {
			commitMs[snap.SnapshotID] = snap.TimestampMs
		}
		if ours {
			s.commits++
			s.lastCommitMs = max(s.lastCommitMs, snap.TimestampMs)
		}
	}
	cur := tbl.CurrentSnapshot()
	if cur == nil {
		s.missing = events
		return s, nil
	}
	tenantField := -1
	if f, ok := tbl.Schema().FindFieldByName(devenv.ColumnTenant); ok {
		spec := tbl.Spec()
		for _, pf := range spec.Fields() {
			if pf.SourceID() == f.ID {
				tenantField = pf.FieldID
			}
		}
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("table file io: %w", err)
	}
	manifests, err := cur.Manifests(fsys)
	if err != nil {
		return nil, fmt.Errorf("read manifest list: %w", err)
	}
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		entries, err := m.FetchEntries(fsys, true)
		if err != nil {
			return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
		}
		for _, e := range entries {
			df := e.DataFile()
			ms, ok := commitMs[e.SnapshotID()]
			if !ok {
				s.freshnessUnknown += df.Count() // ms 0: no freshness
			}
			tenant, _ := df.Partition()[tenantField].(string)
			s.files = append(s.files, dataFile{path: df.FilePath(), size: df.FileSizeBytes(), rows: df.Count(), commitMs: ms, tenant: tenant})
		}
	}

	counts := make([]atomic.Uint32, events)
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(2)
	for _, f := range s.files {
		g.Go(func() error {
			r, err := readFile(gctx, fsys, f, run, events, ten, counts)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			s.rows += r.rows
			s.unexpected += r.unexpected
			s.wrongTenant += r.wrongTenant
			s.freshness = append(s.freshness, r.freshness...)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i := range counts {
		switch n := counts[i].Load(); {
		case n == 0:
			s.missing++
		case n > 1:
			s.duplicated++
		}
	}
	slices.Sort(s.freshness)
	return s, nil
}

// fileScore is what one data file holds.
type fileScore struct {
	rows, unexpected, wrongTenant int64
	freshness                     []float64
}

// readFile reads one data file whole (one GET) and counts its events.
func readFile(ctx context.Context, fsys icebergio.IO, f dataFile, run uint32, events int64, ten *devenv.Tenancy, counts []atomic.Uint32) (*fileScore, error) {
	in, err := fsys.Open(f.path)
	if err != nil {
		return nil, fmt.Errorf("open data file %s: %w", f.path, err)
	}
	b, err := io.ReadAll(in)
	in.Close()
	if err != nil {
		return nil, fmt.Errorf("read data file %s: %w", f.path, err)
	}
	pr, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("parquet file %s: %w", f.path, err)
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("parquet file %s: %w", f.path, err)
	}
	var cols []int
	for _, name := range []string{devenv.ColumnID, devenv.ColumnTenant, devenv.ColumnTS} {
		i := pr.MetaData().Schema.ColumnIndexByName(name)
		if i < 0 {
			return nil, fmt.Errorf("data file %s has no column %s", f.path, name)
		}
		cols = append(cols, i)
	}
	rr, err := fr.GetRecordReader(ctx, cols, nil)
	if err != nil {
		return nil, fmt.Errorf("read data file %s: %w", f.path, err)
	}
	defer rr.Release()
	out := &fileScore{}
	commitSec := float64(f.commitMs) / 1e3
	for rr.Next() {
		rec := rr.RecordBatch()
		ids, ok1 := rec.Column(0).(*array.String)
		tenants, ok2 := rec.Column(1).(*array.String)
		tss, ok3 := rec.Column(2).(*array.Timestamp)
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("data file %s: columns of types %s, %s, %s, want string, string, timestamp",
				f.path, rec.Column(0).DataType(), rec.Column(1).DataType(), rec.Column(2).DataType())
		}
		for i := range ids.Len() {
			out.rows++
			r, seq, ok := devenv.ParseEventID(ids.Value(i))
			if !ok || r != run || seq >= events {
				out.unexpected++
				continue
			}
			counts[seq].Add(1)
			if tenants.Value(i) != ten.Name(ten.Of(seq)) {
				out.wrongTenant++
			}
			// ts is in microseconds (timestamptz). A row without one is
			// the key-only row an upsert's delete leaves in its file,
			// hidden by a position delete: it has no freshness.
			if f.commitMs != 0 && tss.Value(i) != 0 {
				out.freshness = append(out.freshness, commitSec-float64(tss.Value(i))/1e6)
			}
		}
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read data file %s: %w", f.path, err)
	}
	if out.rows != f.rows {
		return nil, fmt.Errorf("data file %s: %d rows read, the manifest says %d", f.path, out.rows, f.rows)
	}
	return out, nil
}

// quantile returns the q-quantile (0..1) of sorted values by the nearest
// rank, 0 for none.
func quantile[T int64 | float64](sorted []T, q float64) T {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
