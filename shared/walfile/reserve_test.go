package walfile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/uuid"
)

// mountTmpfs mounts a small tmpfs of size bytes for the test.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN): %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// fill writes a file until the volume is full.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// TestReserveLetsNotesAndMarkersBeWrittenOnAFullVolume is the probe "the
// WAL volume at 100 %": recovery's orphan notes and the uploader's markers
// are written into the space the reserve file held.
func TestReserveLetsNotesAndMarkersBeWrittenOnAFullVolume(t *testing.T) {
	dir := mountTmpfs(t, "4m")
	if err := EnsureReserve(dir); err != nil {
		t.Fatal(err)
	}
	fill(t, dir)
	id := uuid.New()
	o := Orphan{Dataset: "d", Segment: "ready_t_0_0-1_" + id.String() + ".parquet", UUID: id}
	if err := WriteOrphan(dir, o); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("test set-up: the volume is not full: %v", err)
	}
	if err := WithReserve(dir, func() error { return WriteOrphan(dir, o) }); err != nil {
		t.Fatalf("orphan note on a full volume: %v", err)
	}
	n := Name{State: Ready, Topic: "t", Partition: 0, Start: 0, End: 1, UUID: id}
	if err := WithReserve(dir, func() error { return WriteMarker(dir, n, Marker{Object: "abfs://x", Size: 1}) }); err != nil {
		t.Fatalf("marker on a full volume: %v", err)
	}
	if _, err := ReadMarker(dir, n); err != nil {
		t.Fatal(err)
	}
	// No room: EnsureReserve waits for a later start, without an error.
	if err := EnsureReserve(dir); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "filler"))
	if err := EnsureReserve(dir); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(filepath.Join(dir, ReserveName)); err != nil || info.Size() != ReserveBytes {
		t.Fatalf("reserve after the volume drained: %v", err)
	}
}
