package consumer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConsumerClosesItsCatalog: when the consumer returns, no connection
// to the SQL catalog's database file stays open in the process.
func TestConsumerClosesItsCatalog(t *testing.T) {
	e := startConsumer(t, nil)
	e.produce(t, 0, 30)
	waitFor(t, "30 records consumed", 20*time.Second, func() bool { return e.consumed() == 30 })
	db := filepath.Join(filepath.Dir(e.cfg.Ingestion.WAL.Dir), "cat.db")
	if openFDs(t, db) == 0 {
		t.Fatal("test set-up: the running consumer holds no catalog connection")
	}
	e.cancel()
	select {
	case err := <-e.done:
		if err != nil {
			t.Fatalf("consumer: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("consumer did not stop")
	}
	e.done <- nil // for the cleanup's wait
	// A query cut short by the stop gives its connection back from
	// database/sql's own goroutine, a moment after the pool was closed: the
	// connection closes then. A leaked pool keeps its descriptors for good.
	deadline := time.Now().Add(5 * time.Second)
	for n := openFDs(t, db); n != 0; n = openFDs(t, db) {
		if time.Now().After(deadline) {
			t.Fatalf("%d file descriptors still open on %s 5 s after the consumer returned", n, db)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openFDs counts this process's descriptors open on path or its
// SQLite journal files.
func openFDs(t *testing.T, path string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to count descriptors: %v", err)
	}
	n := 0
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, path) {
			n++
		}
	}
	return n
}
