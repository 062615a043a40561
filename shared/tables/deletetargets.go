package tables

import (
	"context"
	"slices"
	"sync"

	"github.com/apache/iceberg-go"
	"golang.org/x/sync/errgroup"
)

// deleteTargets remembers, for the life of the process, the data files
// each position-delete file names. A delete file is never rewritten in
// place (its name is new for each), so what was read once stays true.
// Without it every compaction hand-off read again every position-delete
// file of the partitions it rewrote: an upsert table writes one per
// partition per commit, and once upkeep fell behind, a hand-off spent
// its whole deadline on those reads and was retried a minute later, for
// ever, while the appends waited behind it.
var deleteTargets = &targetCache{m: map[string][]string{}}

// targetCacheMax bounds deleteTargets: past it the cache starts again
// empty, at the cost of reading the live files once more. A file names
// a few dozen data files at most; this is some tens of MiB.
const targetCacheMax = 100_000

// targetReaders is how many position-delete files prefetchTargets reads
// at once: the reads wait on the store, not the CPU.
const targetReaders = 16

type targetCache struct {
	mu sync.Mutex
	m  map[string][]string
}

func (c *targetCache) get(path string) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[path]
	return t, ok
}

func (c *targetCache) put(path string, t []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= targetCacheMax {
		clear(c.m)
	}
	c.m[path] = t
}

// RememberTargets records that the position-delete file at path names
// the data files targets, for a writer that has just written it: the
// process then never reads the file back to learn them (a compaction
// hand-off applied by the same process looks at every position delete of
// the partitions it rewrites). Memory only: another process, or this one
// after a restart, reads the file once.
func RememberTargets(path string, targets []string) {
	deleteTargets.put(path, slices.Clone(targets))
}

// prefetchTargets reads the targets of the position-delete files of
// parts committed after sequence number after that are not known yet,
// targetReaders at a time, into deleteTargets; the first error is
// returned, and what was read before it stays cached for the next try.
func (tf *TableFiles) prefetchTargets(ctx context.Context, parts map[string]bool, after int64) error {
	var todo []string
	for _, d := range tf.Deletes {
		if d.Seq <= after || d.File.ContentType() != iceberg.EntryContentPosDeletes || !parts[d.Partition] {
			continue
		}
		if _, ok := knownTargets(d.File); !ok {
			todo = append(todo, d.File.FilePath())
		}
	}
	if len(todo) == 0 {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(targetReaders)
	for _, path := range todo {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			t, err := readDeletePaths(tf.fs, path)
			if err != nil {
				return err
			}
			tf.reads.Add(1)
			deleteTargets.put(path, t)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}
