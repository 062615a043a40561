package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// AppendOnlyScan is the full scan of an upsert run's live rows written
// append-only, beside the same scan of the upsert table itself: what
// issue 27's delete debt is measured against. Both are timed the same
// way (fullScan: every row and column, nothing else), alternately.
type AppendOnlyScan struct {
	Rows int64 `json:"rows"`
	// DataFiles is the baseline table's files: one per partition, as an
	// append-only soak's idle compaction leaves its table.
	DataFiles int `json:"data_files"`
	// UpsertScanMs is the upsert table's full scan with its deletes
	// applied; ScanMs the baseline's; Ratio the first over the second.
	UpsertScanMs float64 `json:"upsert_scan_ms"`
	ScanMs       float64 `json:"scan_ms"`
	Ratio        float64 `json:"ratio"`
}

// appendOnlyScan writes the live rows of tbl (its scan, deletes applied)
// into a new table of the same schema, partition spec and properties, in
// one append (one file per partition, as an append-only table ends once
// upkeep merged its idle partitions), then times a full scan of each.
// The baseline table is dropped afterwards.
func appendOnlyScan(ctx context.Context, cat catalog.Catalog, tbl *table.Table) (*AppendOnlyScan, error) {
	ident := append(table.Identifier{}, tbl.Identifier()...)
	ident[len(ident)-1] += "_append_only"
	meta := tbl.Metadata()
	props := iceberg.Properties{}
	for k, v := range meta.Properties() {
		props[k] = v
	}
	spec := tbl.Spec()
	base, err := cat.CreateTable(ctx, ident, tbl.Schema(),
		catalog.WithPartitionSpec(&spec), catalog.WithProperties(props))
	if err != nil {
		return nil, fmt.Errorf("create the append-only table %v: %w", ident, err)
	}
	defer func() { _ = cat.DropTable(context.WithoutCancel(ctx), ident) }()

	scan := tbl.Scan()
	sc, batches, err := scan.ToArrowRecords(ctx)
	if err != nil {
		scan.Close()
		return nil, fmt.Errorf("scan the upsert table: %w", err)
	}
	rdr := array.ReaderFromIter(sc, batches)
	base, err = base.Append(ctx, rdr, nil)
	rdr.Release()
	scan.Close()
	if err != nil {
		return nil, fmt.Errorf("write the live rows append-only: %w", err)
	}

	// Each table is scanned twice, alternately, and its faster scan
	// kept: neither reads cold, and a pause of the machine in one scan
	// does not decide the ratio.
	r := &AppendOnlyScan{}
	var upsertScan, scanned time.Duration
	var upsertRows int64
	for range 2 {
		n, took, err := fullScan(ctx, tbl)
		if err != nil {
			return nil, err
		}
		upsertRows = n
		if upsertScan == 0 || took < upsertScan {
			upsertScan = took
		}
		if r.Rows, took, err = fullScan(ctx, base); err != nil {
			return nil, err
		}
		if scanned == 0 || took < scanned {
			scanned = took
		}
	}
	if r.Rows != upsertRows {
		return nil, fmt.Errorf("the append-only table holds %d rows, the upsert table's scan %d", r.Rows, upsertRows)
	}
	if s := base.CurrentSnapshot(); s != nil && s.Summary != nil {
		fmt.Sscan(s.Summary.Properties["total-data-files"], &r.DataFiles)
	}
	r.UpsertScanMs = round(float64(upsertScan.Microseconds())/1e3, 1)
	r.ScanMs = round(float64(scanned.Microseconds())/1e3, 1)
	if r.ScanMs > 0 {
		r.Ratio = round(r.UpsertScanMs/r.ScanMs, 2)
	}
	return r, nil
}
