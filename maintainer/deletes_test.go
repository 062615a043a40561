package maintainer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// slowStore is a file IO whose Remove takes a while and records how many
// run at once: a store that serves few requests at a time.
type slowStore struct {
	*icebergio.MemFS
	inFlight, most atomic.Int32
	mu             sync.Mutex
	removed        []string
}

func (s *slowStore) Remove(name string) error {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(2 * time.Millisecond)
	if err := s.MemFS.Remove(name); err != nil {
		return err
	}
	s.mu.Lock()
	s.removed = append(s.removed, name)
	s.mu.Unlock()
	return nil
}

// An expiry's deletes reach the store a few at a time, however many there
// are (iceberg-go's own bulk delete sends 16 at once, and a store that
// serves one at a time then queues the committer's append behind them),
// and every one of them is deleted and counted; a missing object counts
// as deleted.
func TestExpiryDeletesAreBounded(t *testing.T) {
	store := &slowStore{MemFS: icebergio.NewMemFS()}
	var paths []string
	for i := range 60 {
		p := fmt.Sprintf("mem://bucket/t/metadata/snap-%d.avro", i)
		if err := store.WriteFile(p, []byte("x")); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	paths = append(paths, "mem://bucket/t/metadata/gone.avro")
	deleted := prometheus.NewCounter(prometheus.CounterOpts{Name: "deleted"})
	p := &pacedIO{WriteFileIO: store, ctx: context.Background(), deleted: deleted}

	got, err := p.DeleteFiles(context.Background(), paths)
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	if most := store.most.Load(); most > expiryDeleteConcurrency || most < 1 {
		t.Errorf("%d deletes at once at the store, want 1..%d", most, expiryDeleteConcurrency)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(paths))
	if !slices.Equal(got, want) {
		t.Errorf("reported deleted %d of %d paths", len(got), len(want))
	}
	if len(store.removed) != 60 {
		t.Errorf("%d objects removed from the store, want 60", len(store.removed))
	}
	if n := testutil.ToFloat64(deleted); n != float64(len(paths)) {
		t.Errorf("counted %v deletes, want %d", n, len(paths))
	}
}

// Once the commit's context is done (a drain), no more object is deleted,
// neither by the bulk delete nor by iceberg-go's one-by-one fallback; the
// rest are left to the orphan cleanup.
func TestExpiryDeletesStopWithTheContext(t *testing.T) {
	store := &slowStore{MemFS: icebergio.NewMemFS()}
	if err := store.WriteFile("mem://bucket/t/a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := &pacedIO{WriteFileIO: store, ctx: ctx, deleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "deleted"})}
	if got, err := p.DeleteFiles(ctx, []string{"mem://bucket/t/a"}); err == nil || len(got) != 0 {
		t.Errorf("bulk delete after cancel: deleted %v, err %v; want nothing and the context's error", got, err)
	}
	if err := p.Remove("mem://bucket/t/a"); err == nil {
		t.Error("Remove after cancel deleted the object")
	}
	if len(store.removed) != 0 {
		t.Errorf("removed %v after cancel", store.removed)
	}
}
