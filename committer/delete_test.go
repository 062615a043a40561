package committer

import (
	"os/exec"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCommitterCountsDeleteFailures is the probe "the WAL directory made
// immutable": the append succeeds, the local copies cannot be deleted, and
// each failure is counted; once the directory is writable again the next
// pass deletes them without appending twice.
func TestCommitterCountsDeleteFailures(t *testing.T) {
	e := newEnv(t, sqliteCatalog(t.TempDir()))
	wal := e.walDir("wal")
	s := e.writeSegment(wal, "clicks", 0, 0, clickRows(1, 6, 1), true)
	e.commitOffset("clicks", 0, 6)
	if out, err := exec.Command("chattr", "+i", wal).CombinedOutput(); err != nil {
		t.Skipf("cannot make the WAL directory immutable here (chattr +i: %v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", wal).Run() })

	cm := newCommitter(t, e.config(wal))
	runPass(t, cm)
	if got := testutil.ToFloat64(cm.metrics.deleteFailures.WithLabelValues("clicks")); got != 1 {
		t.Errorf("delete failures = %v, want 1", got)
	}
	if got := walNames(t, wal); len(got) != 2 {
		t.Fatalf("WAL holds %v, want the ready file and its marker still there", got)
	}
	if out, err := exec.Command("chattr", "-i", wal).CombinedOutput(); err != nil {
		t.Fatalf("chattr -i: %v: %s", err, out)
	}
	runPass(t, newCommitter(t, e.config(wal)))
	if got := walNames(t, wal); len(got) != 0 {
		t.Fatalf("WAL holds %v after the directory was repaired", got)
	}
	checkSnapshot(t, e.table("clicks"), "clicks", s)
}
