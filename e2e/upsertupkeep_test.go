package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icewal/ingestor/shared/failpoint"
	"github.com/icewal/ingestor/shared/tables"
)

// An upsert table with upkeep on: compaction rewrites files that have
// position and equality deletes, applying them, while the committer keeps
// adding more. The table stays the last-write-wins state of what was
// produced throughout, and once the stream stops and the partitions go
// idle, upkeep rewrites them and no delete file is left, the state
// unchanged: no deleted or superseded row comes back. It runs plain and
// with a crash right after the maintainer's hand-off note (the committer
// applies it after the restart, with every delete committed since) and
// right after the committer's replace (the note found applied).
func TestUpsertsWithUpkeep(t *testing.T) {
	const fanIn = 2
	cases := []struct{ name, point string }{
		{"plain", ""},
		{"crash after the hand-off note", failpoint.MaintainerAfterCompact},
		{"crash after the replace", failpoint.CommitterAfterReplace},
	}
	var topics []string
	for i := range cases {
		topics = append(topics, fmt.Sprintf("upkeeporders%d", i))
	}
	w := newWorld(t, worldOptions{topics: topics, partitions: 3})
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ds := upsertDataset(topics[i])
			// The maintainer expires and rewrites manifests every
			// second: its commits race the committer's row deltas,
			// which must land on the retry.
			// Idle after 3 s without a file.
			o := instanceOptions{datasets: []dataset{ds}, maxFileSizeBytes: 16 << 10, upkeep: true, compactionFanIn: fanIn, idleCompactionMinutes: 0.05}
			marker := filepath.Join(w.dir, "fired-upsert-upkeep-"+strconv.Itoa(i))
			if tc.point != "" {
				o.env = []string{failpoint.EnvVar + "=" + tc.point + "=1@" + marker}
			}
			in := w.newInstanceFor(t, "upsertupkeep"+strconv.Itoa(i), o)
			defer in.dumpLogs()
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(w.broker), kgo.DefaultProduceTopic(ds.topic)}, w.genOpts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			s := &orderStream{rng: rand.New(rand.NewPCG(uint64(i), 11)), live: map[int64]int64{}}
			produce := func(n int) {
				if err := cl.ProduceSync(ctx, s.records(n)...).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			state := func() string {
				got, twice, err := w.tableState(ctx, ds.table)
				if err != nil {
					return err.Error()
				}
				return diffState(s.live, got, twice)
			}
			// debt is the most live delete files in one partition.
			debt := func() (int, error) {
				tbl, closeCat, err := w.openTable(ctx, ds.table)
				if err != nil {
					return 0, err
				}
				defer closeCat()
				files, err := tables.ReadTableFiles(ctx, tbl)
				if err != nil {
					return 0, err
				}
				return files.DeleteDebt().MaxPartitionFiles, nil
			}
			waitFor := func(what string, done func() (bool, string)) {
				t.Helper()
				deadline := time.Now().Add(120 * time.Second)
				for {
					ok, why := done()
					if ok {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("after 120 s, %s: %s", what, why)
					}
					time.Sleep(500 * time.Millisecond)
				}
			}
			lww := func(phase string) {
				t.Helper()
				waitFor(phase+": the table is the last-write-wins state", func() (bool, string) { d := state(); return d == "", d })
			}
			in.start("run")
			for phase := range 4 {
				produce(1500)
				lww(fmt.Sprintf("phase %d", phase+1))
			}
			waitFor("no delete file left once the partitions are idle", func() (bool, string) {
				n, err := debt()
				if err != nil {
					return false, err.Error()
				}
				return n == 0, fmt.Sprintf("a partition has %d", n)
			})
			if d := state(); d != "" {
				t.Errorf("after upkeep resolved the deletes the table is not the last-write-wins state: %s", d)
			}
			if tc.point != "" {
				if _, err := os.Stat(marker); err != nil {
					t.Fatalf("failpoint %s did not fire: %v", tc.point, err)
				}
			}
			if got := in.scrape("maintainer").Sum("ingestor_maintainer_deletes_applied_total"); tc.point == "" && got == 0 {
				t.Errorf("ingestor_maintainer_deletes_applied_total = 0: compaction applied no delete")
			}
			t.Logf("%d live keys after %d records (%d updates, %d deletes)", len(s.live), s.seq, s.updates, s.deletes)
			in.stop(t, 60*time.Second)
		})
	}
}
