package consumer

import (
	"fmt"
	"github.com/icewal/ingestor/consumer/decode"
	"github.com/icewal/ingestor/internal/testutil"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkSegmentFile measures what one WAL file costs besides its rows:
// a segment of a few rows is made a ready file as rotation does (the
// Parquet writer made, the row group written, the footer, the fsync, the
// checksum record and the rename), file after file:
//
//	go test -run '^$' -bench 'SegmentFile' -cpu 1 ./consumer/
//
// It reports cpu-µs/file (the process's CPU time, the collector's
// included) and wall-µs/file (the fsyncs wait for the disk). The rows of
// the 1-row case are a negligible part; the 100-row case shows the rows'
// share beside it.
func BenchmarkSegmentFile(b *testing.B) {
	for _, s := range loadPathShapes(b) {
		dec, err := decode.New(s.Schema, s.Mapping)
		if err != nil {
			b.Fatal(err)
		}
		var rows []Row
		for _, p := range s.Payloads[:100] {
			row, err := dec.DecodeInto(nil, p)
			if err != nil {
				b.Fatal(err)
			}
			rows = append(rows, row)
		}
		for _, n := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/rows=%d", s.Name, n), func(b *testing.B) {
				dir := b.TempDir()
				mem := memory.NewGoAllocator()
				now := time.Now()
				files, bytes := 0, int64(0)
				cpu0, wall0 := testutil.ProcessCPU(), time.Now()
				for b.Loop() {
					seg, err := openSegment(dir, "bench", 0, s.arrow, `{"1000":"tenant-000"}`, mem, now)
					if err != nil {
						b.Fatal(err)
					}
					for i := 0; i < n; i++ {
						if err := seg.append(rows[i], int64(i), len(s.Payloads[i])); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := seg.finish(); err != nil {
						b.Fatal(err)
					}
					files++
					bytes += seg.cw.n
				}
				cpu, wall := testutil.ProcessCPU()-cpu0, time.Since(wall0)
				b.ReportMetric(float64(cpu.Microseconds())/float64(files), "cpu-µs/file")
				b.ReportMetric(float64(wall.Microseconds())/float64(files), "wall-µs/file")
				b.ReportMetric(float64(bytes)/float64(files), "bytes/file")
			})
		}
	}
}
