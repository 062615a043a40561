package walfile

import (
	"path/filepath"
	"sync"
	"testing"
)

func TestLedger(t *testing.T) {
	meta := Ledger{}.With("a", 100)
	if got := CommittedFor("a", 100, meta); got != 100 {
		t.Fatalf("a's own commit: %d", got)
	}
	// b takes the partition over, reads 100..199 again, commits 200.
	l, ok := ParseLedger(meta)
	if !ok {
		t.Fatal("not a ledger")
	}
	meta = l.With("b", 200)
	for _, tc := range []struct {
		id   string
		want int64
	}{{"a", 100}, {"b", 200}, {"c", -1}} {
		if got := CommittedFor(tc.id, 200, meta); got != tc.want {
			t.Errorf("CommittedFor(%s) = %d, want %d (meta %q)", tc.id, got, tc.want, meta)
		}
	}
	// Without a ledger, the committed offset counts as it is.
	if got := CommittedFor("a", 42, "member-1"); got != 42 {
		t.Errorf("ledger-less commit: %d", got)
	}
	// The ledger stays bounded and keeps the newest owners.
	l = Ledger{}
	for i := 0; i < 100; i++ {
		l, _ = ParseLedger(l.With(string(rune('A'+i%60))+"x", int64(i)))
	}
	if len(l) != maxLedgerEntries || l[string(rune('A'+99%60))+"x"] != 99 {
		t.Fatalf("ledger of %d entries: %v", len(l), l)
	}
	if len(l.With("z", 1)) > 4096 {
		t.Fatal("ledger over the broker's metadata limit")
	}
}

func TestWALIDIsStableAndShared(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	if _, err := AcquireLock(dir, "consumer"); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := WALID(dir)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("ids differ: %v", ids)
		}
	}
}
