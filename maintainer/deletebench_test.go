package maintainer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/iceberg-go/table"
)

// BenchmarkCompactGroup measures the rewrite of one group of segments
// (16 of 4,096 rows, and 128 of 512): append-only, and as an upsert
// table whose every segment after the first updates earlier keys for
// 30 % of its rows and carries an equality delete of all its keys, which
// the rewrite applies. Each segment's equality delete applies to every
// older segment, so the 128-segment group is where the cost of applying
// them grows with the square of the files (an upsert soak's partitions
// hold thousands). It reports the input rows rewritten per second and
// the rows written.
func BenchmarkCompactGroup(b *testing.B) {
	for _, c := range []struct{ segments, rows int }{{16, 4096}, {128, 512}} {
		for _, share := range []float64{0, 0.3} {
			b.Run(fmt.Sprintf("segments=%d/upserts=%.1f", c.segments, share), func(b *testing.B) {
				benchCompactGroup(b, c.segments, c.rows, share)
			})
		}
	}
}

func benchCompactGroup(b *testing.B, segments, rows int, share float64) {
	{
		{
			dir := b.TempDir()
			cfg := wideConfig(dir, sqliteCatalog(nil, dir), nil)
			rng := rand.New(rand.NewPCG(1, 2))
			next := int64(0)
			for s := range segments {
				ids := make([]int64, rows)
				for i := range ids {
					if s > 0 && rng.Float64() < share {
						ids[i] = rng.Int64N(next)
					} else {
						ids[i] = next
						next++
					}
				}
				if share == 0 || s == 0 {
					appendNotes(b, cfg, ids)
				} else {
					upsert(b, cfg, dedupe(ids)...)
				}
			}
			tbl := loadTable(b, cfg)
			tasks, err := tbl.Scan().PlanFiles(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			g := compactionGroup{CompactionTaskGroup: table.CompactionTaskGroup{PartitionKey: "all", Tasks: tasks}}
			var in, out int64
			for _, t := range tasks {
				in += t.File.Count()
			}
			b.ResetTimer()
			for b.Loop() {
				c, err := compactGroup(context.Background(), tbl, g, nil)
				if err != nil {
					b.Fatal(err)
				}
				out = c.added.Count()
				b.StopTimer()
				fs, _ := tbl.FS(context.Background())
				_ = fs.Remove(c.added.FilePath())
				b.StartTimer()
			}
			b.ReportMetric(float64(in)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(out), "rows-written")
		}
	}
}

// dedupe keeps the first of each id: one upsert batch holds a key once.
func dedupe(ids []int64) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
