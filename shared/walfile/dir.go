package walfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
)

// File is a WAL file found in the directory.
type File struct {
	Name
	// Path is the full path of the file.
	Path string
	// Size is the file's size in bytes.
	Size int64
}

// List returns the WAL files in dir in a stable order (topic, partition,
// start offset). Half-written tmp_ files, lock files and names this package
// does not know are left out.
func List(dir string) ([]File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list wal dir: %w", err)
	}
	var files []File
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), TmpPrefix) || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		n, err := Parse(e.Name())
		if err != nil {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue // renamed or deleted since ReadDir
		} else if err != nil {
			return nil, fmt.Errorf("stat wal file %s: %w", e.Name(), err)
		}
		files = append(files, File{Name: n, Path: filepath.Join(dir, e.Name()), Size: info.Size()})
	}
	sort.Slice(files, func(i, j int) bool {
		a, b := files[i], files[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		return a.State < b.State
	})
	return files, nil
}

// SyncDir fsyncs a directory so that renames and creations in it survive a
// power loss.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir for sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// WriteAtomic writes data to dir/name through a tmp_ file: write, fsync,
// rename, fsync the directory. A crash leaves either no file or the whole
// file, and at worst a tmp_ file that RemoveTmp deletes once it is old.
func WriteAtomic(dir, name string, data []byte) error {
	if err := writeRenamed(dir, name, data); err != nil {
		return err
	}
	return SyncDir(dir)
}

// writeRenamed writes data to dir/name through a tmp_ file (write, fsync,
// rename) and leaves the directory's fsync to the caller, which may cover
// several renames with one.
func writeRenamed(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, TmpPrefix+uuid.NewString()+"_"+name)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("sync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("close %s: %w", name, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rename %s: %w", name, err)
	}
	return nil
}

// Remove deletes a WAL file; a file already gone is not an error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", filepath.Base(path), err)
	}
	return nil
}

// TmpSafetyAge is the age after which RemoveTmp deletes a tmp_ file. The
// roles restart one at a time and share the directory: a fresh tmp_ file
// may be another role's marker or note half-way through WriteAtomic, which
// takes milliseconds; one older than this was left by a crash.
const TmpSafetyAge = 10 * time.Minute

// RemoveTmp deletes the half-written tmp_ files that a crash left behind:
// those last modified more than TmpSafetyAge ago. Younger ones may be in
// flight in another role and stay.
func RemoveTmp(dir string) error {
	return removeTmpBefore(dir, time.Now().Add(-TmpSafetyAge))
}

func removeTmpBefore(dir string, cutoff time.Time) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list wal dir: %w", err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), TmpPrefix) {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue // renamed into place since ReadDir
		} else if err != nil {
			return fmt.Errorf("stat %s: %w", e.Name(), err)
		}
		if !info.ModTime().Before(cutoff) {
			continue
		}
		if err := Remove(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Marker is the content of an uploaded_ marker: where the segment's object
// and its sidecars are stored.
type Marker struct {
	// Object is the full location of the data file, as recorded in the table.
	Object string `json:"object"`
	// Size is the object's size in bytes.
	Size int64 `json:"size"`
	// Blooms maps a column name to the location of its bloom-filter sidecar.
	Blooms map[string]string `json:"blooms,omitempty"`
}

// WriteMarker records atomically that the ready segment n has been uploaded.
func WriteMarker(dir string, n Name, m Marker) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode marker: %w", err)
	}
	return WriteAtomic(dir, n.As(Uploaded).String(), b)
}

// ReadMarker reads the uploaded_ marker of segment n.
func ReadMarker(dir string, n Name) (Marker, error) {
	var m Marker
	b, err := os.ReadFile(filepath.Join(dir, n.As(Uploaded).String()))
	if err != nil {
		return m, fmt.Errorf("read marker: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("decode marker %s: %w: %w", n.As(Uploaded), ErrBadMarker, err)
	}
	if m.Object == "" {
		return m, fmt.Errorf("decode marker %s: %w: no object", n.As(Uploaded), ErrBadMarker)
	}
	return m, nil
}

// ErrBadMarker is a marker whose content is not a marker (empty, not JSON,
// no object): the ready file is uploaded again, which writes it anew.
var ErrBadMarker = errors.New("bad uploaded marker")

// Lock is an exclusive advisory lock a role holds on the WAL directory
// while it runs. The kernel releases it when the process dies.
type Lock struct{ f *os.File }

func lockPath(dir, role string) string { return filepath.Join(dir, "."+role+".lock") }

// AcquireLock takes role's lock, failing at once if another process holds
// it: two consumers on one WAL directory would corrupt it. It creates the
// directory when it is missing, whichever role starts first.
func AcquireLock(dir, role string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create wal dir: %w", err)
	}
	f, err := os.OpenFile(lockPath(dir, role), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s lock: %w", role, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock wal dir %s for %s: another %s runs on it: %w", dir, role, role, err)
	}
	return &Lock{f: f}, nil
}

// Release drops the lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Held reports whether some process holds role's lock on dir.
func Held(dir, role string) bool {
	f, err := os.OpenFile(lockPath(dir, role), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
