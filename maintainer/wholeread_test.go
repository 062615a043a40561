package maintainer

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icewal/ingestor/shared/tables"
)

// readWriteIO is a file IO that reads whole objects and writes.
type readWriteIO interface {
	icebergio.ReadFileIO
	icebergio.WriteFileIO
}

// countingIO counts the requests a reader makes of the store: an Open,
// each ReadAt of an opened object, each ReadFile.
type countingIO struct {
	readWriteIO
	requests, wholeReads atomic.Int64
}

func (c *countingIO) Open(name string) (icebergio.File, error) {
	c.requests.Add(1)
	f, err := c.readWriteIO.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, c: c}, nil
}

func (c *countingIO) ReadFile(name string) ([]byte, error) {
	c.requests.Add(1)
	c.wholeReads.Add(1)
	return c.readWriteIO.ReadFile(name)
}

type countingFile struct {
	icebergio.File
	c *countingIO
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.c.requests.Add(1)
	return f.File.ReadAt(p, off)
}

// counted returns tbl with its file IO counted.
func counted(t *testing.T, tbl *table.Table) (*table.Table, *countingIO) {
	inner, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rw, ok := inner.(readWriteIO)
	if !ok {
		t.Fatalf("file IO %T cannot read whole objects and write", inner)
	}
	c := &countingIO{readWriteIO: rw}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(context.Context) (icebergio.IO, error) { return c, nil }, nil), c
}

// Compaction reads each small input file with one request of the store,
// where a Parquet reader asks for the object, its footer's length, its
// footer and each column chunk apart; and it still writes every row.
func TestCompactionReadsEachSmallFileInOneRequest(t *testing.T) {
	dir := t.TempDir()
	cfg := wideConfig(dir, sqliteCatalog(t, dir), map[string]string{table.WriteTargetFileSizeBytesKey: fmt.Sprint(4 << 20)})
	cfg.Maintenance.CompactionFanIn = 4
	var rows int64
	for i := range int64(6) {
		ids := make([]int64, 300)
		for j := range ids {
			ids[j] = i*300 + int64(j)
		}
		appendNotes(t, cfg, ids)
		rows += int64(len(ids))
	}
	m, _ := newMaintainer(t, cfg)
	tbl := loadTable(t, cfg)
	files, err := tables.ReadTableFiles(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	groups, _, err := m.planCompaction(context.Background(), tbl, files)
	if err != nil || len(groups) != 1 || len(groups[0].Tasks) != 6 {
		t.Fatalf("plan: %d groups, %v; want one of the 6 files", len(groups), err)
	}

	// What a scan of the same files asks of the store.
	view, plain := counted(t, tbl)
	_, records, err := view.Scan().ReadTasks(context.Background(), groups[0].Tasks)
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range records {
		if err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	perFile := float64(plain.requests.Load()) / 6

	view, c := counted(t, tbl)
	got, err := compactGroup(context.Background(), view, groups[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a plain scan: %.1f requests per file; compaction: %d requests for 6 files", perFile, c.requests.Load())
	if c.requests.Load() != 6 || c.wholeReads.Load() != 6 {
		t.Errorf("compaction made %d requests (%d whole reads) for 6 small files, want one whole read each", c.requests.Load(), c.wholeReads.Load())
	}
	if perFile < 3 {
		t.Errorf("a plain scan made %.1f requests per file: the test no longer shows what whole reads save", perFile)
	}
	if got.added.Count() != rows {
		t.Errorf("compacted file holds %d rows, want %d", got.added.Count(), rows)
	}
}
