package walfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ReserveName is the reserve file the consumer keeps in the WAL directory:
// space set aside so that what drains a full volume (orphan notes in
// recovery, uploaded markers) can still be written. A write that hits
// ENOSPC releases it and tries once more (WithReserve).
const ReserveName = ".reserve"

// ReserveBytes is the reserve's size: room for thousands of notes and
// markers of a few hundred bytes each.
const ReserveBytes = 1 << 20

// EnsureReserve creates the reserve file when it is missing and there is
// room for it. No room is not an error: the reserve is made at a later
// start, once the volume has drained.
func EnsureReserve(dir string) error {
	path := filepath.Join(dir, ReserveName)
	if info, err := os.Stat(path); err == nil && info.Size() >= ReserveBytes {
		return nil
	}
	tmp := filepath.Join(dir, TmpPrefix+"reserve")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return noSpaceIsFine(fmt.Errorf("create reserve: %w", err))
	}
	_, err = f.Write(make([]byte, ReserveBytes)) // written, not sparse: the blocks are taken
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return noSpaceIsFine(fmt.Errorf("write reserve: %w", err))
	}
	return SyncDir(dir)
}

func noSpaceIsFine(err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return nil
	}
	return err
}

// WithReserve runs write; if it fails because the volume is full, it
// releases the reserve file and runs write once more.
func WithReserve(dir string, write func() error) error {
	err := write()
	if !errors.Is(err, syscall.ENOSPC) {
		return err
	}
	if rerr := os.Remove(filepath.Join(dir, ReserveName)); rerr != nil {
		return err // no reserve left to release
	}
	return write()
}
