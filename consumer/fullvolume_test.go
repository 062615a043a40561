package consumer

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/icewal/ingestor/shared/walfile"
)

// TestRecoveryOnAFullVolume is the probe "the WAL volume at 100 %": at
// restart recovery must note each uncommitted segment's object before it
// deletes it, and had no space to: it crash-looped. The reserve file the
// consumer keeps gives the room, and recovery completes.
func TestRecoveryOnAFullVolume(t *testing.T) {
	e := newRecoveryEnv(t, map[int32]int64{1: 5}) // the group exists; partition 0 never committed
	dir := filepath.Join(t.TempDir(), "wal")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN): %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	e.dir = dir
	if _, err := walfile.WALID(dir); err != nil {
		t.Fatal(err)
	}
	uncommitted := e.segmentFile(t, 0, 0, 9)
	if err := walfile.EnsureReserve(dir); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for buf := make([]byte, 64<<10); ; {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	if err := recoverDir(context.Background(), dir, e.ds, e.cl, e.tbl, [16]byte{}, newMetrics(newRegistry()), discardLogger()); err != nil {
		t.Fatalf("recovery on a full volume: %v", err)
	}
	if exists(dir, uncommitted) {
		t.Error("the uncommitted segment was kept")
	}
	if _, err := os.Stat(filepath.Join(dir, walfile.OrphanName(uncommitted.UUID))); err != nil {
		t.Errorf("no orphan note for the deleted segment's object: %v", err)
	}
}
